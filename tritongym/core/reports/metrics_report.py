"""Read, tabulate and plot a training run's OUTPUT_DIR/metrics.jsonl.

The trainer (`tritongym.core.learn.trainer`) appends one JSON object per step: `step`, `reward` and
`reward/<component>`, verdict rates per turn (`turn<N>/correct|hacked|no_code|fast@1|fast@1.2`), `pr`, the
learning signal's metrics (every sample filter under its config label, e.g. `mrs/rejected`,
`mrs/band_rejected`, `mrs/kl_k3`, `prs/rejected`, `prs/rejected_correct`; `kept_rows`, the estimator's own
`<estimator>/...`), the update's `loss`, `grad_norm`, `entropy`, `clip_fraction`, and `mismatch_kl`,
`tokens_per_s`, `evaluations_per_s`, `step_s`.  Any key may be missing on a step (no correct turn means no
`pr`, a step where every trajectory stopped at turn 1 has no `turn2/...`), so everything here treats a
missing, null or non-numeric value as "no data" rather than as zero: a zero rate is a finding, a missing one
is not.

Importing this module is cheap on purpose (a CLI or a progress callback imports it on every run): rich and
matplotlib are imported inside the functions that need them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tritongym.core.errors import ConfigError

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["read_metrics", "step_table", "step_line", "plot_metrics", "filter_labels", "turn_numbers"]

MISSING = "–"  # an en dash: reads as "no value" and cannot be mistaken for a minus sign or a zero

# The per-turn verdict rates, in the order a reader scans them: did it work, did it cheat, was it fast.
RATES = ("correct", "hacked", "fast@1", "fast@1.2")

_TURN_KEY = re.compile(r"^turn(\d+)/")
# The learning host writes `<label>/rejected` for every configured sample filter (learning.py), whatever
# the filter; `turn<N>/` and `reward/` keys are never filters, even if a reward component were so named.
_FILTER_KEY = re.compile(r"^(?!turn\d+/|reward/)([^/]+)/rejected$")


# --- reading ------------------------------------------------------------------------------------------------


def read_metrics(path: str | Path) -> list[dict]:
    """All steps of a metrics.jsonl, in file order.

    Nothing is skipped silently: a line that is not a JSON object with a `step` raises `ConfigError` naming
    the file and line, because a plot that quietly drops steps misleads more than an error does.  A last
    line without its newline is called out as such, since that is what reading a file the trainer is still
    appending to looks like.  Blank lines carry no data and are passed over.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"metrics file {path} does not exist (the trainer writes OUTPUT_DIR/metrics.jsonl)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read metrics file {path}: {exc}") from None
    lines = text.split("\n")
    rows: list[dict] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        unfinished = number == len(lines) and not text.endswith("\n")
        where = f"{path}:{number}" + (" (the last line, without a newline: still being written?)" if unfinished else "")
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{where}: expected a JSON object per line, got {type(row).__name__}")
        step = row.get("step")
        if isinstance(step, bool) or not isinstance(step, int):
            raise ConfigError(f"{where}: no integer 'step' in the object")
        rows.append(row)
    return rows


# --- shared helpers -----------------------------------------------------------------------------------------


def _value(row: dict, key: str) -> float | None:
    """A metric as a float, or None when the step has no usable value for it (missing, null, not a number)."""
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _last_per_step(rows: Iterable[dict]) -> list[dict]:
    """One row per step, the last written, sorted by step.

    A resumed run restarts from its checkpoint and appends the steps after it again; the later lines are the
    ones the surviving weights descend from, and plotting both would draw the curve back over itself.
    """
    by_step: dict[int, dict] = {}
    for row in rows:
        by_step[row["step"]] = row
    return [by_step[step] for step in sorted(by_step)]


def turn_numbers(rows: Iterable[dict]) -> list[int]:
    """The turn numbers (1-based, as in `turn<N>/...`) that appear on any step."""
    return sorted({int(m.group(1)) for row in rows for key in row if (m := _TURN_KEY.match(key))})


