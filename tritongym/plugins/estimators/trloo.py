"""`trloo`: Turn-level REINFORCE leave-one-out, the estimator of Dr. Kernel.

    G(i,t) = Σ_{t' ≥ t} γ^(t'−t) R(i,t')                 reward-to-go, γ = 1 by default
    A(i,t) = G(i,t) − mean_{j ≠ i} G(j,t)                 over the other trajectories of the same prompt
                                                          that have a turn t (the group of size N_t)
           = N_t / (N_t − 1) · (G(i,t) − Ḡ_t)

Why leave-one-out: GRPO's mean includes the sample itself, which shrinks the expected gradient by
(1 − 1/N_t), and N_t falls at later turns as trajectories end, so later turns are learned from least.
Leaving the sample out makes the baseline independent of the sample and the gradient unbiased.  No
std normalisation (it would reweight prompts by how much their rewards vary).

A turn alone in its group (N_t = 1, or no other row counts in the baseline) has no one to compare with;
`singleton` says what it gets: `return` (A = G, what the release does) or `zero` (no signal).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.baselines import group_metrics, group_rows, leave_one_out
from tritongym.core.interfaces import AdvantageEstimator
from tritongym.core.turn_batch import Advantages, TurnBatch


class TRLOOOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gamma: float = Field(default=1.0, ge=0, le=1, description="discount of the reward-to-go (1 in Dr. Kernel)")
    singleton: Literal["return", "zero"] = Field(
        default="return", description="advantage of a turn with no other turn in its group: G (release) or 0"
    )


class TRLOO(AdvantageEstimator):
    """Leave-one-out baseline on the reward-to-go, per prompt × turn group, no std (Dr. Kernel)."""

    name = "trloo"
    Options = TRLOOOptions

    def estimate(self, batch: TurnBatch) -> Advantages:
        import torch

        returns = batch.returns(self.options.gamma)
        advantages = torch.zeros_like(returns)
        groups = group_rows(batch, "prompt-turn")
        singletons = 0
        for rows in groups:
            baseline, others = leave_one_out(returns[rows], batch.baseline[rows])
            alone = others == 0
            singletons += int(alone.sum())
            alone_value = returns[rows] if self.options.singleton == "return" else torch.zeros_like(baseline)
            advantages[rows] = torch.where(alone, alone_value, returns[rows] - baseline)
        return Advantages(per_row=advantages, metrics={**group_metrics(groups), "singleton_rows": float(singletons)})


@hookimpl
def register_estimators(register):
    register(TRLOO)
