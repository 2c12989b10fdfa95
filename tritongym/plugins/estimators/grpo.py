"""`grpo`: group-relative advantages (Shao et al. 2024): A_i = (G_i − mean_G) / (std_G + ε).

The mean includes the sample itself, so the expected policy gradient is (1 − 1/N)·∇J: shrunk, and more
so for small groups (later turns of multi-turn rollouts, where trajectories have ended).  Kept as the
baseline everyone compares against; `normalize_std = false` gives Dr. GRPO's mean-centred variant.
Population std (as verl and TRL compute it for the group) unless `unbiased_std`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.baselines import GroupBy, Returns, group_metrics, group_rows, mean_std, row_returns
from tritongym.core.interfaces import AdvantageEstimator
from tritongym.core.turn_batch import Advantages, TurnBatch


class GRPOOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    normalize_std: bool = Field(default=True, description="divide by the group's std (False: mean-centred only)")
    epsilon: float = Field(default=1e-6, gt=0, description="added to the std so equal rewards give 0, not NaN")
    unbiased_std: bool = Field(default=False, description="sample (N−1) std instead of population std")
    returns: Returns = Field(default="reward-to-go", description="centre the reward-to-go or the turn's reward")
    gamma: float = Field(default=1.0, ge=0, le=1, description="discount of the reward-to-go")
    group_by: GroupBy = Field(default="prompt-turn", description="rows compared with each other")


class GRPO(AdvantageEstimator):
    """Group mean (and optionally std) baseline; the sample is in its own baseline."""

    name = "grpo"
    Options = GRPOOptions

    def estimate(self, batch: TurnBatch) -> Advantages:
        import torch

        returns = row_returns(batch, self.options.returns, self.options.gamma)
        advantages = torch.zeros_like(returns)
        groups = group_rows(batch, self.options.group_by)
        for rows in groups:
            if not bool(batch.baseline[rows].any()):
                continue  # no row of the group counts in a baseline: nothing to compare with, no signal
            mean, std = mean_std(returns[rows], batch.baseline[rows], self.options.unbiased_std)
            centred = returns[rows] - mean
            advantages[rows] = centred / (std + self.options.epsilon) if self.options.normalize_std else centred
        return Advantages(per_row=advantages, metrics=group_metrics(groups))


@hookimpl
def register_estimators(register):
    register(GRPO)