def filter_labels(rows: Iterable[dict]) -> list[str]:
    """Config labels of the sample filters, in the order the run applied them (first seen first).

    Read from the host's `<label>/rejected` metric, which every filter gets whatever its plugin, so a label
    of the user's own (`mrs-is = { use = "mrs", ... }`) shows up just like `mrs` or `prs`.
    """
    labels: dict[str, None] = {}
    for row in rows:
        for key in row:
            if m := _FILTER_KEY.match(key):
                labels.setdefault(m.group(1), None)
    return list(labels)


def _number(value: float | None) -> str:
    """Compact: 3-4 significant digits, k/M for throughputs, exponent for tiny values such as a KL."""
    if value is None:
        return MISSING
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e4:
        return f"{value / 1e3:.3g}k"
    if size >= 1e-3:
        return f"{value:.4g}"
    return f"{value:.2g}"


def _rate(value: float | None) -> str:
    """A fraction in [0, 1] with two decimals, so columns of rates line up."""
    if value is None:
        return MISSING
    if math.isnan(value):
        return "nan"
    return f"{value:.2f}"


def _per_turn(row: dict, metric: str, turns: list[int]) -> str:
    """`turn1/...`, `turn2/...` as "0.25/0.50/0.75": how a rate moves over the turns of feedback is the point
    of multi-turn RL, and a mean over turns would hide it (turn counts differ when trajectories stop early)."""
    cells = [_rate(_value(row, f"turn{t}/{metric}")) for t in turns]
    return MISSING if all(cell == MISSING for cell in cells) else "/".join(cells)


# --- console ------------------------------------------------------------------------------------------------

# (header, key, formatter) of the fixed numeric columns after the rates and filters.
_TAIL_COLUMNS = (
    ("kl", "mismatch_kl", _number),
    ("entropy", "entropy", _number),
    ("grad", "grad_norm", _number),
    ("loss", "loss", _number),
    ("tok/s", "tokens_per_s", _number),
    ("evals/s", "evaluations_per_s", _number),
)

_TIME_PARTS = ("generate", "judge", "update", "push")
"""A step's seconds by phase (`time/<part>_s`, the trainer's): shown as one column, "gen/judge/upd/push"."""

_MEMORY_PARTS = ("generate", "update", "push")
"""The trainer's peak GPU memory by phase (`memory/<part>_mb`, CUDA only); the table shows the largest."""


def _time_split(row: dict) -> str:
    cells = [_value(row, f"time/{part}_s") for part in _TIME_PARTS]
    if all(c is None for c in cells):
        return MISSING
    return "/".join(f"{c:.1f}" if c is not None else MISSING for c in cells)


def _peak_memory(row: dict) -> float | None:
    values = [v for part in _MEMORY_PARTS if (v := _value(row, f"memory/{part}_mb")) is not None]
    return max(values) if values else None


