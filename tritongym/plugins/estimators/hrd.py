"""`hrd`: TritonRL's Hierarchical Reward Decomposition: a response's plan and code learn from different rewards.

    R_plan(i,t) = Σ_c w_c · component_c(i,t)     over `plan_components`  (default: speedup)
    R_code(i,t) = Σ_c w_c · component_c(i,t)     over `code_components`  (default: correctness)
    A_plan, A_code = group-relative advantages of each, per prompt × turn group (as `rloo`/`grpo` form them)
    A(token) = alpha · A_plan   on plan tokens        objective = alpha · J_plan + J_code,  alpha = 0.1
               A_code           on code tokens

Why: the reasoning decides *how* a kernel is built (tiling, fusion: what makes it fast), the code whether
it is right, and one scalar per response credits both spans with both.  TritonRL reports (REFERENCE.md)
78 / 36 / 13 % correct / fast1 / fast2 at L1 with alpha = 0.1, against 68 / 29 / 14 for the best uniform mix.

- **Spans**: the code tokens are `TurnBatch.code_mask`, the fenced block the extractor took from the
  prefill + response, fences included (the trainer fills it, `core/learn/spans.py`); every other policy
  token (the plan before it, text after it, the end-of-sequence token) is a plan token.  A response without
  code has only plan tokens.  A batch without `code_mask` (a JSONL of turns that does not give it) is refused.
- **Baselines**: `leave-one-out` (default) subtracts the mean of the *other* baseline members of the group,
  which keeps each span's gradient unbiased (what `trloo` does for the whole response); `mean` with
  `normalize_std = true` is TritonRL's GRPO, (R − mean) / (std + ε).  Rows outside the baseline
  (`batch.baseline`) are compared but not compared with, as in every built-in estimator.
- **Components** are the reward names of the run's `[eval] rewards`, read from each row's components.
  One a row lacks (speed and PR on `triton-cpu`, which does not time: NaN in the batch) adds 0, as it adds
  nothing to the turn reward; `plan_absent` in the metrics is the share of valid rows with no plan component
  at all, so a misspelt name or an untimed backend shows up in the step log.
- **Hacked rows**: both spans' rewards are the row's turn reward (the hack penalty): a cheat earns the
  penalty in every span, as TritonRL's verification multiplies into every reward.
- `per_row` (the turn's advantage in the registry and the step log) is the mean advantage over the row's
  policy tokens; the loss reads `per_token`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, model_validator

from tritongym import hookimpl
from tritongym.core.baselines import GroupBy, Returns, group_metrics, group_rows, leave_one_out, mean_std
from tritongym.core.interfaces import AdvantageEstimator
from tritongym.core.turn_batch import Advantages, TurnBatch, fraction

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch


class HRDOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(default=0.1, ge=0, description="weight of the plan objective: alpha·J_plan + J_code")
    plan_components: dict[str, FiniteFloat] = Field(
        default_factory=lambda: {"speedup": 1.0},
        min_length=1,
        description="reward component -> weight: the plan span's reward (TritonRL: R_speedup)",
    )
    code_components: dict[str, FiniteFloat] = Field(
        default_factory=lambda: {"correctness": 1.0},
        min_length=1,
        description="reward component -> weight: the code span's reward (TritonRL: R_correct)",
    )
    baseline: Literal["leave-one-out", "mean"] = Field(
        default="leave-one-out",
        description="leave-one-out: unbiased per span; mean (with normalize_std): TritonRL's GRPO",
    )
    normalize_std: bool = Field(default=False, description="baseline 'mean' only: divide by the group's std + epsilon")
    epsilon: float = Field(default=1e-6, gt=0, description="added to the std so equal rewards give 0, not NaN")
    returns: Returns = Field(default="reward-to-go", description="centre the reward-to-go or the turn's reward")
    gamma: float = Field(default=1.0, ge=0, le=1, description="discount of the reward-to-go")
    group_by: GroupBy = Field(default="prompt-turn", description="rows compared with each other")
    singleton: Literal["zero", "return"] = Field(
        default="zero", description="leave-one-out: advantage of a row with no other baseline member in its group"
    )

    @model_validator(mode="after")
    def _std_needs_mean(self) -> HRDOptions:
        if self.normalize_std and self.baseline != "mean":
            raise ValueError("normalize_std applies to baseline 'mean' (TritonRL's GRPO), not 'leave-one-out'")
        return self


class HRD(AdvantageEstimator):
    """TritonRL's HRD: plan tokens learn alpha·A(speedup), code tokens A(correctness), group-relative."""

    name = "hrd"
    Options = HRDOptions

    def span_reward(self, batch: TurnBatch, weights: dict[str, float]) -> torch.Tensor:
        """Per row: the weighted sum of the named components (absent ones add 0); a hacked row's turn reward."""
        import torch

        total = torch.zeros_like(batch.reward)
        for name, weight in weights.items():
            values = batch.components.get(name)
            if values is not None:
                total = total + weight * torch.nan_to_num(values, nan=0.0)
        return torch.where(batch.hacked, batch.reward, total)

    def group_advantages(self, batch: TurnBatch, rewards: torch.Tensor, groups: list[torch.Tensor]) -> torch.Tensor:
        import torch

        o = self.options
        returns = batch.with_(reward=rewards).returns(o.gamma) if o.returns == "reward-to-go" else rewards.clone()
        advantages = torch.zeros_like(returns)
        for rows in groups:
            members = batch.baseline[rows]
            if o.baseline == "leave-one-out":
                baseline, others = leave_one_out(returns[rows], members)
                alone = returns[rows] if o.singleton == "return" else torch.zeros_like(baseline)
                advantages[rows] = torch.where(others == 0, alone, returns[rows] - baseline)
            elif bool(members.any()):
                mean, std = mean_std(returns[rows], members)
                centred = returns[rows] - mean
                advantages[rows] = centred / (std + o.epsilon) if o.normalize_std else centred
        return advantages

    def estimate(self, batch: TurnBatch) -> Advantages:
        import torch

        if batch.code_mask is None:
            raise ValueError(
                "estimator 'hrd' needs each response's code span (TurnBatch.code_mask): the trainer fills it; a "
                "JSONL of turns must give code_mask per token"
            )
        o = self.options
        groups = group_rows(batch, o.group_by)
        plan = self.group_advantages(batch, self.span_reward(batch, o.plan_components), groups)
        code = self.group_advantages(batch, self.span_reward(batch, o.code_components), groups)
        tokens = batch.tokens
        code_tokens = tokens & batch.code_mask
        per_token = torch.where(batch.code_mask, code[:, None], o.alpha * plan[:, None])
        per_token = torch.where(tokens, per_token, torch.zeros_like(per_token))
        counts = tokens.sum(dim=1)
        per_row = torch.where(counts > 0, per_token.sum(dim=1) / counts.clamp(min=1), code)
        per_row = torch.where(batch.valid, per_row, torch.zeros_like(per_row))
        absent = torch.ones_like(batch.valid)
        for name in o.plan_components:
            values = batch.components.get(name)
            if values is not None:
                absent &= torch.isnan(values)
        metrics = {
            **group_metrics(groups),
            "code_tokens": fraction(code_tokens, tokens),
            "plan_absent": fraction(absent & ~batch.hacked, batch.valid),
        }
        if bool(batch.valid.any()):
            metrics["plan_advantage_abs_mean"] = float(plan[batch.valid].abs().mean())
            metrics["code_advantage_abs_mean"] = float(code[batch.valid].abs().mean())
        return Advantages(per_row=per_row, per_token=per_token, metrics=metrics)


@hookimpl
def register_estimators(register):
    register(HRD)
