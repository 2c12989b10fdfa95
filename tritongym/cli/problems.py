"""`tritongym problems list|show|check`: the problems of a source, one problem's source, the negative-control
screen."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tritongym.cli.common import (
    BackendOpt,
    ConfigOpt,
    JsonOpt,
    PlainHelpGroup,
    PluginOpt,
    ProblemsOpt,
    SizeOpt,
    TrialsOpt,
    WorkersOpt,
    _emit_json,
    command,
    eval_config,
    one_spelling,
    out,
)

problems_app = typer.Typer(help="List, show and screen problems.", no_args_is_help=True, cls=PlainHelpGroup)


def problems_list(
    problems: ProblemsOpt = None,
    source: Annotated[str | None, typer.Option("--source", hidden=True, help="Old spelling of --problems.")] = None,
    size: Annotated[str, typer.Option("--size", help="Size preset to show.")] = "cpu",
    as_json: JsonOpt = False,
):
    """List problems with their category and sizes."""
    from tritongym.core.problems import load_problems

    problems = load_problems(one_spelling(problems, "--problems", source, "--source"), size)
    if as_json:
        _emit_json(
            [
                {
                    "name": p.name,
                    "category": p.category,
                    "description": p.description,
                    "sizes": p.sizes,
                    "has_solution": p.solution is not None,
                    "origin": p.origin,
                }
                for p in problems
            ]
        )
        return
    table = Table(title=f"{len(problems)} problems ({size} sizes)")
    for col in ("name", "category", "sizes", "description"):
        table.add_column(col, overflow="fold")
    for p in problems:
        sizes = ", ".join(f"{k}={v}" for k, v in p.sizes.items())
        table.add_row(escape(p.name), escape(p.category or ""), escape(sizes), escape(p.description))  # [b, s, e]
    out.print(table)


def problems_show(
    problem: Annotated[str, typer.Argument(help="Suite name, .py file, or SOURCE#NAME.")],
    size: Annotated[str, typer.Option("--size", help="Size preset.")] = "cpu",
    solution: Annotated[bool, typer.Option("--solution", help="Show our Triton solution instead.")] = False,
    as_json: JsonOpt = False,
):
    """Print a problem's reference source (or its shipped solution)."""
    from tritongym.core.errors import ProblemNotFound
    from tritongym.core.problems import load_problem

    p = load_problem(problem, size)
    if solution and p.solution is None:
        raise ProblemNotFound(f"problem '{p.name}' ships no solution")
    if as_json:
        _emit_json(p.model_dump(mode="json") | {"key": p.key})
        return
    sys.stdout.write((p.solution if solution else p.source).rstrip("\n") + "\n")


def problems_check(
    source: Annotated[
        str | None, typer.Argument(hidden=True, help="Old spelling of --problems (a positional SOURCE).")
    ] = None,
    problems: ProblemsOpt = None,
    only: Annotated[list[str] | None, typer.Option("--only", help="Check only this problem (repeatable).")] = None,
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    workers: WorkersOpt = None,
    config: ConfigOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Screen problems with negative controls (zeros, another seed's output, identity); exit 1 if any passes, or if
    a reference draws random numbers whatever its mode (one random only in train() mode is judged in eval() mode)."""
    from tritongym import api

    cfg = eval_config(config, backend=backend, size=size, trials=trials, workers=workers)
    source = one_spelling(problems, "--problems", source, "the positional SOURCE")
    results = api.check_problems(source, only or (), cfg, plugin or ())
    bad = [r for r in results if not r.ok]
    if as_json:
        _emit_json({"ok": not bad, "results": [r.model_dump(mode="json") for r in results]})
    else:
        table = Table(title=f"{len(results) - len(bad)}/{len(results)} problems pass the screen")
        for col in ("problem", "verdict", "controls"):
            table.add_column(col, overflow="fold")
        for r in results:
            verdict = "[green]ok[/]" if r.ok else ("[red]degenerate[/]" if r.degenerate else "[red]broken[/]")
            verdict = "[red]random[/]" if r.refusal() else verdict
            detail = (
                r.error
                or r.refusal()
                or "; ".join(v if k in r.passing_controls else f"{k} fails" for k, v in r.controls.items())
            )
            if r.stochastic == "train_mode":
                detail = f"random in train() mode only, judged in eval() mode ({r.stochastic_note}); {detail}"
            table.add_row(escape(r.problem_id), verdict, escape(detail))
        out.print(table)
    raise typer.Exit(1 if bad else 0)


def register(app: typer.Typer) -> None:
    problems_app.command("list")(command(problems_list))
    problems_app.command("show")(command(problems_show))
    problems_app.command("check")(command(problems_check))
    app.add_typer(problems_app, name="problems")
