"""`speedup`: C · min(T_reference / T_kernel, cap), cap 3 as in Dr. Kernel.

Zero when there is no timing (the CPU backend measures none), so a CPU run never rewards speed it did
not see.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import Reward
from tritongym.core.models import EvaluationResult


class SpeedupOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cap: float = Field(default=3.0, gt=0, description="speedups above this count as this")


class SpeedupReward(Reward):
    """Correct-gated speedup over the reference, clipped at `cap` (default 3)."""

    name = "speedup"
    Options = SpeedupOptions

    def score(self, result: EvaluationResult) -> float:
        if not result.honest_and_correct or not result.speedup:
            return 0.0
        return min(result.speedup, self.options.cap)


@hookimpl
def register_rewards(register):
    register(SpeedupReward)
