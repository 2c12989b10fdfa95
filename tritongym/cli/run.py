"""`tritongym run`: many candidates (a directory of them, or the suite's own solutions) judged in parallel
sandboxes, recorded as one run."""

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
    CompileRefOpt,
    ConfigOpt,
    GpusOpt,
    JsonOpt,
    NoCacheOpt,
    PluginOpt,
    ProblemsOpt,
    RayOpt,
    RegistryOpt,
    ShapesOpt,
    SizeOpt,
    SkipCheckOpt,
    TimeoutOpt,
    TrialsOpt,
    WorkersOpt,
    _emit_json,
    _gpu_list,
    command,
    err,
    eval_config,
    fmt,
    out,
    say_not_stored,
    status_markup,
    stored_fields,
    with_ray,
)
from tritongym.core.errors import RegistryNotStored


def run_command(
    problems: ProblemsOpt = None,
    only: Annotated[list[str] | None, typer.Option("--only", help="Evaluate only this problem (repeatable).")] = None,
    candidates: Annotated[
        Path | None,
        typer.Option("--candidates", help="Directory of <problem>.py candidates (default: the suite's own solutions)."),
    ] = None,
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    timeout: TimeoutOpt = None,
    workers: WorkersOpt = None,
    gpus: GpusOpt = None,
    skip_check: SkipCheckOpt = None,
    no_cache: NoCacheOpt = False,
    compile_reference: CompileRefOpt = False,
    shapes: ShapesOpt = None,
    ray: RayOpt = None,
    config: ConfigOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Evaluate many candidates in parallel sandboxes and print a results table."""
    from tritongym import api

    cfg = eval_config(
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
        shapes=shapes,
    )
    cfg = with_ray(cfg, ray)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=as_json or not err.is_terminal and not os.environ.get("TRITONGYM_PROGRESS"),
    )
    run_ids: list[int] = []
    with progress:
        task = progress.add_task("evaluating", total=None)
        try:
            results, unstored = (
                api.run(
                    problems,
                    candidates,
                    only or (),
                    cfg,
                    registry,
                    plugin or (),
                    on_result=lambda r: progress.update(task, advance=1, description=f"{r.problem_id}"),
                    on_plan=lambda n: progress.update(task, total=n),
                    on_run=run_ids.append,
                ),
                None,
            )
        except RegistryNotStored as exc:  # the verdicts stand; only their rows are missing
            results, unstored = exc.results, exc
    n_ok = sum(r.status == "ok" for r in results)
    if as_json:
        _emit_json(
            {
                "run_id": run_ids[0] if run_ids else None,
                "ok": n_ok,
                "total": len(results),
                "results": [r.model_dump(mode="json") for r in results],
                **stored_fields(unstored),
            }
        )
    else:
        timed = any(r.runtime_ms is not None for r in results)
        compiled = any(r.compile_speedup is not None for r in results)
        table = Table(title=f"{n_ok}/{len(results)} ok")
        columns = ["problem", "status", "kernel", "max err"] + (["ms", "speedup", "PR"] if timed else [])
        columns += ["vs compile"] if compiled else []
        for col in columns + ["reward", "cached", "message"]:
            table.add_column(col, overflow="fold")
        for r in sorted(results, key=lambda r: r.problem_id):
            timing = [fmt(r.runtime_ms), fmt(r.speedup), fmt(r.pr)] if timed else []
            timing += [fmt(r.compile_speedup)] if compiled else []
            table.add_row(
                escape(r.problem_id),
                status_markup(r),
                r.kernel_id[:8],
                fmt(r.max_abs_err, ".2g"),
                *timing,
                f"{r.reward.total:.3g}",
                "yes" if r.cached else "",
                escape(r.message) if r.status != "ok" else "",
            )
        out.print(table)
        if run_ids:
            out.print(f"run id {run_ids[0]}: `tritongym report {run_ids[0]}`, `tritongym best --run {run_ids[0]}`")
        say_not_stored(unstored)
    raise typer.Exit(unstored.exit_code if unstored else 0 if n_ok == len(results) else 1)


def register(app: typer.Typer) -> None:
    app.command("run")(command(run_command))
