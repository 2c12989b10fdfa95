"""`tritongym report RUN_ID`: last-turn and best-of-history Fast@p of a stored run, overall and per problem.

Built only from what the registry holds: the run's turns (`turns`) joined to their evaluations
(`evaluations`: status, correct, hacked, speedup).  A turn with status "no_code" has no evaluation and
counts as a failure; so does a turn whose evaluation row is missing.  The numbers follow `fast_p`'s
conventions (every sample in the denominator, early-stopped samples carry their last turn, an untimed
correct kernel makes Fast@p unknown).

What a sample is: one trajectory, i.e. the turns of one (step, `turns.sample`) pair; its problem is the
problem of its turns.  Turn t is the stored turn index minus the run's lowest index, plus one, so runs
that number turns from 0 (rollouts, training) and from 1 (eval, test-time scaling) both start at turn 1.
Where a (step, sample, turn) was stored twice (a resumed training run repeats the steps after its
checkpoint), the later row wins, as in the training metrics.

Baseline: Fast@p compares with the eager reference (`evaluations.speedup`) unless `reference="compile"`, which
uses the speedup against `torch.compile(reference)` (`evaluations.compile_speedup`, timed when the run's
eval config set `compile_reference`); a correct kernel with no compiled speedup then makes Fast@p unknown,
exactly like an untimed one.

Both ways: beside the tables against the chosen baseline, `overall_field` is Fast@p against the reference under
the field's convention (`evaluations.speedup_field`: fp32 eager with torch's TF32 defaults, as KernelBench's
published eager baselines, `core/measure/field_convention.py`), the one to set beside KernelBench's or Dr. Kernel's
Fast@p; `reference="field"` makes it the baseline of every table.  The default `eager` baseline is the reference in
its own precision class (TF32 matmuls under the default `tf32` policy): much faster than the field's on fp32 GEMMs.

Steps: a training run ("train") changes the policy every step, so pooling its steps would average over
different models; its main tables are those of the **last step** (the policy the run ended with) and
`by_step` has the overall table of every step, to follow the curve.  Every other kind (tts, rollouts,
eval) samples one fixed policy, so all its steps are pooled into one set of samples (a TTS run has only
step 0); `by_step` is filled there too when there is more than one step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, Field

from tritongym.core.errors import ConfigError
from tritongym.core.reports.fast_p import FastPTable, SampleTurn, fast_p_table, p_key

if TYPE_CHECKING:
    from tritongym.core.registry import Registry

__all__ = ["ProblemReport", "StepReport", "RunReport", "PlotFiles", "run_report", "plot_report", "NO_CODE"]

NO_CODE = "no_code"  # rollouts.NO_CODE, repeated so reading a report does not import the rollout machinery
TRAINING_KINDS = ("train",)
REFERENCES = {"eager": "speedup", "compile": "compile_speedup", "field": "speedup_field"}  # baseline -> column
LATEST_RUNS_SHOWN = 10


class ProblemReport(BaseModel):
    problem: str
    table: FastPTable


class StepReport(BaseModel):
    step: int
    table: FastPTable


class RunReport(BaseModel):
    """One run's Fast@p report (JSON-able with `model_dump(mode="json")`)."""

    run_id: int
    kind: str
    name: str
    config: dict
    started_at: str | None = None
    finished_at: str | None = None
    turns_stored: int = Field(description="turn rows of the run in the registry")
    steps: list[int] = Field(default_factory=list, description="every step with a stored turn")
    scope: str = Field(description="which turns the main tables cover: 'all steps' or 'last step (N)'")
    reference: str = Field(
        "eager",
        description="the baseline of Fast@p: 'eager' (the reference in its own precision class), 'compile' "
        "(torch.compile) or 'field' (the field's convention)",
    )
    turn_base: int | None = Field(None, description="the stored turn index reported as turn 1")
    backends: list[str] = Field(default_factory=list, description="'backend @ device class' of the evaluations")
    overall: FastPTable
    overall_field: FastPTable = Field(
        description="Fast@p against the reference under the field's convention (fp32 eager, torch's TF32 defaults: "
        "float32 matmuls exact, as KernelBench's published eager baselines): comparable with KernelBench's and "
        "Dr. Kernel's Fast@p; unknown where a correct kernel's verdict has no field speedup (stored before it was "
        "recorded, or untimed)"
    )
    problems: list[ProblemReport] = Field(default_factory=list)
    by_step: list[StepReport] = Field(default_factory=list)
    metrics_file: str | None = Field(None, description="a training run's OUTPUT_DIR/metrics.jsonl, if it exists")
    metrics_plot: str | None = Field(None, description="a training run's OUTPUT_DIR/metrics.png, if it exists")

    @property
    def training(self) -> bool:
        return self.kind in TRAINING_KINDS


class PlotFiles(NamedTuple):
    fast_p: Path
    metrics: Path | None  # the training metrics plot written next to it (training runs with a metrics.jsonl)


# --- building ---------------------------------------------------------------------------------------------


