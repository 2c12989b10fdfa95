"""`timing`: the timing itself is believable (ARCHITECTURE.md §3): no sabotaged baseline, no impossible speed.

* The reference is timed in the worker before the candidate is imported and again after it ran.  A
  second timing clearly slower than the first means the candidate left something behind that slows the
  baseline (a hogging side stream, a patched torch op, a throttled clock), inflating its own speedup.
* A candidate faster than the memory roofline (bytes any implementation must read and write / the
  device's measured copy bandwidth) cannot be doing the work it claims; it is flagged as implausible.
  The roofline is only applied where the L2 cache was cold for the measurement, and where the reference
  itself runs above it (every input byte is counted: an operation that reads part of its input, a trace
  or a gathering loss, moves less, and its reference shows it).
* A speedup above the evaluation's `remeasure_speedup_above` is measured again by the Evaluator in a
  fresh task (new inputs, a new worker); a second measurement that fails, or that differs from the first
  by more than `remeasure_tolerance`, means the first cannot be believed.

Both judge numbers the backend gathered; on a backend without timing (`triton-cpu`) the check passes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class TimingIntegrityCheck(RuntimeCheck):
    """The reference did not get slower after the candidate ran, and no speed beats the memory roofline."""

    name = "timing"
    priority = 90

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        max_reference_slowdown: float = Field(
            default=1.15, gt=1, description="reference time after / before the candidate, beyond which it is sabotage"
        )
        roofline_margin: float = Field(
            default=0.8, gt=0, le=1, description="flag a runtime below this fraction of the roofline time"
        )
        remeasure_tolerance: float = Field(
            default=0.25,
            gt=0,
            description="largest relative difference between a suspect timing and its re-measurement",
        )

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        timing = evidence.timing
        if timing is None or timing.candidate is None:
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="not timed on this backend")
        before, after = timing.reference_before, timing.reference_after
        if before is not None and after is not None and before.median_ms > 0:
            ratio = after.median_ms / before.median_ms
            noise = (before.iqr_ms + after.iqr_ms) / before.median_ms
            if ratio > self.options.max_reference_slowdown + noise:
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"the reference ran {ratio:.2f}x slower after the candidate than before it "
                    f"({before.median_ms:.4g} ms -> {after.median_ms:.4g} ms): the candidate slowed the baseline",
                )
        runtime = timing.candidate.median_ms
        if timing.roofline_ms and timing.candidate.l2 != "warm":
            floor = timing.roofline_ms * self.options.roofline_margin
            reference = evidence.ref_runtime_ms
            # the bytes counted are every input's, parameter's and output's; an operation that reads a part of
            # its input (a trace reads the diagonal, an NLL loss one logit per row) moves less, and the
            # reference itself then runs "below the roofline": the count says nothing of this problem
            if reference is not None and reference < floor:
                floor = 0.0
            if runtime < floor:
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"implausibly fast: {runtime:.4g} ms is below the memory roofline of "
                    f"{timing.roofline_ms:.4g} ms ({timing.bytes_moved} bytes at {timing.bandwidth_gbps:.0f} GB/s)",
                )
        if timing.remeasured_status is not None:
            speedup = (evidence.ref_runtime_ms or 0) / runtime if runtime else 0
            if timing.remeasured_ms is None:
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"a speedup of {speedup:.1f}x was measured again in a fresh task and that evaluation was "
                    f"{timing.remeasured_status}: the result does not reproduce",
                )
            drift = abs(timing.remeasured_ms / runtime - 1)
            if drift > self.options.remeasure_tolerance:
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"a speedup of {speedup:.1f}x was measured again in a fresh task: {runtime:.4g} ms then "
                    f"{timing.remeasured_ms:.4g} ms ({drift:.0%} apart): the timing does not reproduce",
                )
        return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="reference stable, above roofline")


@hookimpl
def register_checks(register):
    register(TimingIntegrityCheck)
