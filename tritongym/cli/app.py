"""The `tritongym` command line: a thin typer layer over `tritongym.api`.

Exit codes: 0 success; 1 the work ran but found a failure (a candidate not `ok`, a degenerate problem, no
kernel stored); 2 bad input (unknown problem, bad config, broken plugin); 3 the environment cannot do it
(backend unavailable, registry unreadable).  With `--json`, stdout is valid JSON even on failure
(`{"error": ..., "exit_code": ...}`).  Set TRITONGYM_RAISE_ERRORS=1 to get tracebacks instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tritongym.cli import browse as cli_browse
from tritongym.cli import service_client as cli_service_client
from tritongym.cli import report as cli_report
from tritongym.cli import serve as cli_serve
from tritongym.cli import train as cli_train
from tritongym.cli import tune as cli_tune
from tritongym.cli.common import (
    BackendOpt,
    CompileRefOpt,
    ConfigOpt,
    GpusOpt,
    JsonOpt,
    NoCacheOpt,
    PlainHelpGroup,
    PluginOpt,
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
    out,
    with_ray,
)
from tritongym.core.errors import ConfigError, RegistryNotStored

if TYPE_CHECKING:  # the API, the evaluator and the registry load in the commands that use them: `--help` is fast
    from tritongym.core.models import EvaluationResult

app = typer.Typer(
    help="A gym for LLMs that write fast, honest Triton kernels.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    cls=PlainHelpGroup,
)
problems_app = typer.Typer(help="List, show and screen problems.", no_args_is_help=True, cls=PlainHelpGroup)
registry_app = typer.Typer(help="Inspect registry.db.", no_args_is_help=True, cls=PlainHelpGroup)
app.add_typer(problems_app, name="problems")
app.add_typer(registry_app, name="registry")
cli_train.register(app)  # rollouts, train, sft: the commands that load a model
cli_report.register(app)  # report: Fast@p of a stored run
cli_tune.register(app)  # tune: launch configurations of stored kernels
cli_browse.register(registry_app)  # registry browse: registry.db in Datasette
cli_serve.register(app)  # serve: the evaluation service over HTTP
cli_service_client.register(app)  # client: talk to a running service


def _config(config, **overrides):
    from tritongym.core.config import load_config

    return load_config(config, **overrides)


STATUS_STYLE = {"ok": "green", "incorrect": "yellow", "hacked": "magenta", "rejected": "magenta"}


def _status(result: EvaluationResult) -> str:
    return f"[{STATUS_STYLE.get(result.status.value, 'red')}]{result.status.value}[/]"


def _fmt(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def _print_result(result: EvaluationResult) -> None:
    out.print(
        f"{_status(result)}  {escape(result.problem_id)}  kernel {result.kernel_id}  "
        + escape(f"[{result.backend} on {result.device}]")
        + ("  (cached)" if result.cached else "")
    )
    out.print(result.message, highlight=False, soft_wrap=True, markup=False)
    if result.runtime_ms is not None:
        out.print(
            f"runtime {result.runtime_ms:.4g} ms, reference {_fmt(result.ref_runtime_ms, '.4g')} ms, "
            f"speedup {_fmt(result.speedup)}, PR {_fmt(result.pr)}"
            + (
                f"; torch.compile reference {_fmt(result.compile_ref_runtime_ms, '.4g')} ms, "
                f"speedup {_fmt(result.compile_speedup)}"
                if result.compile_ref_runtime_ms is not None
                else ""
            )
        )
    for choice in result.autotune:
        out.print(f"autotune: {choice.describe()}", highlight=False, markup=False)
    out.print(f"reward {result.reward.describe()}", highlight=False, markup=False)
    if result.error and result.error.traceback and result.status != "timeout":
        err.print(result.error.traceback.rstrip(), highlight=False, markup=False)


@app.command("eval")
@command
def eval_command(
    candidate: Annotated[Path, typer.Argument(help="Python file defining ModelNew with Triton kernels.")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="Suite name, .py file, or SOURCE#NAME.")],
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    timeout: TimeoutOpt = None,
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
    """Evaluate one candidate kernel against one problem; exit 0 only if it is ok."""
    from tritongym import api

    cfg = _config(
        config,
        backend=backend,
        size=size,
        trials=trials,
        timeout_s=timeout,
        gpus=_gpu_list(gpus),
        skip_checks=skip_check or None,
        use_cache=False if no_cache else None,
        compile_reference=True if compile_reference else None,
        shapes=shapes,
    )
    cfg = with_ray(cfg, ray)
    try:
        result, unstored = api.evaluate(candidate, problem, cfg, registry, plugin or ()), None
    except RegistryNotStored as exc:  # the verdict stands; only its row is missing
        result, unstored = exc.results[0], exc
    if as_json:
        stored = _stored(unstored) if not result.unjudged else {"stored": False}
        _emit_json({**result.model_dump(mode="json"), **stored})
    else:
        _print_result(result)
        _say_not_stored(unstored)
    # an unjudged verdict (a check could not run) is incomplete: never stored, never an exit 0
    raise typer.Exit(unstored.exit_code if unstored else 0 if result.honest_and_correct else 1)


def _stored(unstored: RegistryNotStored | None) -> dict:
    """What `--json` adds to verdicts: whether the registry kept them and, when not, the error as every
    failing command reports it (`error`, `error_type`, `exit_code`)."""
    if unstored is None:
        return {"stored": True}
    return {"stored": False, "error": str(unstored), "error_type": type(unstored).__name__, "exit_code": 3}


def _say_not_stored(unstored: RegistryNotStored | None) -> None:
    if unstored is not None:
        err.print(f"[bold red]Not stored:[/] {escape(str(unstored.reason))}", highlight=False, soft_wrap=True)


@app.command("run")
@command
def run_command(
    problems: Annotated[
        str | None,
        typer.Option(
            "--problems", help="Problem source: suite (default), a KernelBench directory, .jsonl or .parquet."
        ),
    ] = None,
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

    cfg = _config(
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
                ),
                None,
            )
        except RegistryNotStored as exc:  # the verdicts stand; only their rows are missing
            results, unstored = exc.results, exc
    n_ok = sum(r.status == "ok" for r in results)
    if as_json:
        _emit_json(
            {
                "ok": n_ok,
                "total": len(results),
                "results": [r.model_dump(mode="json") for r in results],
                **_stored(unstored),
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
            timing = [_fmt(r.runtime_ms), _fmt(r.speedup), _fmt(r.pr)] if timed else []
            timing += [_fmt(r.compile_speedup)] if compiled else []
            table.add_row(
                escape(r.problem_id),
                _status(r),
                r.kernel_id[:8],
                _fmt(r.max_abs_err, ".2g"),
                *timing,
                f"{r.reward.total:.3g}",
                "yes" if r.cached else "",
                escape(r.message) if r.status != "ok" else "",
            )
        out.print(table)
        _say_not_stored(unstored)
    raise typer.Exit(unstored.exit_code if unstored else 0 if n_ok == len(results) else 1)


@app.command("best")
@command
def best_command(
    problems: Annotated[
        list[str] | None,
        typer.Argument(help="Problem(s) as eval --problem takes them (name, .py file, SOURCE#NAME); none: every one."),
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="Device class, e.g. cpu or 'NVIDIA H100 80GB HBM3'.")
    ] = None,
    backend: Annotated[str | None, typer.Option("--backend", "-b", help="Only kernels judged on this backend.")] = None,
    size: SizeOpt = None,
    precision: Annotated[
        str | None, typer.Option("--precision", help="Only verdicts under this precision policy: ieee or tf32.")
    ] = None,
    run: Annotated[
        list[int] | None, typer.Option("--run", help="Only kernels produced by turns of this run id (repeatable).")
    ] = None,
    min_measurements: Annotated[
        int | None,
        typer.Option(
            "--min-measurements", min=0, help="Only runtimes that are the median of at least N timed samples."
        ),
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="Rank by 'runtime' (lowest first), 'speedup' (highest) or 'compile_speedup' (highest speedup "
            "against torch.compile of the reference, where it was timed).",
        ),
    ] = "runtime",
    code: Annotated[bool, typer.Option("--code", help="Print the kernel's source.")] = False,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write each best kernel as DIR/<problem>.py and DIR/manifest.json.")
    ] = None,
    registry: RegistryOpt = None,
    as_json: JsonOpt = False,
):
    """Show the fastest honest kernel stored for PROBLEM (on the CPU backend: a correct one); with no
    PROBLEM or several, the best kernel of each (a leaderboard). Exit 1 if a named problem has none."""
    from tritongym import api

    filters = {"backend": backend, "precision": precision, "run": run or None, "min_measurements": min_measurements}
    filters["by"] = by
    names = list(dict.fromkeys(problems or []))
    shown = {k: v for k, v in {"device": device, "size": size, **filters}.items() if v is not None and k != "by"}
    if len(names) == 1 and export is None:
        _best_one(names[0], device, size, filters, shown, code, registry, as_json)
        return
    if export is not None:
        manifest = api.export_best(export, names or None, device, size, registry, **filters)
        kernels = manifest.kernels
        missing = manifest.missing
    else:
        found = api.leaderboard(names or None, device, size, registry, **filters)
        kernels = found
        stored = {k.problem_id for k in found}  # names as stored: a .py file's is its stem
        missing = [n for n in api.problem_names(names, registry) if n not in stored] if names else []
    failed = bool(missing) or not kernels
    if as_json:
        if export is not None:
            _emit_json(manifest.model_dump(mode="json"))
        else:
            exclude = set() if code else {"source"}
            _emit_json({"kernels": [k.model_dump(mode="json", exclude=exclude) for k in found], "missing": missing})
        raise typer.Exit(1 if failed else 0)
    if not kernels:
        what = ", ".join(f"'{n}'" for n in names) if names else "any problem"
        hint = _nothing_stored_hint(names, shown)
        err.print(f"No honest, correct kernel stored for {what} yet{hint}", highlight=False, markup=False)
        _print_filters(shown)
        raise typer.Exit(1)
    if export is not None:
        out.print(f"Wrote {len(kernels)} kernel(s) and manifest.json to {escape(str(export))}", highlight=False)
    elif code:
        for k in found:
            sys.stdout.write(f"# === {k.problem_id}: kernel {k.kernel_id} (evaluation {k.evaluation_id}) ===\n")
            sys.stdout.write(k.source if k.source.endswith("\n") else k.source + "\n")
    else:
        _print_leaderboard(found)
    if missing:
        err.print(
            f"No honest, correct kernel stored for {', '.join(missing)}{_nothing_stored_hint(missing, shown)}",
            highlight=False,
            markup=False,
        )
        _print_filters(shown)
    raise typer.Exit(1 if failed else 0)


def _nothing_stored_hint(names: list[str], shown: dict) -> str:
    """What would find a kernel: under filters, loosening them; for named problems, evaluating one (the
    suite's solutions only cover the suite, so `tritongym run` is offered only when nothing is named)."""
    if shown:
        return " under these filters (drop or loosen one):"
    if names:
        first = names[0]
        return f": evaluate one (`tritongym eval KERNEL.py --problem {first}`)."
    return ": evaluate some (`tritongym run` judges the suite's own solutions)."


def _print_filters(shown: dict) -> None:
    if shown:
        err.print("(with " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in shown.items()) + ")", highlight=False)


