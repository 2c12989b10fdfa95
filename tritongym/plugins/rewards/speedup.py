"""`speedup`: C · min(T_reference / T_kernel, cap), cap 3 as in Dr. Kernel.

T_reference is the eager reference by default; `reference = "compile"` rewards speed over
torch.compile(reference) instead (it needs the eval config's `compile_reference = true`), so the policy is
paid only for what Inductor's fusion does not already give.

Absent (not zero) when the result carries no timing: the CPU backend measures none, so a CPU run neither
rewards nor punishes speed it did not see, and the reward says so.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tritongym import hookimpl
from tritongym.core.interfaces import Reward
from tritongym.core.models import EvaluationResult


class SpeedupOptions(BaseModel):
    """How a measured speedup becomes a reward.

    - `cap` (default 3, Dr. Kernel's): speedups above it count as it, so a lucky or noisy fast measurement
      cannot dominate a group's advantages.
    - `lower` (default none): speedups below it count as it, so a very slow but correct kernel is not
      pushed further down than a moderately slow one. Must be above 0 and below `cap`.
    - `reference` (default "eager"): the baseline, "eager" or "compile" (torch.compile of the reference,
      timed when the eval config sets `compile_reference`; absent where it was not timed).
    - `log` (default false): the component is ln(clipped speedup), so a 2x slowdown costs as much as a 2x
      speedup earns and a kernel as fast as the reference scores 0. The logarithm needs a floor: without
      `lower`, speedups are clipped from below at 1 / `cap`, which makes the range symmetric,
      [-ln cap, ln cap].
    """

    model_config = ConfigDict(extra="forbid")
    cap: float = Field(default=3.0, gt=0, description="speedups above this count as this")
    lower: float | None = Field(
        default=None, gt=0, description="speedups below this count as this; none = no floor (1/cap with log)"
    )
    log: bool = Field(default=False, description="score ln(clipped speedup) instead of the clipped speedup")
    reference: Literal["eager", "compile"] = Field(
        default="eager", description="baseline: the eager reference, or torch.compile of it (compile_reference)"
    )

    @model_validator(mode="after")
    def _lower_below_cap(self) -> SpeedupOptions:
        if self.lower is not None and self.lower >= self.cap:
            raise ValueError(f"lower ({self.lower:g}) must be below cap ({self.cap:g})")
        if self.log and self.lower is None and self.cap <= 1:
            raise ValueError("log needs cap above 1 (its floor is 1/cap) or an explicit lower")
        return self


class SpeedupReward(Reward):
    """Correct-gated speedup over the reference, clipped to [lower, cap] (cap 3), optionally as a log."""

    name = "speedup"
    Options = SpeedupOptions

    def score(self, result: EvaluationResult) -> float | None:
        if not result.honest_and_correct:
            return 0.0
        opts = self.options
        speedup = result.compile_speedup if opts.reference == "compile" else result.speedup
        if speedup is None:
            return None
        lower = opts.lower if opts.lower is not None else (1.0 / opts.cap if opts.log else None)
        clipped = min(speedup, opts.cap)
        if lower is not None:
            clipped = max(clipped, lower)
        return math.log(clipped) if opts.log else clipped

    def absent_reason(self, result: EvaluationResult) -> str:
        if self.options.reference == "compile" and result.runtime_ms is not None:
            return (
                "no torch.compile reference timing (set compile_reference = true in the eval config; "
                "its timing notes say why compiling failed)"
            )
        if result.runtime_ms is not None and result.ref_runtime_ms is None:
            return f"reference not timed on backend '{result.backend}'"
        return f"not timed on backend '{result.backend}'"


@hookimpl
def register_rewards(register):
    register(SpeedupReward)
