"""`meaningful-turn`: the Dr. Kernel release's mask of failed turns that follow a success.

Once a trajectory has produced a kernel that earns reward, later turns are attempts to improve a kernel
that already works.  A later turn that earns nothing (it broke the kernel, or wrote no code) is masked
rather than punished: pushing its tokens down would teach the model not to try refining working code,
and the success that came before it is already credited (with γ = 1 the earlier turns' reward-to-go
includes every later reward anyway).  Turns before the first success, and later turns that earn
reward, are untouched.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import SampleFilter
from tritongym.core.turn_batch import FilterDecision, TurnBatch

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch


class MeaningfulTurnOptions(BaseModel):
    """- `threshold` (default 0, the release's): a turn counts as a success iff its reward is above it;
    after a trajectory's first success, later turns with reward ≤ threshold are masked.  Raise it when
    rewards carry a constant offset (a format bonus, a negative penalty scale) so that "earned nothing"
    still means what it should."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(
        default=0.0,
        allow_inf_nan=False,
        description="rewards above this are a success; after a success, later turns at or below it are masked",
    )


class MeaningfulTurn(SampleFilter):
    """Masks (does not punish) turns with reward ≤ 0 that come after a positive-reward turn (release recipe).

    Per trajectory, ordered by turn index over valid rows: t* = the first turn with reward > `threshold`;
    every turn t > t* with reward ≤ `threshold` is rejected (kept = False).  Rows that are not valid are
    not judged.  Metric: `masked`, the fraction of valid turns masked.
    """

    name = "meaningful-turn"
    Options = MeaningfulTurnOptions
    level = "turn"

    def decide(self, batch: TurnBatch, rng: torch.Generator) -> FilterDecision:
        import torch

        threshold = self.options.threshold
        keep = torch.ones_like(batch.valid)
        for rows in batch.index_groups([batch.trajectory]):
            turns, success = batch.turn[rows], batch.reward[rows] > threshold
            if not bool(success.any()):
                continue
            first = turns[success].min()
            keep[rows[(turns > first) & ~success]] = False
        masked = batch.valid & ~keep
        valid = int(batch.valid.sum())
        metrics = {"masked": float(int(masked.sum()) / valid) if valid else math.nan}
        return FilterDecision(keep=keep, level="turn", metrics=metrics)


@hookimpl
def register_sample_filters(register):
    register(MeaningfulTurn)