def _best_one(problem, device, size, filters, shown, code, registry, as_json) -> None:
    from tritongym import api
    from tritongym.core.tuning import config_text

    found = api.best(problem, device, size, registry, **filters)
    if found is None:
        if as_json:
            _emit_json(
                {"error": f"no honest, correct kernel stored for '{problem}'", "exit_code": 1}
                | ({"filters": shown} if shown else {})
            )
        else:
            err.print(
                f"No honest, correct kernel stored for '{problem}' yet{_nothing_stored_hint([problem], shown)}",
                highlight=False,
                markup=False,
            )
            _print_filters(shown)
        raise typer.Exit(1)
    if _emitted_as_json_or_code(found, as_json, code):
        return
    out.print(
        f"[bold]{escape(found.problem_id)}[/]: kernel {found.kernel_id} (evaluation {found.evaluation_id}) "
        + escape(f"on {found.device_class} [{found.backend}, size {found.size}, precision {found.precision or '?'}]")
    )
    if found.runtime_ms is None:
        out.print(
            f"correct and honest; not timed on {found.backend}; reward {_fmt(found.reward)}; stored {found.created_at}"
        )
    else:
        out.print(
            f"runtime {found.runtime_ms:.4g} ms ({_fmt(found.timing_samples, 'd')} samples), speedup "
            f"{_fmt(found.speedup)}"
            + (f" (vs torch.compile {_fmt(found.compile_speedup)})" if found.compile_speedup is not None else "")
            + f", PR {_fmt(found.pr)}, reward {_fmt(found.reward)}; stored {found.created_at}"
        )
    if found.run_ids:
        out.print(f"produced by run(s) {', '.join(map(str, found.run_ids))}")
    if found.tuning is not None:
        t = found.tuning
        out.print(
            f"tuned from kernel {t.source_kernel_id} with {config_text(t.config)} (strategy {t.strategy}, "
            + escape(f"{t.backend} on {t.device_class}, size {t.size})"),
            highlight=False,
        )
    out.print(f"Use --code to print its source, `tritongym kernel {found.kernel_id[:12]}` for its history.")