def step_table(rows: list[dict], last: int | None = None) -> Table:
    """A compact rich table, one row per step (the last `last` steps if given).

    Columns are the ones that tell whether RL on kernels is working: reward; correct, hacked, fast@1 and
    fast@1.2 per turn ("t1/t2/..."; reward rising with `hacked` is reward hacking, not progress); `pr`;
    each sample filter's rejection rate (a filter rejecting most rows starves the update); the
    trainer/engine mismatch KL (off-policy drift); entropy (collapse), grad norm and loss; throughput.
    A value a step lacks shows as "–".
    """
    from rich import box
    from rich.table import Table

    rows = _last_per_step(rows)
    if last is not None:
        rows = rows[-last:] if last > 0 else []
    turns = list(range(1, max(turn_numbers(rows), default=1) + 1))  # every turn up to the last, so cells align
    labels = filter_labels(rows)
    per_turn = len(turns) > 1
    caption = f"rates per turn: {'/'.join(f't{t}' for t in turns)}" if per_turn else None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=caption, caption_justify="left")
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("reward", justify="right", no_wrap=True)
    for metric in RATES:
        table.add_column(metric, justify="right", no_wrap=True)
    table.add_column("pr", justify="right", no_wrap=True)
    for label in labels:
        table.add_column(f"{label} rej", justify="right", no_wrap=True)
    for header, _, _ in _TAIL_COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    # the time split and the trainer's GPU memory, where the steps have them (older runs, the CPU: no memory)
    timed = any(key.startswith("time/") for row in rows for key in row)
    measured = any(_peak_memory(row) is not None for row in rows)
    if timed:
        table.add_column("s gen/judge/upd/push", justify="right", no_wrap=True)
    if measured:
        table.add_column("GPU MiB", justify="right", no_wrap=True)
    for row in rows:
        cells = [str(row["step"]), _number(_value(row, "reward"))]
        cells += [_per_turn(row, metric, turns) for metric in RATES]
        cells.append(_number(_value(row, "pr")))
        cells += [_rate(_value(row, f"{label}/rejected")) for label in labels]
        cells += [fmt(_value(row, key)) for _, key, fmt in _TAIL_COLUMNS]
        if timed:
            cells.append(_time_split(row))
        if measured:
            cells.append(_number(_peak_memory(row)))
        table.add_row(*cells)
    return table


def step_line(row: dict) -> str:
    """One step as one line for a progress log, e.g.
    `step 12 | reward 0.431 | correct 0.25/0.50 | hacked 0.00/0.00 | fast@1 0.12/0.25 | mrs rej 0.05 | ...`.

    Unlike the table, a value the step lacks is left out rather than shown as "–": a log line should stay
    short, and there is no column to keep aligned.
    """
    turns = list(range(1, max(turn_numbers([row]), default=0) + 1))
    parts = [f"step {row.get('step', '?')}"]
    if (reward := _value(row, "reward")) is not None:
        parts.append(f"reward {_number(reward)}")
    if turns:
        for metric in RATES:
            if any(f"turn{t}/{metric}" in row for t in turns):
                parts.append(f"{metric} {_per_turn(row, metric, turns)}")
    if (pr := _value(row, "pr")) is not None:
        parts.append(f"pr {_number(pr)}")
    for label in filter_labels([row]):
        parts.append(f"{label} rej {_rate(_value(row, f'{label}/rejected'))}")
    for name, key, unit in (
        ("kl", "mismatch_kl", ""),
        ("entropy", "entropy", ""),
        ("grad", "grad_norm", ""),
        ("loss", "loss", ""),
        ("", "tokens_per_s", " tok/s"),
        ("", "evaluations_per_s", " evals/s"),
        ("", "step_s", "s"),
    ):
        if (value := _value(row, key)) is not None:
            parts.append(f"{name} {_number(value)}{unit}".strip())
    if (split := _time_split(row)) != MISSING:
        parts.append(f"gen/judge/upd/push {split}s")
    if (memory := _peak_memory(row)) is not None:
        parts.append(f"GPU {_number(memory)} MiB")
    return " | ".join(parts)


# --- plot ---------------------------------------------------------------------------------------------------


class _Panel(NamedTuple):
    title: str
    series: list[tuple[str, str]]  # (legend label, metric key)
    rate: bool = False  # a fraction: fixed 0..1 axis, so panels compare at a glance
    log: bool = False  # log y axis when every value is positive


