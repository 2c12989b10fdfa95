"""`tritongym plugins`: every registered plugin of every kind, with its options."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tritongym.cli.common import JsonOpt, PluginOpt, _emit_json, command, out
from tritongym.core.errors import ConfigError


def plugins_command(
    plugin: PluginOpt = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="Only this kind: backend, check, probe, reward, estimator, sample_filter, engine, search_strategy.",
        ),
    ] = None,
    as_json: JsonOpt = False,
):
    """List every registered backend, check, reward, estimator, sample filter, engine and search strategy,
    with options."""
    from tritongym import api
    from tritongym.core.interfaces import KINDS

    registered = api.plugins(plugin or ())
    kinds = sorted({r.kind for r in registered} | set(KINDS))
    if kind is not None:
        if kind not in kinds:
            raise ConfigError(f"unknown kind '{kind}' (valid choices: {', '.join(kinds)})")
        registered = [r for r in registered if r.kind == kind]
    if as_json:
        _emit_json(
            [
                {"kind": r.kind, "name": r.name, "plugin": r.plugin, "doc": r.doc, "options": r.options}
                for r in registered
            ]
        )
        return
    table = Table()
    for col in ("kind", "name", "plugin", "doc", "options"):
        table.add_column(col, overflow="fold")
    for r in registered:
        options = ", ".join(f"{o['name']}={'(required)' if o['required'] else o['default']!r}" for o in r.options)
        table.add_row(r.kind, r.name, r.plugin, escape(r.doc), escape(options))
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("plugins")(command(plugins_command))
