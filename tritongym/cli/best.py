"""`tritongym best`: the fastest honest kernel stored for a problem, a leaderboard of several, or an export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tritongym.cli.common import JsonOpt, RegistryOpt, SizeOpt, _emit_json, command, emit_record, err, fmt, out


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
    if emit_record(found, as_json, code):
        return
    out.print(
        f"[bold]{escape(found.problem_id)}[/]: kernel {found.kernel_id} (evaluation {found.evaluation_id}) "
        + escape(f"on {found.device_class} [{found.backend}, size {found.size}, precision {found.precision or '?'}]")
    )
    if found.runtime_ms is None:
        out.print(
            f"correct and honest; not timed on {found.backend}; reward {fmt(found.reward)}; stored {found.created_at}"
        )
    else:
        out.print(
            f"runtime {found.runtime_ms:.4g} ms ({fmt(found.timing_samples, 'd')} samples), speedup "
            f"{fmt(found.speedup)}"
            + (f" (vs torch.compile {fmt(found.compile_speedup)})" if found.compile_speedup is not None else "")
            + f", PR {fmt(found.pr)}, reward {fmt(found.reward)}; stored {found.created_at}"
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
        timing = [fmt(k.runtime_ms, ".4g"), fmt(k.timing_samples, "d"), fmt(k.speedup)] if timed else []
        timing += [fmt(k.compile_speedup)] if compiled else []
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
            fmt(k.reward),
            ",".join(map(str, k.run_ids)),
            k.created_at,
        )
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("best")(command(best_command))
