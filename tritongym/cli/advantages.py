"""`tritongym advantages`: what a training step would learn from a batch of turns."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tritongym.cli.common import ConfigOpt, JsonOpt, PluginOpt, _emit_json, command, out


def advantages_command(
    turns: Annotated[Path, typer.Argument(help="JSONL of turns, one TurnRow object per line.")],
    config: ConfigOpt = None,
    estimator: Annotated[str | None, typer.Option("--estimator", "-e", help="Advantage estimator.")] = None,
    filters: Annotated[
        list[str] | None, typer.Option("--filter", "-f", help="Sample filter, default options (repeatable).")
    ] = None,
    step: Annotated[int, typer.Option("--step", help="Training step: the filters draw from seed + step.")] = 0,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the filters' generator.")] = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Show what a training step would learn from a batch of turns: advantage and keep flag per turn."""
    from tritongym import api

    overrides: dict = {"estimator": estimator, "seed": seed}
    if filters:
        overrides["filters"] = {name: {} for name in filters}
    from tritongym.core.learn.learning import load_learning_config

    learning = load_learning_config(config, **overrides)
    report = api.advantages(turns, learning, step=step, extra_plugins=plugin or ())
    if as_json:
        _emit_json(report.model_dump())
        return
    filters_text = ", ".join(report.filters) or "none"
    table = Table(title=f"estimator {report.estimator}, filters {filters_text}")
    for col in ("group", "trajectory", "turn", "reward", "advantage", "kept", "tokens kept"):
        table.add_column(col, justify="right")
    for r in report.rows:
        table.add_row(
            str(r.group),
            str(r.trajectory),
            str(r.turn),
            f"{r.reward:.4g}",
            f"{r.advantage:+.4g}",
            "yes" if r.kept else "[magenta]no[/]",
            f"{r.kept_tokens}/{r.policy_tokens}",
        )
    out.print(table)
    out.print(", ".join(f"{k} {v:.4g}" for k, v in sorted(report.metrics.items())), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("advantages")(command(advantages_command))
