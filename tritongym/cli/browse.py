"""`tritongym registry browse`: serve registry.db in Datasette with the canned queries of `core/registry/browse.py`."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.markup import escape

from tritongym.cli.common import RegistryOpt, command, err
from tritongym.core.registry.browse import (
    CANNED_QUERIES,
    DEFAULT_HOST,
    DEFAULT_PORT,
    BrowseUnavailable,
    browse_command,
    database_name,
    require_datasette,
    write_metadata,
)


def registry_browse(
    port: Annotated[int, typer.Option("--port", "-p", help="Port to serve on (0 = any free port).", min=0)] = (
        DEFAULT_PORT
    ),
    host: Annotated[
        str, typer.Option("--host", help="Interface to serve on; 0.0.0.0 lets anyone on the network read it.")
    ] = DEFAULT_HOST,
    open_browser: Annotated[bool, typer.Option("--open/--no-open", help="Open it in a web browser.")] = False,
    registry: RegistryOpt = None,
):
    """Browse registry.db in Datasette (read-only): every table, plus the leaderboard, the hack gallery and a
    problem's history as canned queries.  Needs Datasette: the `browse` extra of tritongym."""
    try:
        require_datasette()  # before anything is opened: without it, only the install hint
    except BrowseUnavailable as exc:
        if os.environ.get("TRITONGYM_RAISE_ERRORS"):
            raise
        # printed here, escaped: `command` would read the hint's [browse] as rich markup and drop it
        err.print(f"[bold red]Error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    from tritongym.core.registry.store import Registry, default_registry_path  # sqlite-utils: not for `--help`

    path = registry if registry is not None else default_registry_path()
    if not path.is_file():
        raise BrowseUnavailable(f"no registry at {path}: evaluate something first, or pass --registry")
    Registry(path).close()  # bring an older registry's schema forward: the canned queries read today's
    try:
        with _signals_unwind(), tempfile.TemporaryDirectory(prefix="tritongym-browse-") as folder:
            argv = browse_command(path, write_metadata(path, folder), host=host, port=port, open_browser=open_browser)
            name = database_name(path)
            if port:
                base = f"http://{host}:{port}/{name}"
                err.print(f"Serving {escape(str(path))} at {base}; canned queries:", highlight=False)
                for query in CANNED_QUERIES:
                    err.print(f"  {base}/{query}", highlight=False)
            err.print("Ctrl-C to stop.", highlight=False)
            code = _serve(argv)
    except _Stopped as stopped:  # Datasette stopped and the folder removed on the way here
        code = 128 + stopped.signum
    raise typer.Exit(code)


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived: unwind, so that Datasette is stopped and the temporary folder removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_unwind():
    """SIGTERM (what `kill`, systemd, a container runtime or a CI runner sends) and SIGHUP (a closed terminal)
    raise `_Stopped` inside the block, once, instead of ending Python at once and skipping every `finally`:
    before, Datasette went on serving, orphaned, and the metadata folder stayed in the temp directory."""
    raised = []

    def stop(signum, frame):
        if not raised:  # a second signal while stopping must not interrupt the clean-up
            raised.append(signum)
            raise _Stopped(signum)

    stoppers = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    in_main = threading.current_thread() is threading.main_thread()  # only the main thread may set handlers
    previous = {s: signal.signal(s, stop) for s in stoppers} if in_main else {}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Stop Datasette (SIGTERM, then SIGKILL after `grace_s`) and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _serve(argv: list[str]) -> int:
    """Run Datasette until it exits (its exit code), stopping it on the way out whatever ended the wait."""
    process = subprocess.Popen(argv)
    try:
        return process.wait()
    except KeyboardInterrupt:  # Datasette got the same Ctrl-C from the terminal and stops on its own
        return 0
    finally:
        _stop(process)


def register(registry_app: typer.Typer) -> None:
    registry_app.command("browse")(command(registry_browse))
