"""What a task measured besides its verdict, each kind in its own home on `Evidence` and `EvaluationResult`.

* `phases`: seconds per stage, worker, driver and keeper side (ARCHITECTURE.md, Glossary: phases).  Seconds only,
  so that summing a batch's phases (`benchmarks/gpu_scaling.py`) adds seconds to seconds.
* `counts`: how many times something happened in the task (`COUNTS`): summed over a batch, a total.
* `flags`: whether something happened to the task (`FLAGS`): summed over a batch, how many tasks it happened to.
* `memory_mb`: sizes in MiB the keeper measured (the reference's peak and parked outputs, the keeper's own memory
  after a request: `is_size`); a size is neither summed nor compared with seconds.

One dict of floats held all four before: results stored then (registry rows, the service's rows) still load, their
entries moved to the home each belongs in (`split_legacy`), renamed where the name changed since.
"""

from __future__ import annotations

from typing import Any

COUNTS: dict[str, str] = {
    "handout_requests": "HOUT requests the worker made, each for handouts to copy one group of its outputs into",
    "yields": "times the worker handed its shared hold to a waiting timing between calls (`yield_to_waiting_timings`)",
}

FLAGS: dict[str, str] = {
    "reference_cached": "the keeper's record of the reference side served this task (built for an earlier one)",
    "reference_check_shared": "another task's reference timing of this problem served this one (`shared_check_s`)",
    "ran_alone": "the task ran again with the GPU to itself after running out of memory beside others",
    "timing_error": "the candidate's timing broke after it changed torch, Triton or the timers (the change is noted)",
}

# stored before the split: old name -> (its home, its name there)
_LEGACY: dict[str, tuple[str, str]] = {
    "hand_outs": ("counts", "handout_requests"),
    "yields": ("counts", "yields"),
    "ran_alone": ("flags", "ran_alone"),
    "reference_cached": ("flags", "reference_cached"),
    "reference_check_shared": ("flags", "reference_check_shared"),
    "timing_error": ("flags", "timing_error"),
    "hand_out": ("phases", "fill_handouts"),
    "hand_out_timed": ("phases", "fill_handouts_timed"),
}


def is_size(name: str) -> bool:
    """Whether an entry is a size in MiB by its name: `reference_peak_mb`, `keeper_reserved_mb_after_prep`."""
    return name.endswith("_mb") or "_mb_" in name


def not_seconds(phases: dict[str, float]) -> list[str]:
    """The entries of a `phases` dict that are not seconds: sizes, counts and flags."""
    return [name for name in phases if is_size(name) or name in COUNTS or name in FLAGS]


def check_seconds(phases: dict[str, float]) -> dict[str, float]:
    """`phases` as given, or a `ValueError` naming the entries that belong in another home."""
    wrong = not_seconds(phases)
    if wrong:
        raise ValueError(
            f"phases holds seconds only; {', '.join(sorted(wrong))} belong in `memory_mb` (a name with '_mb'), "
            "`counts` or `flags` (core/phases.py)"
        )
    return phases


def split_legacy(data: Any) -> Any:
    """A result's fields as stored before `phases` held seconds only, each entry moved to its home: a count to
    `counts` (as an int), a flag to `flags` (1.0 -> True), a size to `memory_mb`, a renamed stage to its name now.
    Anything else (fields of today's shape, a non-dict) passes unchanged."""
    if not isinstance(data, dict) or not isinstance(data.get("phases"), dict):
        return data
    phases = data["phases"]
    if not any(name in _LEGACY or is_size(name) for name in phases):
        return data
    homes: dict[str, dict] = {
        "phases": {},
        "counts": dict(data.get("counts") or {}),
        "flags": dict(data.get("flags") or {}),
        "memory_mb": dict(data.get("memory_mb") or {}),
    }
    for name, value in phases.items():
        home, new = _LEGACY.get(name, ("memory_mb" if is_size(name) else "phases", name))
        if home == "counts":
            value = int(value)
        elif home == "flags":
            value = bool(value)
        homes[home].setdefault(new, value)
    return {**data, **homes}
