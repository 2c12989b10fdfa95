"""`tritongym tune`: sweep the launch configurations of stored kernels, every variant judged and recorded.

Exit 0 when every problem was tuned, 1 when a problem's kernel was not ok or had nothing to tune (or the
registry holds no kernel for it), 2 on bad input, 3 when the backend or registry is unavailable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tritongym.cli.common import (
    BackendOpt,
    ConfigOpt,
    GpusOpt,
    JsonOpt,
    PluginOpt,
    RayOpt,
    RegistryOpt,
    SizeOpt,
    SkipCheckOpt,
    TimeoutOpt,
    TrialsOpt,
    WorkersOpt,
    _emit_json,
    _gpu_list,
    command,
    err,
    out,
    parse_assignments,
    with_ray,
)


def _changes(config: dict, written: dict) -> str:
    """A configuration as what it changes from the kernel as written (`BLOCK=512 num_warps=8`)."""
    changed = {k: v for k, v in config.items() if written.get(k) != v}
    return " ".join(f"{k}={v}" for k, v in changed.items()) or "(as written)"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _print_problem(p) -> None:
    style = "green" if p.status == "tuned" else "red"
    out.print(
        f"[bold]{escape(p.problem)}[/]: [{style}]{p.status}[/] kernel {p.source_kernel_id} ({escape(p.source_origin)}) "
        + escape(f"[{p.backend} on {p.device_class}, size {p.size}, strategy {p.strategy}]"),
        highlight=False,
    )
    for param in p.params:
        values = ", ".join(map(str, param.values))
        out.print(f"  {escape(param.name)} in {{{values}}}: {escape(param.where)}", highlight=False)
    for reason in p.fixed:
        out.print(f"  [dim]not tuned: {escape(reason)}[/]", highlight=False)
    if p.transferred_from:
        out.print(f"  tried first: the best configurations tuned on {escape(p.transferred_from)}", highlight=False)
    if not p.records or p.status != "tuned":
        out.print(f"  {escape(p.message)}", highlight=False)
    if not p.records:
        return
    written = p.records[0].config
    timed = p.timed
    table = Table(show_edge=False, pad_edge=False)
    for col in ["#", "change", "by", "status"] + (["ms", "iqr"] if timed else []) + ["kernel", "cached"]:
        table.add_column(col, overflow="fold")
    for i, r in enumerate(p.records):
        mark = " *" if r.kernel_id == p.best_kernel_id and r.ok else ""
        table.add_row(
            str(i),
            escape(_changes(r.config, written)) + mark,
            r.strategy,
            f"[{'green' if r.ok else 'red'}]{r.status}[/]",
            *([_ms(r.runtime_ms), _ms(r.runtime_iqr_ms)] if timed else []),
            r.kernel_id[:12],
            "yes" if r.cached else "",
        )
    out.print(table)
    for r in p.records:
        if not r.ok and r.message:
            out.print(f"  [red]{escape(_changes(r.config, written))}[/]: {escape(r.message)}", highlight=False)
    out.print(f"  {escape(p.message)}", highlight=False)
    if p.status == "tuned":
        if p.speedup is not None:
            out.print(
                f"  best runtime {_ms(p.best_runtime_ms)} ms vs {_ms(p.source_runtime_ms)} ms as written: "
                f"speedup {p.speedup:.3g}",
                highlight=False,
            )
        if p.note:
            out.print(f"  [yellow]{escape(p.note)}[/]", highlight=False)
    stopped = {"budget": "the budget", "time_budget": "the time budget", "exhausted": "the strategy (no more)"}
    out.print(
        f"  verdicts: {p.evaluated} reached now, {p.cached} answered by the registry"
        + (f"; stopped by {stopped[p.stopped_by]}" if p.stopped_by else "")
        + f"; {p.wall_s:.1f} s",
        highlight=False,
    )


def tune_command(
    problems: Annotated[
        list[str] | None,
        typer.Argument(
            help="Problem(s) as eval --problem takes them: tune the registry's best honest kernel of each (none: all)."
        ),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", help="Tune this kernel file instead of the registry's best (with --problem)."),
    ] = None,
    problem: Annotated[
        str | None, typer.Option("--problem", "-p", help="The problem of --file: suite name, .py file or SOURCE#NAME.")
    ] = None,
    budget: Annotated[
        int, typer.Option("--budget", "-n", min=0, help="Variants to measure per problem, the kernel as written aside.")
    ] = 16,
    time_budget: Annotated[
        float | None,
        typer.Option(
            "--time-budget",
            help="Seconds for the whole command: batches are cut to what fits at the measured pace, none starts after.",
        ),
    ] = None,
    strategy: Annotated[
        str, typer.Option("--strategy", "-s", help="Search strategy (`tritongym plugins --kind search_strategy`).")
    ] = "exhaustive",
    strategy_option: Annotated[
        list[str] | None,
        typer.Option("--strategy-option", help="An option of the strategy, key=value (TOML value; repeatable)."),
    ] = None,
    transfer: Annotated[
        int,
        typer.Option(
            "--transfer",
            min=0,
            help="Best configurations of the nearest earlier tuning (other device or size) to try first.",
        ),
    ] = 2,
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    timeout: TimeoutOpt = None,
    workers: WorkersOpt = None,
    gpus: GpusOpt = None,
    ray: RayOpt = None,
    skip_check: SkipCheckOpt = None,
    config: ConfigOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Tune launch configurations (tl.constexpr block sizes, num_warps, num_stages, @triton.autotune configs) of
    each PROBLEM's best stored kernel: every variant is judged like any candidate and recorded in the registry,
    so tuning again costs nothing. On triton-cpu nothing is timed: variants are checked, not ranked by speed."""
    from tritongym import api
    from tritongym.core.config import load_config

    cfg = load_config(
        config,
        backend=backend,
        size=size,
        trials=trials,
        timeout_s=timeout,
        workers=workers,
        gpus=_gpu_list(gpus),
        skip_checks=skip_check or None,
    )
    cfg = with_ray(cfg, ray)
    options = parse_assignments(strategy_option, "--strategy-option", "seed=3")
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=as_json or not err.is_terminal and not os.environ.get("TRITONGYM_PROGRESS"),
    )
    with progress:
        task = progress.add_task("tuning", total=None)

        def planned(name: str, count: int) -> None:
            progress.update(task, total=(progress.tasks[0].total or 0) + count, description=name)

        def measured(name: str, record) -> None:
            detail = " ".join(f"{k}={v}" for k, v in record.config.items())
            progress.update(task, advance=1, description=f"{name} {detail} {record.status}")

        summary = api.tune(
            problems or None,
            file=file,
            problem=problem,
            strategy=strategy,
            strategy_options=options,
            budget=budget,
            time_budget=time_budget,
            transfer=transfer,
            config=cfg,
            registry=registry,
            extra_plugins=plugin or (),
            on_plan=planned,
            on_record=measured,
        )
        progress.update(task, total=progress.tasks[0].completed)
    if as_json:
        _emit_json(summary.model_dump(mode="json"))
    else:
        for p in summary.problems:
            _print_problem(p)
        tuned = sum(p.status == "tuned" for p in summary.problems)
        out.print(
            f"{tuned}/{len(summary.problems)} problem(s) tuned in {summary.wall_s:.1f} s; records in "
            f"{escape(summary.registry)} (table tuning_records); `tritongym best PROBLEM` shows the best kernel.",
            highlight=False,
        )
    raise typer.Exit(0 if summary.ok else 1)


def register(app: typer.Typer) -> None:
    app.command("tune")(command(tune_command))
