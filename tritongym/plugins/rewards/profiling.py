"""`profiling`: C · PR, the share of the forward's device time spent in the candidate's own kernels.

Rewards doing the work in Triton rather than a decorative kernel beside torch ops (Dr. Kernel's PR).
Zero when no profile was taken.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import Reward
from tritongym.core.models import EvaluationResult


class ProfilingReward(Reward):
    """Correct-gated PR: candidate kernels' device time / all device time of the forward."""

    name = "profiling"

    def score(self, result: EvaluationResult) -> float:
        if not result.honest_and_correct or result.pr is None:
            return 0.0
        return min(max(result.pr, 0.0), 1.0)


@hookimpl
def register_rewards(register):
    register(ProfilingReward)