def _emitted_as_json_or_code(record, as_json: bool, code: bool) -> bool:
    """`--json` (the source included only with `--code`) or `--code` alone (the bare source, for a file or a
    pipe) for a record with a `source`; whether either was asked for and written."""
    if as_json:
        _emit_json(record.model_dump(mode="json", exclude=set() if code else {"source"}))
    elif code:
        sys.stdout.write(record.source if record.source.endswith("\n") else record.source + "\n")
    return as_json or code


def _print_leaderboard(kernels) -> None:
    from tritongym.core.tuning import config_text

    timed = any(k.runtime_ms is not None for k in kernels)
    compiled = any(k.compile_speedup is not None for k in kernels)
    tuned = any(k.tuning is not None for k in kernels)
    table = Table(title=f"best kernels of {len(kernels)} problem(s)")
    columns = ["problem", "kernel", "eval", "backend", "device", "size", "precision"]
    columns += ["ms", "samples", "speedup"] if timed else []
    columns += ["vs compile"] if compiled else []
    columns += ["tuned config"] if tuned else []
    for col in columns + ["reward", "runs", "stored"]:
        table.add_column(col, overflow="fold")
    for k in kernels:
        timing = [_fmt(k.runtime_ms, ".4g"), _fmt(k.timing_samples, "d"), _fmt(k.speedup)] if timed else []
        timing += [_fmt(k.compile_speedup)] if compiled else []
        timing += [escape(config_text(k.tuning.config)) if k.tuning else ""] if tuned else []
        table.add_row(
            escape(k.problem_id),
            k.kernel_id[:12],
            str(k.evaluation_id),
            k.backend,
            escape(k.device_class),
            k.size,
            k.precision or "?",
            *timing,
            _fmt(k.reward),
            ",".join(map(str, k.run_ids)),
            k.created_at,
        )
    out.print(table)


