"""`reinforce`: REINFORCE with one baseline for the whole batch: A = G − mean of G over the batch.

No groups at all: the simplest unbiased-in-the-limit estimator, and what the others are measured
against.  The batch mean includes every sample, so with few samples it carries GRPO's small shrinkage;
`baseline = "none"` uses the raw return.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.baselines import Returns, row_returns
from tritongym.core.interfaces import AdvantageEstimator
from tritongym.core.turn_batch import Advantages, TurnBatch


class ReinforceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline: Literal["batch-mean", "none"] = Field(default="batch-mean", description="subtracted from every return")
    returns: Returns = Field(default="reward-to-go", description="the reward-to-go or the turn's reward")
    gamma: float = Field(default=1.0, ge=0, le=1, description="discount of the reward-to-go")


class Reinforce(AdvantageEstimator):
    """Return minus the batch-mean return (one baseline for all rows)."""

    name = "reinforce"
    Options = ReinforceOptions

    def estimate(self, batch: TurnBatch) -> Advantages:
        import torch

        returns = row_returns(batch, self.options.returns, self.options.gamma)
        members = batch.baseline & batch.valid
        baseline = returns[members].mean() if self.options.baseline == "batch-mean" and members.any() else 0.0
        advantages = torch.where(batch.valid, returns - baseline, torch.zeros_like(returns))
        return Advantages(per_row=advantages, metrics={"baseline": float(baseline)})


@hookimpl
def register_estimators(register):
    register(Reinforce)
