"""`correctness`: C = 1 for a correct, honest kernel, else 0 (Dr. Kernel's C)."""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import Reward
from tritongym.core.models import EvaluationResult


class CorrectnessReward(Reward):
    """1 if the kernel is correct and not hacked, else 0."""

    name = "correctness"

    def score(self, result: EvaluationResult) -> float:
        return 1.0 if result.honest_and_correct else 0.0


@hookimpl
def register_rewards(register):
    register(CorrectnessReward)
