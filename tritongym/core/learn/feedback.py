"""The message a model sees next turn: an `EvaluationResult` rendered as plain text.

Multi-turn training and test-time refinement feed this back verbatim, so it says what a person fixing
the kernel would want first (what happened, where, by how much) and leaves out what would only be noise
to a model: the worker's temporary paths, frames inside torch/triton beyond the candidate's own, and
fields that have no value on this backend.
"""

from __future__ import annotations

import re

from tritongym.core.models import EvaluationResult, Status

_TMP_PATH = re.compile(r"/[^\s\"']*?/tritongym-[^/\s\"']+/")
_SITE_PACKAGES = re.compile(r"/[^\s\"']*?/(?:site|dist)-packages/")

_HEADLINES = {
    Status.ok: "Your kernel is correct.",
    Status.rejected: "Your code was rejected before it ran.",
    Status.compile_error: "Your code failed to import or compile.",
    Status.runtime_error: "Your code raised an error while running.",
    Status.incorrect: "Your kernel ran but its output is wrong.",
    Status.hacked: "Your output matched, but the evaluation found it was not produced honestly; this earns no reward.",
    Status.timeout: "Your code did not finish in time.",
    Status.crashed: "Your code crashed the process it ran in.",
}


def clean_paths(text: str) -> str:
    """Worker temp dirs and site-packages prefixes removed: `candidate.py`, `triton/...`."""
    return _SITE_PACKAGES.sub("", _TMP_PATH.sub("", text))


def trim_traceback(text: str, max_lines: int = 30) -> str:
    """Keep the start (where the candidate's code was entered) and the end (the error itself)."""
    lines = clean_paths(text).rstrip().splitlines()
    if len(lines) <= max_lines:
        return "\n".join(lines)
    head = max_lines // 3
    tail = max_lines - head - 1
    return "\n".join([*lines[:head], f"  ... ({len(lines) - head - tail} lines omitted) ...", *lines[-tail:]])


def render_feedback(
    result: EvaluationResult, max_traceback_lines: int = 30, max_profile_rows: int = 6, notes: tuple[str, ...] = ()
) -> str:
    """The next user message for a multi-turn rollout, from one evaluation; `notes` (e.g. what tuning the
    kernel found, `core/tune/feedback.py`) come after the timing, before the reward."""
    parts = [
        f"Evaluation on problem `{result.problem_id}` ({result.backend}, {result.device}): "
        f"{result.status.value}. {_HEADLINES[result.status]}"
    ]
    parts.append(clean_paths(result.message))
    failed = [c for c in result.checks if not c.passed]
    for check in failed:
        where = f" (line {check.line})" if check.line else ""
        parts.append(f"Check `{check.name}` failed{where}: {check.reason}")
    if (
        result.error
        and result.error.traceback
        and result.status in (Status.compile_error, Status.runtime_error, Status.crashed)
    ):
        parts.append("Traceback:\n" + trim_traceback(result.error.traceback, max_traceback_lines))
    if result.status == Status.ok:
        if result.runtime_ms is not None and result.ref_runtime_ms is not None:
            timing = (
                f"Runtime {result.runtime_ms:.4g} ms vs reference {result.ref_runtime_ms:.4g} ms "
                f"(speedup {result.speedup:.3g}x)"
            )
            if result.compile_ref_runtime_ms is not None and result.compile_speedup is not None:
                timing += (
                    f"; torch.compile reference {result.compile_ref_runtime_ms:.4g} ms "
                    f"(speedup {result.compile_speedup:.3g}x)"
                )
            if result.pr is not None:
                timing += f"; {result.pr:.0%} of the forward's GPU time is in your kernels (PR {result.pr:.3g})"
            parts.append(timing + ".")
            if result.timing is not None and result.timing.candidate is not None:
                stats = result.timing.candidate
                parts.append(
                    f"Timing: median of {stats.samples} samples, IQR {stats.iqr_ms:.3g} ms, {stats.mode} mode"
                    + (f" ({clean_paths(stats.note)})" if stats.note else "")
                    + f", L2 {stats.l2}, precision {result.timing.precision}."
                )
            if result.profile:
                rows = [
                    f"  {e.device_ms * 1000:9.1f} us  {e.share:6.1%}  x{e.calls:<3} {e.kernel}"
                    + ("  (yours)" if e.own else "")
                    for e in result.profile[:max_profile_rows]
                ]
                parts.append("GPU kernels per forward (device time, share, calls, name):\n" + "\n".join(rows))
        else:
            parts.append(f"No timing on the {result.backend} backend: only correctness was checked.")
    if result.launches:
        shown = ", ".join(
            f"{rec.kernel} x{rec.count}" + ("" if rec.own else " (not yours)") for rec in result.launches[:8]
        )
        parts.append(f"Triton kernels launched across {result.trials} trials: {shown}.")
    parts.extend(notes)
    parts.append(f"Reward: {result.reward.describe()}.")
    return "\n\n".join(p for p in parts if p)