def _panels(rows: list[dict]) -> list[_Panel]:
    """Every panel that could have data, in reading order (empty ones are dropped by the caller)."""
    turns = turn_numbers(rows)
    components = sorted({key for row in rows for key in row if key.startswith("reward/")})
    panels = [_Panel("reward", [("reward", "reward")] + [(key.split("/", 1)[1], key) for key in components])]
    # turn 1 (no feedback yet) against the last turn (after all feedback): the gap is what feedback buys
    shown = [turns[0], turns[-1]] if len(turns) > 1 else turns
    for metric in RATES:
        panels.append(_Panel(metric, [(f"turn {t}", f"turn{t}/{metric}") for t in shown], rate=True))
    kls = sorted({key for row in rows for key in row if key.endswith("/kl_k3")})
    panels += [
        _Panel("pr (correct turns)", [("pr", "pr")]),
        _Panel("filter rejection", [(label, f"{label}/rejected") for label in filter_labels(rows)], rate=True),
        _Panel("mismatch KL", [("mismatch_kl", "mismatch_kl")] + [(key, key) for key in kls], log=True),
        _Panel("entropy", [("entropy", "entropy")]),
        _Panel("grad norm", [("grad_norm", "grad_norm")]),
        _Panel("loss", [("loss", "loss")]),
        _Panel("clip fraction", [("clip_fraction", "clip_fraction")], rate=True),
        _Panel("tokens/s", [("generated", "tokens_per_s")]),
        _Panel("evaluations/s", [("evaluations", "evaluations_per_s")]),
        _Panel("step time (s)", [("step_s", "step_s")]),
    ]
    return panels


def plot_metrics(rows: list[dict], png_path: str | Path, title: str | None = None) -> Path:
    """A grid of small panels against step, written to `png_path` (parent folders created); returns the path.

    Panels: reward and its components; correct, hacked, fast@1, fast@1.2 (turn 1 and last turn); pr; filter
    rejection rates; mismatch KL (and MRS' `kl_k3`); entropy; grad norm; loss; clip fraction; throughput;
    step time.  A panel with no data is left out.  Lines have markers, so a one-step run and isolated points
    between missing steps still show; a missing value breaks the line instead of being drawn as zero.

    Drawn on a bare `Figure` with the Agg canvas rather than through pyplot, so it neither needs a display
    nor changes the backend or open figures of a user's interactive session.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    rows = _last_per_step(rows)
    if not rows:
        raise ConfigError(f"no metrics to plot for {png_path}: the run has not finished a step yet")
    steps = [row["step"] for row in rows]
    panels = []
    for panel in _panels(rows):
        lines = []
        for label, key in panel.series:
            values = [_value(row, key) for row in rows]
            if any(v is not None for v in values):
                lines.append((label, [math.nan if v is None else v for v in values]))
        if lines:
            panels.append((panel, lines))
    if not panels:
        raise ConfigError(f"no metrics to plot for {png_path}: no step has a known metric")

    columns = min(4, len(panels))
    grid_rows = math.ceil(len(panels) / columns)
    width, height = 3.6 * columns, 2.5 * grid_rows + 0.6
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    # fixed margins (in inches, turned into fractions) rather than constrained layout, which measures every
    # tick label and costs more than the drawing itself
    gridspec = {
        "left": 0.6 / width,
        "right": 1 - 0.15 / width,
        "bottom": 0.45 / height,
        "top": 1 - 0.6 / height,
        "wspace": 0.3,
        "hspace": 0.45,
    }
    axes = figure.subplots(grid_rows, columns, squeeze=False, gridspec_kw=gridspec).ravel()
    first, final = steps[0], steps[-1]
    pad = max(0.5, 0.03 * (final - first))
    for ax, (panel, lines) in zip(axes, panels):
        for label, values in lines:
            ax.plot(steps, values, marker="o", markersize=3, linewidth=1.2, label=label)
        ax.set_title(panel.title, fontsize=9)
        ax.tick_params(which="both", labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.grid(True, alpha=0.3)
        if panel.rate:
            ax.set_ylim(-0.05, 1.05)
        ax.set_xlim(first - pad, final + pad)  # one x range for all panels, even those with leading gaps
        if panel.log and all(v > 0 for _, values in lines for v in values if not math.isnan(v)):
            ax.set_yscale("log")  # KL spans decades over a run; a linear axis flattens all but the spikes
        if len(lines) > 1:
            ax.legend(fontsize=6, loc="best")
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[max(0, len(panels) - columns) : len(panels)]:
        ax.set_xlabel("step", fontsize=8)
    span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}–{steps[-1]}"
    figure.suptitle(title or f"training metrics ({span})", fontsize=11)

    png_path = Path(png_path)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png_path, format="png")
    return png_path
