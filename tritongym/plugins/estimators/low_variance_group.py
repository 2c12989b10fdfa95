"""`low-variance-group`: the Dr. Kernel release's drop of prompt groups whose outcomes all agree.

When every trajectory of a prompt ends with (nearly) the same reward, the group says nothing about which
behaviour is better: a group-relative estimator gives its final turns advantages near zero, and what is
left is noise that still costs a slot in the batch.  Like DAPO's dynamic sampling, the release drops
such groups entirely (all their rows), judged on last-turn rewards with std < 1e-3.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import SampleFilter
from tritongym.core.turn_batch import FilterDecision, TurnBatch

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch


class LowVarianceGroupOptions(BaseModel):
    """- `min_std` (default 1e-3, the release's): groups whose last-turn rewards have a standard deviation
      below it are dropped; 0 drops nothing.
    - `std` (default `population`: numpy's default, and what verl's DAPO group filter computes; the
      release's own group filter lives in a verl patch we could not read, so this is our reading):
      `population` divides by N, `sample` by N − 1 (larger for small groups, so it drops fewer)."""

    model_config = ConfigDict(extra="forbid")

    min_std: float = Field(
        default=1e-3, ge=0, allow_inf_nan=False, description="drop a group whose last-turn rewards have std below this"
    )
    std: Literal["population", "sample"] = Field(
        default="population", description="population (divide by N) or sample (N − 1) standard deviation"
    )


class LowVarianceGroup(SampleFilter):
    """Drops prompt groups whose trajectories' last-turn rewards have std < 1e-3 (release recipe).

    Per group: x_i = reward of the last valid turn (highest turn index) of each trajectory i, one value per
    trajectory however many turns it took; the group is dropped (every row) iff std(x) < `min_std`.  A group
    with a single trajectory has std 0 (with either `std`) and is dropped: with no other trajectory to
    compare against it carries no group-relative signal.  Rows that are not valid are not judged.
    Metric: `dropped_groups`, the fraction of groups dropped.
    """

    name = "low-variance-group"
    Options = LowVarianceGroupOptions
    level = "group"

    def decide(self, batch: TurnBatch, rng: torch.Generator) -> FilterDecision:
        import torch

        opts = self.options
        keep = torch.ones_like(batch.valid)
        groups = batch.index_groups([batch.group])
        dropped = 0
        for rows in groups:
            last: dict[int, tuple[int, float]] = {}
            for row in rows.tolist():
                trajectory, turn = int(batch.trajectory[row]), int(batch.turn[row])
                if trajectory not in last or turn > last[trajectory][0]:
                    last[trajectory] = (turn, float(batch.reward[row]))
            finals = torch.tensor([reward for _, reward in last.values()], dtype=torch.float64)
            correction = 1 if opts.std == "sample" else 0
            std = float(finals.std(correction=correction)) if finals.numel() > 1 else 0.0
            if std < opts.min_std:
                keep[rows] = False
                dropped += 1
        metrics = {"dropped_groups": dropped / len(groups) if groups else math.nan}
        return FilterDecision(keep=keep, level="group", metrics=metrics)


@hookimpl
def register_sample_filters(register):
    register(LowVarianceGroup)
