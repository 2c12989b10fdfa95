"""Group statistics the built-in estimators share: which rows form a group, and their baselines.

Kept in core so that `grpo`, `rloo`, `trloo` and `reinforce` (separate plugins that never import one
another) compute groups and leave-one-out means the same way, and a third-party estimator can too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tritongym.core.turn_batch import TurnBatch

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch

GroupBy = Literal["prompt-turn", "prompt"]
Returns = Literal["reward-to-go", "reward"]


def group_rows(batch: TurnBatch, group_by: GroupBy) -> list[torch.Tensor]:
    """Row indices of each group of valid rows: prompt × turn (TRLOO's N_t groups) or whole prompts."""
    keys = [batch.group, batch.turn] if group_by == "prompt-turn" else [batch.group]
    return batch.index_groups(keys)


def row_returns(batch: TurnBatch, returns: Returns, gamma: float) -> torch.Tensor:
    """What each row's advantage is centred from: its reward-to-go G(i,t), or its own turn reward."""
    return batch.returns(gamma) if returns == "reward-to-go" else batch.reward.clone()


def leave_one_out(values: torch.Tensor, members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For each row of a group: the mean of `values` over the *other* baseline members, and how many
    there were (0 means the row has no one to compare with).  `members` marks baseline members."""
    import torch

    member_values = torch.where(members, values, torch.zeros_like(values))
    total, count = member_values.sum(), members.sum()
    others_sum = total - torch.where(members, values, torch.zeros_like(values))
    others = count - members.to(count.dtype)
    mean = torch.where(others > 0, others_sum / others.clamp(min=1), torch.zeros_like(values))
    return mean, others


def mean_std(values: torch.Tensor, members: torch.Tensor, unbiased: bool = False) -> tuple[float, float]:
    """Mean and standard deviation over baseline members (population std unless `unbiased`)."""
    import torch

    chosen = values[members]
    if chosen.numel() == 0:
        return 0.0, 0.0
    std = chosen.std(unbiased=unbiased) if chosen.numel() > 1 else torch.tensor(0.0)
    return float(chosen.mean()), float(std)


def group_metrics(groups: list[torch.Tensor]) -> dict[str, float]:
    sizes = [len(g) for g in groups]
    return {
        "groups": float(len(sizes)),
        "mean_group_size": float(sum(sizes) / len(sizes)) if sizes else 0.0,
        "singleton_groups": float(sum(1 for s in sizes if s == 1)),
    }
