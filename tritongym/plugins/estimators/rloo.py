"""`rloo`: REINFORCE leave-one-out (Ahmadian et al. 2024) with a choice of groups and returns.

    A_i = G_i − mean_{j ≠ i} G_j = N/(N − 1) · (G_i − Ḡ)        over the baseline members of i's group

With its defaults (reward-to-go, prompt × turn groups) it differs from `trloo` only in what a turn alone
in its group gets: `zero` here (no comparison, no signal), `return` in the Dr. Kernel release.  Set
`returns = "reward"` to centre each turn's own reward instead, or `group_by = "prompt"` for the
single-turn formulation, where every sample of a prompt is one group.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.baselines import GroupBy, Returns, group_metrics, group_rows, leave_one_out, row_returns
from tritongym.core.interfaces import AdvantageEstimator
from tritongym.core.turn_batch import Advantages, TurnBatch


class RLOOOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    returns: Returns = Field(default="reward-to-go", description="centre the reward-to-go or the turn's reward")
    gamma: float = Field(default=1.0, ge=0, le=1, description="discount of the reward-to-go")
    group_by: GroupBy = Field(default="prompt-turn", description="rows compared with each other")
    singleton: Literal["zero", "return"] = Field(
        default="zero", description="advantage of a row with no other baseline member in its group"
    )


class RLOO(AdvantageEstimator):
    """Leave-one-out mean baseline (unbiased; no std), per prompt × turn group by default."""

    name = "rloo"
    Options = RLOOOptions

    def estimate(self, batch: TurnBatch) -> Advantages:
        import torch

        returns = row_returns(batch, self.options.returns, self.options.gamma)
        advantages = torch.zeros_like(returns)
        groups = group_rows(batch, self.options.group_by)
        for rows in groups:
            baseline, others = leave_one_out(returns[rows], batch.baseline[rows])
            alone_value = returns[rows] if self.options.singleton == "return" else torch.zeros_like(baseline)
            advantages[rows] = torch.where(others == 0, alone_value, returns[rows] - baseline)
        return Advantages(per_row=advantages, metrics=group_metrics(groups))


@hookimpl
def register_estimators(register):
    register(RLOO)
