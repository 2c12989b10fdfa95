"""`tritongym registry stats` (and `registry browse`, in browse.py, registered on the same group)."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from tritongym.cli.common import JsonOpt, PlainHelpGroup, RegistryOpt, _emit_json, command, out

registry_app = typer.Typer(help="Inspect registry.db.", no_args_is_help=True, cls=PlainHelpGroup)


def registry_stats(registry: RegistryOpt = None, as_json: JsonOpt = False):
    """Counts of problems, kernels, evaluations (by status and backend), runs and turns."""
    from tritongym import api

    stats = api.registry_stats(registry)
    if as_json:
        _emit_json(stats)
        return
    table = Table(title=escape(str(stats["path"])), show_header=False)
    for key, value in stats.items():
        if key != "path":
            text = ", ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
            table.add_row(key, escape(text))  # device names and problem names are text, brackets included
    out.print(table)


def register(app: typer.Typer) -> None:
    registry_app.command("stats")(command(registry_stats))
    app.add_typer(registry_app, name="registry")
