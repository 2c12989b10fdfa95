"""`tritongym report RUN_ID`: a stored run's correct, hacked, no-code and Fast@p rates per turn (last turn and
best of history), overall and per problem, as tables, JSON or a plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from tritongym.cli.common import JsonOpt, RegistryOpt, _emit_json, command, out
from tritongym.core.errors import ConfigError

if TYPE_CHECKING:  # pydantic models: loaded by the command, not by `tritongym --help`
    from tritongym.core.reports.fast_p import TurnMetrics

MISSING = "–"  # unknown (an untimed correct kernel), never a zero
_BASELINES = {
    "eager": "eager reference (its own precision class)",
    "compile": "torch.compile reference",
    "field": "reference under the field's convention (fp32 eager, matmul TF32 off)",
}


def _pct(value: float | None) -> str:
    return MISSING if value is None else f"{100 * value:.1f}"


def _table(first: str, rows: list[tuple[str, int, TurnMetrics]], ps: list[float], title: str | None = None) -> Table:
    """One row per (label, samples, metrics): rates in %, last turn then best of history."""
    from tritongym.core.reports.fast_p import p_key

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=title, title_justify="left")
    for header in (first, "samples", "active", "correct", "best", "hacked", "no code"):
        table.add_column(header, justify="right" if header != first or first == "turn" else "left", no_wrap=True)
    for p in ps:
        table.add_column(f"F@{p_key(p)}", justify="right", no_wrap=True)
    for p in ps:
        table.add_column(f"best F@{p_key(p)}", justify="right", no_wrap=True)
    for label, samples, m in rows:
        table.add_row(
            escape(label),
            str(samples),
            str(m.active),
            _pct(m.correct),
            _pct(m.correct_best),
            _pct(m.hacked),
            _pct(m.no_code),
            *(_pct(m.fast[p_key(p)]) for p in ps),
            *(_pct(m.fast_best[p_key(p)]) for p in ps),
        )
    return table


def report_command(
    run_id: Annotated[int, typer.Argument(help="Run id (`tritongym registry stats` counts runs; errors list them).")],
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write Fast@p against turn to this PNG (training runs: also <stem>.metrics.png from metrics.jsonl).",
        ),
    ] = None,
    reference: Annotated[
        str,
        typer.Option(
            "--reference",
            help="Baseline of the speedups: 'eager' (the reference as written, timed in its own precision class: "
            "TF32 matmuls under the default policy), 'compile' (torch.compile of it; timed when the run's eval config "
            "set compile_reference = true) or 'field' (the field's convention: fp32 eager with torch's TF32 defaults, "
            "as KernelBench's published baselines). Fast@p against the field's convention is printed either way.",
        ),
    ] = "eager",
    registry: RegistryOpt = None,
    as_json: JsonOpt = False,
):
    """Last-turn and best-of-history Fast@p (p = 1, 1.2, 1.5, 2), correct, hacked and no-code rates per turn.

    Rates are over all samples (trajectories): hacked, incorrect and no-code turns count as failures, and a
    sample that stopped early carries its last turn forward.  "–" means unknown: a correct kernel was not
    timed (the triton-cpu backend checks correctness only), so no Fast@p can be claimed.  Training runs
    report their last step, with one row per step below; other runs pool all their steps.

    Fast@p is given both ways: against the chosen baseline (by default the reference in its own precision class,
    TF32 matmuls on) and against the field's convention (fp32 eager, float32 matmuls exact, as KernelBench's
    published eager baselines): only the second is comparable with KernelBench's or Dr. Kernel's Fast@p."""
    from tritongym.core.registry.store import Registry, default_registry_path
    from tritongym.core.reports.run_report import plot_report, run_report

    path = registry if registry is not None else default_registry_path()
    if not Path(path).exists():
        raise ConfigError(f"no registry at {path} (pass --registry PATH or set TRITONGYM_REGISTRY)")
    reg = Registry(path)
    try:
        report = run_report(reg, run_id, reference)
    finally:
        reg.close()
    files = plot_report(report, plot) if plot is not None else None
    if as_json:
        data = report.model_dump(mode="json")
        if files is not None:
            data["plot_files"] = {"fast_p": str(files.fast_p), "metrics": str(files.metrics) if files.metrics else None}
        _emit_json(data)
        return

    overall = report.overall
    out.print(
        f"[bold]run {report.run_id}[/] ({escape(report.kind)} {escape(repr(report.name))}): "
        f"{overall.samples} samples, {report.turns_stored} turns stored, {escape(report.scope)}, "
        f"speedups vs the {_BASELINES.get(report.reference, report.reference)}"
        + (f"; {escape(', '.join(report.backends))}" if report.backends else ""),
        highlight=False,
    )
    if not overall.turns:
        out.print("No turns stored for this run.")
    else:
        out.print(
            _table(
                "turn",
                [(str(m.turn), overall.samples, m) for m in overall.turns],
                overall.ps,
                title="overall, per turn (%; best = best of history)",
            )
        )
        if report.reference != "field":
            field = report.overall_field
            out.print(
                _table(
                    "turn",
                    [(str(m.turn), field.samples, m) for m in field.turns],
                    field.ps,
                    title="overall, against the field's convention (fp32 eager, matmul TF32 off, as KernelBench's "
                    "published baselines: comparable with KernelBench / Dr. Kernel)",
                )
            )
            if field.untimed_correct > overall.untimed_correct:
                out.print(
                    f"{MISSING} unknown against the field's convention: {field.untimed_correct} correct kernel(s) "
                    "have no field-convention speedup (verdicts stored before it was recorded, or untimed).",
                    highlight=False,
                )
    if len(report.problems) > 1:
        rows = [(p.problem, p.table.samples, m) for p in report.problems if (m := p.table.last) is not None]
        out.print(_table("problem", rows, overall.ps, title="per problem, at each problem's last turn (%)"))
    if len(report.by_step) > 1:
        rows = [(str(s.step), s.table.samples, m) for s in report.by_step if (m := s.table.last) is not None]
        out.print(_table("step", rows, overall.ps, title="per step, at the last turn (%)"))
    if overall.untimed_correct:
        out.print(
            f"{MISSING} unknown: {overall.untimed_correct} correct kernel(s) were not timed "
            + (
                "against torch.compile (the run did not set compile_reference, or compiling the reference failed)"
                if report.reference == "compile"
                else "(a backend that only checks correctness, or a failed timing)"
            )
            + ", so Fast@p cannot be claimed.",
            highlight=False,
        )
    if report.training:
        if report.metrics_plot or report.metrics_file:
            out.print(f"training metrics: {report.metrics_plot or report.metrics_file}", highlight=False, markup=False)
    if files is not None:
        out.print(
            f"plot: {files.fast_p}" + (f"; training metrics plot: {files.metrics}" if files.metrics else ""),
            highlight=False,
            markup=False,
        )


def register(app: typer.Typer) -> None:
    app.command("report")(command(report_command))
