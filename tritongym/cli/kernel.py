"""`tritongym kernel ID`: where a stored kernel came from."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tritongym.cli.common import JsonOpt, RegistryOpt, _emit_json, command, emit_record, err, fmt, out


def kernel_command(
    kernel_id: Annotated[str, typer.Argument(help="Kernel id, or a unique prefix of one (tables show 8-12 chars).")],
    code: Annotated[bool, typer.Option("--code", help="Print only the kernel's source.")] = False,
    registry: RegistryOpt = None,
    as_json: JsonOpt = False,
):
    """Show where a kernel came from: its source, every evaluation of it and every run turn that produced it."""
    from tritongym import api

    history = api.kernel_history(kernel_id, registry)
    if history is None:
        if as_json:
            _emit_json({"error": f"no kernel '{kernel_id}' stored in the registry", "exit_code": 1})
        else:
            err.print(f"No kernel '{escape(kernel_id)}' stored in the registry.")
        raise typer.Exit(1)
    if emit_record(history, as_json, code):
        return
    out.print(
        f"[bold]kernel {history.kernel_id}[/], first stored {history.created_at}"
        + (f" from {escape(history.origin)}" if history.origin else "")
    )
    table = Table(title=f"{len(history.evaluations)} evaluation(s)")
    for col in ("eval", "problem", "backend", "device", "size", "precision", "status", "ms", "speedup", "when"):
        table.add_column(col, overflow="fold")
    for e in history.evaluations:
        style = "green" if e.status == "ok" and e.correct and not e.hacked else "red"
        table.add_row(
            str(e.evaluation_id),
            escape(e.problem),
            e.backend,
            escape(e.device),
            e.size,
            e.precision or "?",
            f"[{style}]{e.status}[/]",
            fmt(e.runtime_ms, ".4g"),
            fmt(e.speedup),
            e.created_at,
        )
    out.print(table)
    if history.turns:
        table = Table(title=f"produced by {len(history.turns)} turn(s)")
        for col in ("run", "kind", "name", "problem", "step", "sample", "turn", "eval", "status", "reward", "when"):
            table.add_column(col, overflow="fold")
        for t in history.turns:
            table.add_row(
                str(t.run_id),
                t.run_kind or "",
                escape(t.run_name or ""),
                escape(t.problem or ""),
                fmt(t.step, "d"),
                fmt(t.sample, "d"),
                fmt(t.turn, "d"),
                fmt(t.evaluation_id, "d"),
                t.status or "",
                fmt(t.reward),
                t.created_at,
            )
        out.print(table)
    else:
        out.print("No run turn produced it (evaluated directly, e.g. with `tritongym eval`).")
    out.print("Use --code to print its source.")


def register(app: typer.Typer) -> None:
    app.command("kernel")(command(kernel_command))