def _run_row(registry: Registry, run_id: int) -> dict:
    rows = list(registry.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
    if rows:
        return rows[0]
    latest = list(registry.db.query(f"SELECT id, kind, name FROM runs ORDER BY id DESC LIMIT {LATEST_RUNS_SHOWN}"))
    if not latest:
        raise ConfigError(f"no run {run_id} in {registry.path}: the registry has no runs yet")
    listed = ", ".join(f"{r['id']} ({r['kind']} {r['name']!r})" for r in latest)
    raise ConfigError(f"no run {run_id} in {registry.path}; latest runs: {listed}")


def _evaluations(registry: Registry, ids: list[int], reference: str = "eager") -> dict[int, dict]:
    found: dict[int, dict] = {}
    for start in range(0, len(ids), 500):  # well under SQLite's bound-parameter limit
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        columns = (
            f"id, status, correct, hacked, {REFERENCES[reference]} AS speedup, speedup_field, backend, device_class"
        )
        for row in registry.db.query(f"SELECT {columns} FROM evaluations WHERE id IN ({marks})", chunk):
            found[row["id"]] = row
    return found


def _sample_turn(turn: dict, evaluation: dict | None, position: int, column: str = "speedup") -> SampleTurn:
    if evaluation is None:
        # no code, or an evaluation that was never stored: a failure either way
        return SampleTurn(turn=position, has_code=turn["status"] != NO_CODE)
    speedup = evaluation[column]
    return SampleTurn(
        turn=position,
        has_code=True,
        # the verdict counts only where the kernel ran to the end (ok, or ok-but-caught: hacked)
        correct=bool(evaluation["correct"]) and evaluation["status"] in ("ok", "hacked"),
        hacked=bool(evaluation["hacked"]) or evaluation["status"] == "hacked",
        speedup=None if speedup is None or math.isnan(speedup) else float(speedup),
    )


def _training_outputs(kind: str, config: dict) -> tuple[str | None, str | None]:
    if kind not in TRAINING_KINDS or not config.get("output_dir"):
        return None, None
    output_dir = Path(config["output_dir"])
    metrics, plot = output_dir / "metrics.jsonl", output_dir / "metrics.png"
    return (str(metrics) if metrics.exists() else None), (str(plot) if plot.exists() else None)


def run_report(registry: Registry, run_id: int, reference: str = "eager") -> RunReport:
    """The Fast@p report of run `run_id`: overall, per problem and (several steps) per step, with speedups
    against the eager reference in its own precision class, or (`reference="compile"`) against
    torch.compile(reference), or (`reference="field"`) against the field's convention; `overall_field` is always
    against the field's convention.

    Raises `ConfigError` (exit code 2) for a run the registry does not have, naming the latest runs, or for
    an unknown baseline."""
    if reference not in REFERENCES:
        raise ConfigError(f"--reference must be one of {', '.join(REFERENCES)}, not {reference!r}")
    run = _run_row(registry, run_id)
    try:
        config = json.loads(run["config"]) if run["config"] else {}
    except json.JSONDecodeError:
        config = {}
    config = config if isinstance(config, dict) else {"value": config}
    turns = registry.turns(run_id)
    evaluations = _evaluations(
        registry, sorted({t["evaluation_id"] for t in turns if t["evaluation_id"] is not None}), reference
    )
    base = min((t["turn"] for t in turns), default=None)

    # (step, sample) -> {turn index: (problem, SampleTurn, the same against the field's convention)}; later rows
    # replace earlier ones
    trajectories: dict[tuple[int, int], dict[int, tuple[str, SampleTurn, SampleTurn]]] = {}
    for turn in turns:
        step = turn["step"] if turn["step"] is not None else 0
        evaluation = evaluations.get(turn["evaluation_id"]) if turn["evaluation_id"] is not None else None
        position = turn["turn"] - base + 1
        trajectories.setdefault((step, turn["sample"]), {})[turn["turn"]] = (
            turn["problem_name"],
            _sample_turn(turn, evaluation, position),
            _sample_turn(turn, evaluation, position, column="speedup_field"),
        )

    steps = sorted({step for step, _ in trajectories})
    training = run["kind"] in TRAINING_KINDS

    def samples_of(step: int | None = None, problem: str | None = None, field: bool = False) -> list[list[SampleTurn]]:
        chosen = []
        for (s, _), held in sorted(trajectories.items()):
            if step is not None and s != step:
                continue
            first = held[min(held)][0]
            if problem is not None and first != problem:
                continue
            chosen.append([in_field if field else sample_turn for _, sample_turn, in_field in held.values()])
        return chosen

    scope_step = steps[-1] if training and steps else None
    scope = f"last step ({scope_step})" if scope_step is not None else "all steps"
    problems = sorted(
        {held[min(held)][0] for (s, _), held in trajectories.items() if scope_step is None or s == scope_step}
    )
    by_step = (
        [StepReport(step=s, table=fast_p_table(samples_of(step=s))) for s in steps]
        if training or len(steps) > 1
        else []
    )
    metrics_file, metrics_plot = _training_outputs(run["kind"], config)
    return RunReport(
        run_id=run["id"],
        kind=run["kind"],
        name=run["name"] or "",
        config=config,
        started_at=run["started_at"],
        finished_at=run["finished_at"],
        turns_stored=len(turns),
        steps=steps,
        scope=scope,
        reference=reference,
        turn_base=base,
        backends=sorted({f"{e['backend']} @ {e['device_class']}" for e in evaluations.values()}),
        overall=fast_p_table(samples_of(step=scope_step)),
        overall_field=fast_p_table(samples_of(step=scope_step, field=True)),
        problems=[ProblemReport(problem=p, table=fast_p_table(samples_of(scope_step, p))) for p in problems],
        by_step=by_step,
        metrics_file=metrics_file,
        metrics_plot=metrics_plot,
    )


# --- plot -------------------------------------------------------------------------------------------------


def _series(table: FastPTable, field: str, key: str | None = None) -> list[float]:
    values = []
    for row in table.turns:
        value = getattr(row, field)
        if key is not None:
            value = value[key]
        values.append(math.nan if value is None else value)
    return values


def plot_report(report: RunReport, png_path: str | Path) -> PlotFiles:
    """Write the run's overall rates against turn to `png_path` (parent folders created).

    Left panel: Fast@p for every p, one colour per p, last-turn solid and best-of-history dashed; an unknown
    value (untimed correct kernels) leaves a gap, and a panel with none known says why.  Right panel:
    correct (last-turn solid, best-of-history dashed), hacked and no-code rates.  For a training run whose
    OUTPUT_DIR/metrics.jsonl exists, its training metrics plot (`metrics_report.plot_metrics`) is also
    written, next to `png_path` as `<stem>.metrics.png`.  Drawn on a bare Figure with the Agg canvas (no
    display, no pyplot state).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    table = report.overall
    turns = [row.turn for row in table.turns]
    figure = Figure(figsize=(11, 4.4), dpi=100)
    FigureCanvasAgg(figure)
    fast_ax, rate_ax = figure.subplots(1, 2, gridspec_kw={"left": 0.06, "right": 0.98, "bottom": 0.13, "top": 0.84})
    # one colour (and marker) per p; style says which reading: solid last turn, dashed best of history.  Equal
    # values overlap, so the markers shrink with p and every line stays visible on top of the one before.
    markers = ["o", "s", "^", "D", "v", "P"]
    known = False
    for index, p in enumerate(table.ps):
        key, style = p_key(p), {"color": f"C{index}", "marker": markers[index % len(markers)]}
        style["markersize"] = max(3.0, 7.0 - 1.2 * index)
        last, best = _series(table, "fast", key), _series(table, "fast_best", key)
        known = known or any(not math.isnan(v) for v in last + best)
        fast_ax.plot(turns, last, linewidth=1.6, label=f"Fast@{key}", **style)
        fast_ax.plot(turns, best, linewidth=1.6, linestyle="--", **style)
    if not known:
        why = "no turns stored" if not turns else f"{table.untimed_correct} correct kernel(s) not timed"
        fast_ax.text(0.5, 0.5, f"Fast@p unknown:\n{why}", ha="center", va="center", transform=fast_ax.transAxes)
    against = {"compile": "torch.compile reference", "field": "field's convention"}.get(
        report.reference, "eager reference"
    )
    fast_ax.set_title(f"Fast@p against turn (vs {against})", fontsize=10)
    for field, label, colour, marker in (
        ("correct", "correct", "C2", "o"),
        ("hacked", "hacked", "C3", "s"),
        ("no_code", "no code", "C7", "^"),
    ):
        rate_ax.plot(turns, _series(table, field), color=colour, marker=marker, markersize=5, label=label)
    rate_ax.plot(turns, _series(table, "correct_best"), color="C2", marker="o", markersize=3, linestyle="--")
    rate_ax.set_title("correct, hacked, no code", fontsize=10)
    readings = [
        Line2D([], [], color="black", linestyle="-", label="last turn"),
        Line2D([], [], color="black", linestyle="--", label="best of history"),
    ]
    for ax in (fast_ax, rate_ax):
        ax.set_xlabel("turn")
        ax.set_ylim(-0.05, 1.25)  # headroom for the legend
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        if turns:
            ax.set_xlim(turns[0] - 0.3, turns[-1] + 0.3)
        ax.grid(True, alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        ax.legend(handles=handles + readings, fontsize=7, loc="upper left", ncol=2)
    figure.suptitle(
        f"run {report.run_id} ({report.kind} {report.name!r}): {table.samples} samples, {report.scope}", fontsize=11
    )
    png_path = Path(png_path)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png_path, format="png")

    metrics = None
    if report.training and report.metrics_file and Path(report.metrics_file).exists():
        from tritongym.core.reports.metrics_report import plot_metrics, read_metrics

        try:
            metrics = plot_metrics(
                read_metrics(report.metrics_file), png_path.with_name(f"{png_path.stem}.metrics.png"), title=report.name
            )
        except ConfigError:
            metrics = None  # no finished step yet (or a torn line): the Fast@p plot stands on its own
    return PlotFiles(png_path, metrics)