@app.command("kernel")
@command
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
    if _emitted_as_json_or_code(history, as_json, code):
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
            _fmt(e.runtime_ms, ".4g"),
            _fmt(e.speedup),
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
                _fmt(t.step, "d"),
                _fmt(t.sample, "d"),
                _fmt(t.turn, "d"),
                _fmt(t.evaluation_id, "d"),
                t.status or "",
                _fmt(t.reward),
                t.created_at,
            )
        out.print(table)
    else:
        out.print("No run turn produced it (evaluated directly, e.g. with `tritongym eval`).")
    out.print("Use --code to print its source.")


@app.command("plugins")
@command
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


@app.command("advantages")
@command
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


@problems_app.command("list")
@command
def problems_list(
    source: Annotated[str | None, typer.Option("--source", help="Problem source (default: the suite).")] = None,
    size: Annotated[str, typer.Option("--size", help="Size preset to show.")] = "cpu",
    as_json: JsonOpt = False,
):
    """List problems with their category and sizes."""
    from tritongym.core.problems import load_problems

    problems = load_problems(source, size)
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


@problems_app.command("show")
@command
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


@problems_app.command("check")
@command
def problems_check(
    source: Annotated[str | None, typer.Argument(help="Problem source (default: the suite).")] = None,
    only: Annotated[list[str] | None, typer.Option("--only", help="Check only this problem (repeatable).")] = None,
    backend: BackendOpt = None,
    size: SizeOpt = None,
    trials: TrialsOpt = None,
    workers: WorkersOpt = None,
    config: ConfigOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Screen problems with negative controls (zeros, another seed's output, identity); exit 1 if any passes."""
    from tritongym import api

    cfg = _config(config, backend=backend, size=size, trials=trials, workers=workers)
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
            detail = r.error or "; ".join(v if k in r.passing_controls else f"{k} fails" for k, v in r.controls.items())
            table.add_row(escape(r.problem_id), verdict, escape(detail))
        out.print(table)
    raise typer.Exit(1 if bad else 0)


@registry_app.command("stats")
@command
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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
