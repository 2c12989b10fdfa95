"""`tritongym serve`: the evaluation service over HTTP (service/).

FastAPI and uvicorn are imported inside the command, so the rest of the CLI starts without them.  On
SIGINT or SIGTERM it stops accepting, drains (see `--drain`) and exits by that signal, as uvicorn does;
exit 2 on bad options (a non-loopback address without a token, a short token, an unknown backend), 3 when
the backend or the registry cannot be used.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tritongym.cli.common import (
    BackendOpt,
    CompileRefOpt,
    ConfigOpt,
    GpusOpt,
    NoCacheOpt,
    PluginOpt,
    RayOpt,
    RegistryOpt,
    SizeOpt,
    SkipCheckOpt,
    TimeoutOpt,
    TrialsOpt,
    WorkersOpt,
    _gpu_list,
    command,
    with_ray,
)
from tritongym.core.errors import ConfigError


def serve_command(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; anything but loopback needs a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port; 0 picks a free one (printed at start).")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="TRITONGYM_SERVICE_TOKEN",
            show_envvar=True,
            help="Bearer token every request must carry (prefer the environment variable: argv is visible).",
        ),
    ] = None,
    max_queue: Annotated[
        int | None, typer.Option("--max-queue", help="Queued plus running tasks; more gets HTTP 429 [1024].")
    ] = None,
    max_request_mb: Annotated[
        float | None, typer.Option("--max-request-mb", help="Largest request body; more gets HTTP 413 [8].")
    ] = None,
    max_batch: Annotated[int | None, typer.Option("--max-batch", help="Candidates per submission [256].")] = None,
    lanes: Annotated[
        int | None, typer.Option("--lanes", help="Evaluations at once (default: --workers, else CPUs).")
    ] = None,
    drain: Annotated[
        float | None,
        typer.Option("--drain", help="Seconds running tasks may finish at shutdown; the rest resume at restart [60]."),
    ] = None,
    problems: Annotated[
        str | None,
        typer.Option("--problems", help="Problem source whose problems clients may name (default: the suite)."),
    ] = None,
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    timeout: TimeoutOpt = None,
    workers: WorkersOpt = None,
    gpus: GpusOpt = None,
    ray: RayOpt = None,
    skip_check: SkipCheckOpt = None,
    no_cache: NoCacheOpt = False,
    compile_reference: CompileRefOpt = False,
    config: ConfigOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
):
    """Serve evaluations over HTTP: submit candidates, poll or wait for verdicts, query the best kernels.

    Native API under /v1, KernelGYM's POST /evaluate, GET /status/ID and /results/ID, GET /health and a
    Prometheus GET /metrics.  Every accepted task is stored in the registry first, so a restart resumes
    what a stop or a crash left unfinished."""
    from tritongym.core.config import load_config
    from tritongym.service import server

    if registry is not None and str(registry) in ("", ":memory:"):
        raise ConfigError("the service keeps its queue in the registry: give it a file (--registry PATH)")
    settings = server.settings(
        host=host,
        port=port,
        token=token,
        max_queue=max_queue,
        max_request_bytes=None if max_request_mb is None else int(max_request_mb * (1 << 20)),
        max_batch=max_batch,
        lanes=lanes,
        drain_s=drain,
        problems=problems,
    )
    cfg = load_config(
        config,
        backend=backend,
        size=size,
        trials=trials,
        timeout_s=timeout,
        workers=workers,
        gpus=_gpu_list(gpus),
        skip_checks=skip_check or None,
        use_cache=False if no_cache else None,
        compile_reference=True if compile_reference else None,
    )
    cfg = with_ray(cfg, ray)

    def listening(url: str) -> None:
        sys.stdout.write(f"tritongym serve: listening on {url}\n")
        sys.stdout.flush()

    server.serve(settings, cfg, registry, plugin or (), on_listening=listening)


def register(app: typer.Typer) -> None:
    app.command("serve")(command(serve_command))
