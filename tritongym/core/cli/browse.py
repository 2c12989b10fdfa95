"""`tritongym registry browse`: serve registry.db in Datasette with the canned queries of `core/registry/browse.py`."""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Annotated

import typer
from rich.markup import escape

from tritongym.core.cli.common import RegistryOpt, command, err
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
    with tempfile.TemporaryDirectory(prefix="tritongym-browse-") as folder:
        argv = browse_command(path, write_metadata(path, folder), host=host, port=port, open_browser=open_browser)
        name = database_name(path)
        if port:
            base = f"http://{host}:{port}/{name}"
            err.print(f"Serving {escape(str(path))} at {base}; canned queries:", highlight=False)
            for query in CANNED_QUERIES:
                err.print(f"  {base}/{query}", highlight=False)
        err.print("Ctrl-C to stop.", highlight=False)
        try:
            code = subprocess.call(argv)
        except KeyboardInterrupt:  # Datasette got the same Ctrl-C and stops on its own
            code = 0
    raise typer.Exit(code)


def register(registry_app: typer.Typer) -> None:
    registry_app.command("browse")(command(registry_browse))
