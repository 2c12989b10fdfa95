"""`tritongym serve`: settings, the exposure rule, and running the service under uvicorn.

The exposure rule: the service runs whatever code it is sent (in its sandbox, but still), so it refuses to
listen anywhere but on a loopback address unless a bearer token is set.  With a token it is required on
every request, loopback or not.

Shutdown (`DrainingServer`): at the first SIGTERM or SIGINT the service stops taking tasks but keeps
answering (submissions get 503, `/health` says `stopping` with 503, results and status still come), while
the running tasks finish for up to `--drain` seconds; then uvicorn closes.  A second signal closes at once.
If the drain ran out, the sandboxes of the tasks left running are killed as the process exits
(`sandboxes.abandon`), and those tasks run again at the next start.

A warm pool (`api/warm_pool.py`): listening on loopback, the service announces itself to this user's
`tritongym eval` once its lanes are up (a file with its URL, process and the terms it judges under), so an eval
that would judge the same way hands its candidate over instead of starting workers; the file goes at the first
stop signal, before the drain, and again on the way out.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tritongym import api
from tritongym.api import warm_pool
from tritongym.core.config import EvalConfig, validation_message
from tritongym.core.errors import ConfigError, ServiceError
from tritongym.core.problems import load_problems
from tritongym.core.registry.store import default_registry_path
from tritongym.service import sandboxes
from tritongym.service.service import EvaluationService

TOKEN_ENV = "TRITONGYM_SERVICE_TOKEN"
MIN_TOKEN_CHARS = 16


class ServeSettings(BaseModel):
    """How the service listens and how much it takes on (the evaluation itself is an `EvalConfig`)."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", description="address to listen on; non-loopback needs a token")
    port: int = Field(default=8000, ge=0, le=65535, description="0: any free port (printed at start)")
    token: str | None = Field(default=None, description=f"bearer token clients must send (also ${TOKEN_ENV})")
    max_queue: int = Field(default=1024, ge=1, description="queued plus running tasks; beyond it HTTP 429")
    max_request_bytes: int = Field(default=8 << 20, ge=1024, description="larger request bodies get HTTP 413")
    max_batch: int = Field(default=256, ge=1, description="candidates in one submission")
    lanes: int = Field(default=0, ge=0, description="evaluations at once; 0 = the evaluator's workers (CPUs)")
    drain_s: float = Field(default=60.0, ge=0, description="at shutdown, how long running tasks may finish")
    max_attempts: int = Field(default=3, ge=1, description="starts of a task the service died under, at most")
    problems: str | None = Field(default=None, description="problem source the named problems come from (suite)")


def settings(**values) -> ServeSettings:
    """`ServeSettings` from keyword values (None = default), with validation errors as a `ConfigError`."""
    try:
        return ServeSettings.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, "serve options")) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_exposure(serve: ServeSettings) -> None:
    """Refuse a non-loopback address without a token, and a token too short to be one."""
    if serve.token is not None and len(serve.token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the service token is {len(serve.token)} characters; use at least {MIN_TOKEN_CHARS}, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if serve.token is None and not is_loopback(serve.host):
        raise ConfigError(
            f"refusing to serve on {serve.host} without a token: anyone who can reach that address could make "
            f"this machine run code. Set {TOKEN_ENV} (or pass --token), or listen on 127.0.0.1 and reach it "
            "through an SSH tunnel"
        )


def build_service(
    serve: ServeSettings,
    config: EvalConfig,
    registry: str | Path | None = None,
    extra_plugins: Sequence[str] = (),
) -> EvaluationService:
    """The evaluator (plugins, backend and checks validated now, before anything listens) and the service."""
    path = Path(registry) if registry is not None else default_registry_path()
    evaluator = api.make_evaluator(config, False, extra_plugins)  # the lanes get their own connections
    problems = {}
    for problem in load_problems(serve.problems, evaluator.size):
        if problem.name in problems:
            raise ConfigError(f"two problems named '{problem.name}' in {serve.problems}: names must be unique")
        problems[problem.name] = problem
    lanes = serve.lanes or config.workers or os.cpu_count() or 1
    return EvaluationService(
        evaluator, path, problems, lanes=lanes, capacity=serve.max_queue, max_attempts=serve.max_attempts
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: the system picks one); an address in use is a `ConfigError`."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    serve: ServeSettings,
    config: EvalConfig,
    registry: str | Path | None = None,
    extra_plugins: Sequence[str] = (),
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Run the service until SIGINT or SIGTERM, then drain (see `EvaluationService.stop`)."""
    check_exposure(serve)
    try:
        import uvicorn

        from tritongym.service.app import create_app
    except ImportError as exc:
        raise ServiceError(
            f"tritongym serve needs FastAPI and uvicorn ({exc}): pip install 'tritongym[serve]'"
        ) from None

    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    service = build_service(serve, config, registry, extra_plugins)
    app = create_app(
        service,
        token=serve.token,
        max_request_bytes=serve.max_request_bytes,
        max_batch=serve.max_batch,
        drain_s=serve.drain_s,
    )
    sock = listen(serve.host, serve.port)
    url = url_of(sock)
    if on_listening is not None:
        on_listening(url)  # connections made from now on wait in the backlog until the lanes are up
    announce = None
    if is_loopback(serve.host):
        gpus, registry_path = config.gpus, service.registry_path

        def announce() -> Path | None:
            return warm_pool.announce(url, service.evaluator, registry_path, gpus, serve.token, extra_plugins)

    server = draining_server(
        uvicorn.Config(app, lifespan="on", timeout_graceful_shutdown=5, log_level="info"),
        service,
        serve.drain_s,
        announce,
    )
    try:
        server.run(sockets=[sock])
    finally:
        server.withdraw()


def draining_server(
    config, service: EvaluationService, drain_s: float, announce: Callable[[], Path | None] | None = None
):
    """A uvicorn server that drains the service before it stops listening, and announces it as a warm pool once its
    lanes are up (`announce`) until it begins to stop (see the module's doc)."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        _drain: threading.Thread | None = None
        _announced: Path | None = None

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=sockets)  # the lifespan (the lanes) first, then the listening sockets
            if announce is not None and self.started and not self.should_exit:
                self._announced = announce()
                if self._announced is not None:
                    logging.getLogger("tritongym.service").info("announced as a warm pool in %s", self._announced)

        def withdraw(self) -> None:
            warm_pool.withdraw(self._announced)
            self._announced = None

        def handle_exit(self, sig, frame) -> None:
            self.withdraw()  # no new `eval` hands a candidate to a service that is stopping
            if self._drain is None and not self.should_exit:  # the first signal: drain while still answering
                self._captured_signals.append(sig)  # uvicorn re-raises it once closed: the exit status
                self._drain = threading.Thread(target=self._drain_then_exit, name="tritongym-drain", daemon=True)
                self._drain.start()
                return
            super().handle_exit(sig, frame)  # a second one: uvicorn's own shutdown, now

        def _drain_then_exit(self) -> None:
            logging.getLogger("tritongym.service").info(
                "draining: no new task; running tasks may finish for %g s", drain_s
            )
            service.begin_stop()
            service.stop(drain_s)
            self.should_exit = True

        @contextlib.contextmanager
        def capture_signals(self):
            with super().capture_signals():
                try:
                    yield
                finally:
                    if service.lanes_alive():  # the drain ran out (or was cut short) under running tasks
                        sandboxes.abandon(self._captured_signals[-1] if self._captured_signals else None)

    return DrainingServer(config)
