"""`prs`: profiling-based rejection sampling (Dr. Kernel's PRS).

A correct kernel can still be lazy: a decorative Triton kernel beside torch ops that do the real work
passes every correctness test and earns correctness reward.  PR (the share of the forward's device time
spent in the candidate's own kernels) exposes it: the paper's lazy channel-sum kernel had PR = 0.00014,
a properly fused one 0.86.  PRS keeps such turns out of the gradient, so correctness reward stops
reinforcing laziness, while incorrect turns (whose negative signal is wanted) are never touched.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import SampleFilter
from tritongym.core.turn_batch import FilterDecision, TurnBatch, fraction

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch


class PRSOptions(BaseModel):
    """Where the keep probability ramps from 0 to 1.

    - `tau` (default 0.3, the release's) and `scale` (default 0.1, the release's): a correct turn is kept
      with probability clip((PR − tau) / scale, 0, 1), so PR ≤ 0.3 is always rejected, PR ≥ 0.4 always
      kept and the ramp between lets a borderline kernel through sometimes instead of never.
    - `hard_threshold` (default false): keep iff PR ≥ tau, no randomness; the paper found this worse
      than the soft ramp.
    """

    model_config = ConfigDict(extra="forbid")

    tau: float = Field(default=0.3, ge=0, lt=1, allow_inf_nan=False, description="PR at which the ramp starts")
    scale: float = Field(
        default=0.1, gt=0, allow_inf_nan=False, description="width of the ramp: keep probability is 1 at tau + scale"
    )
    hard_threshold: bool = Field(
        default=False, description="keep a correct turn iff PR ≥ tau, without sampling (worse in the paper)"
    )


class PRS(SampleFilter):
    """Profiling-based rejection: keep a correct turn with probability clip((PR − 0.3) / 0.1, 0, 1).

    Only valid rows that are correct and not hacked are judged; incorrect or hacked rows are always kept.
    A correct row without PR (NaN: not profiled, as on the CPU backend) is kept and counted in the
    `unprofiled` metric, since no profile is no evidence of laziness.  The draw is one
    `torch.rand(rows, generator=rng)` over every row in row order, made whether or not a row is judged,
    so a row's draw depends only on the seed and its position; `hard_threshold` draws nothing.

    Metrics (fractions of correct rows, NaN when there are none): `rejected_correct`, `unprofiled`, and
    `keep_prob_mean`, the mean keep probability of profiled correct rows.
    """

    name = "prs"
    Options = PRSOptions
    level = "turn"

    def decide(self, batch: TurnBatch, rng: torch.Generator) -> FilterDecision:
        import torch

        opts = self.options
        judged = batch.valid & batch.correct & ~batch.hacked
        pr = batch.pr.to(torch.float64)
        profiled = judged & ~torch.isnan(pr)
        if opts.hard_threshold:
            keep_prob = (pr >= opts.tau).to(torch.float64)
            kept = keep_prob > 0
        else:
            keep_prob = ((pr - opts.tau) / opts.scale).clamp(0.0, 1.0)
            draws = torch.rand(batch.rows, generator=rng, dtype=torch.float64).to(pr.device)
            kept = draws < keep_prob  # P(u < p) = p for u ~ U[0, 1)
        rejected = profiled & ~kept
        metrics = {
            "rejected_correct": fraction(rejected, judged),
            "unprofiled": fraction(judged & ~profiled, judged),
            "keep_prob_mean": float(keep_prob[profiled].mean()) if bool(profiled.any()) else math.nan,
        }
        return FilterDecision(keep=~rejected, level="turn", metrics=metrics)


@hookimpl
def register_sample_filters(register):
    register(PRS)
