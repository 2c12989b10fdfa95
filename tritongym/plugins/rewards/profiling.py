"""`profiling`: C · PR, the share of the forward's device time spent in the candidate's own kernels.

Rewards doing the work in Triton rather than a decorative kernel beside torch ops (Dr. Kernel's PR).
Absent (not zero) when no profile was taken, as on the CPU backend, and the reward says so.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import Reward
from tritongym.core.models import EvaluationResult


class ProfilingReward(Reward):
    """Correct-gated PR: candidate kernels' device time / all device time of the forward, in [0, 1]."""

    name = "profiling"

    def score(self, result: EvaluationResult) -> float | None:
        if not result.honest_and_correct:
            return 0.0
        if result.pr is None:
            return None
        return min(max(result.pr, 0.0), 1.0)

    def absent_reason(self, result: EvaluationResult) -> str:
        return f"not profiled on backend '{result.backend}'"


@hookimpl
def register_rewards(register):
    register(ProfilingReward)
