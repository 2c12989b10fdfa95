"""`mrs`: mismatch rejection sampling ("When Speed Kills Stability", used by Dr. Kernel).

The rollout engine (vLLM) and the trainer compute slightly different probabilities for the same tokens
(other kernels, other precision, other batching).  Per policy token k of a turn

    ℓ_k = log π_train(a_k) − log π_rollout(a_k)

and a sample whose tokens the trainer finds much more or much less likely than the engine did is off
policy: training on it is what blows up entropy and gradient norms.  Only `batch.tokens` (policy tokens
of valid rows) are ever read, so padding and tool or feedback tokens may hold anything, NaN included.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tritongym import hookimpl
from tritongym.core.interfaces import SampleFilter
from tritongym.core.turn_batch import FilterDecision, TurnBatch, fraction

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch


class MRSOptions(BaseModel):
    """How the mismatch ratio is aggregated and judged.

    - `granularity` (default `trajectory`, the release's): the unit w is computed over, either every policy
      token of every valid turn of a trajectory (a band rejection then rejects all its turns) or each turn
      on its own.
    - `mode` (default `geometric`, the release's):
      `geometric`: w = exp(mean ℓ_k) over the unit's policy tokens, kept iff `lower` ≤ w ≤ `upper`; a
      geometric mean does not grow with length, so one narrow band (0.999 / 1.001) fits short and long
      samples alike.
      `sequence`: w = exp(Σ ℓ_k), the true sequence-level importance ratio, with the same band check.  It
      compounds over thousands of tokens, so its bounds must be far wider than the geometric ones (the
      defaults would reject nearly every long sample).
      `token-truncate`: nothing is rejected by a band; each policy token gets the weight min(exp ℓ_k,
      `truncate`) (truncated importance sampling), a token-level decision.
    - `lower` / `upper` (defaults 0.999 / 1.001, the release's): the band; `lower` < `upper`.  Unused in
      `token-truncate` mode.
    - `veto` (default 1e-4, the release's; None disables it): a turn with any policy token whose ratio
      exp ℓ_k is below it is rejected, whatever the unit's w: one token the trainer all but forbids is a
      sign of a broken sample that an average can hide.  Always per turn, at either granularity and in
      every mode (in `token-truncate` mode all tokens of a vetoed turn are masked).
    - `truncate` (default 2.0, the release's importance-sampling cap): the weight cap of `token-truncate`.
    """

    model_config = ConfigDict(extra="forbid")

    granularity: Literal["trajectory", "turn"] = Field(
        default="trajectory", description="compute w over a whole trajectory (release) or over each turn"
    )
    mode: Literal["geometric", "sequence", "token-truncate"] = Field(
        default="geometric",
        description="geometric: band on exp(mean ℓ); sequence: band on exp(sum ℓ) (use wider bounds); "
        "token-truncate: no band, token weights min(exp ℓ, truncate)",
    )
    lower: float = Field(default=0.999, ge=0, allow_inf_nan=False, description="keep only if w ≥ lower")
    upper: float = Field(default=1.001, gt=0, allow_inf_nan=False, description="keep only if w ≤ upper")
    veto: float | None = Field(
        default=1e-4,
        gt=0,
        lt=1,
        description="reject a turn if any policy token has exp ℓ below this; None disables the veto",
    )
    truncate: float = Field(
        default=2.0, gt=0, allow_inf_nan=False, description="token-truncate mode: weights are min(exp ℓ, truncate)"
    )

    @model_validator(mode="after")
    def _band_is_ordered(self) -> MRSOptions:
        if self.lower >= self.upper:
            raise ValueError(f"lower ({self.lower:g}) must be below upper ({self.upper:g})")
        return self


class MRS(SampleFilter):
    """Mismatch rejection: drop samples whose trainer/rollout probability ratio leaves a band (token veto).

    w per unit (trajectory by default, or turn) is exp(mean ℓ) (`geometric`) or exp(Σ ℓ) (`sequence`),
    ℓ = train − rollout log-prob of each policy token; a unit without policy tokens has w = 1 and is kept.
    The decision is per turn: a band rejection is constant over the unit, the veto is per turn.  In
    `token-truncate` mode the decision is per token and carries weights min(exp ℓ, truncate) instead.

    Metrics: `band_rejected` and `veto_rejected` (fractions of valid turns), `w_mean`/`w_min`/`w_max` over
    units (the geometric w in `token-truncate` mode), `kl_k3` = mean over policy tokens of
    exp ℓ − 1 − ℓ, Schulman's k3 estimator of KL(π_rollout ‖ π_train) for tokens sampled from π_rollout
    (unbiased, ≥ 0 per token), and in `token-truncate` mode `truncated`, the fraction of policy tokens
    whose ratio was capped.
    """

    name = "mrs"
    Options = MRSOptions
    level = "turn"

    def decide(self, batch: TurnBatch, rng: torch.Generator) -> FilterDecision:
        import torch

        opts = self.options
        if batch.train_logprobs is None:
            raise ValueError(
                "mrs needs the trainer's log-probs but batch.train_logprobs is None: the trainer must "
                "recompute log-probs of the rollout tokens before MRS runs"
            )
        tokens = batch.tokens
        raw = batch.train_logprobs.to(torch.float64) - batch.rollout_logprobs.to(torch.float64)
        broken = tokens & torch.isnan(raw)
        if bool(broken.any()):
            row = int(broken.any(dim=1).nonzero()[0])
            raise ValueError(
                f"{int(broken.sum())} policy tokens have a NaN log-prob difference (first in row {row}); "
                "rollout and trainer log-probs must be numbers at every policy token"
            )
        log_ratio = torch.where(tokens, raw, torch.zeros_like(raw))

        # aggregate per unit: a trajectory (all its valid turns) or a single row
        if opts.granularity == "trajectory":
            unit = torch.unique(batch.trajectory, return_inverse=True)[1]
        else:
            unit = torch.arange(batch.rows, device=batch.reward.device)
        units = int(unit.max()) + 1 if batch.rows else 0
        zeros = torch.zeros(units, dtype=torch.float64, device=batch.reward.device)
        unit_sum = zeros.index_add(0, unit, log_ratio.sum(dim=1))
        unit_count = zeros.index_add(0, unit, tokens.sum(dim=1).to(torch.float64))
        unit_valid = zeros.index_add(0, unit, batch.valid.to(torch.float64)) > 0
        unit_mean = unit_sum / unit_count.clamp(min=1)  # no policy tokens: mean 0, w = 1
        unit_w = torch.exp(unit_sum if opts.mode == "sequence" else unit_mean)

        valid = batch.valid
        metrics: dict[str, float] = {}
        vetoed = torch.zeros_like(batch.valid)
        if opts.veto is not None:
            vetoed = valid & (tokens & (log_ratio < math.log(opts.veto))).any(dim=1)
            metrics["veto_rejected"] = fraction(vetoed, valid)
        present = unit_w[unit_valid]
        metrics["w_mean"] = float(present.mean()) if present.numel() else math.nan
        metrics["w_min"] = float(present.min()) if present.numel() else math.nan
        metrics["w_max"] = float(present.max()) if present.numel() else math.nan
        ratio = torch.exp(log_ratio)
        n_tokens = int(tokens.sum())
        k3 = torch.where(tokens, ratio - 1 - log_ratio, torch.zeros_like(ratio))
        metrics["kl_k3"] = float(k3.sum()) / n_tokens if n_tokens else math.nan

        if opts.mode == "token-truncate":
            capped = tokens & (ratio > opts.truncate)
            metrics["truncated"] = float(int(capped.sum()) / n_tokens) if n_tokens else math.nan
            weights = torch.where(tokens, ratio.clamp(max=opts.truncate), torch.ones_like(ratio))
            keep = (~vetoed)[:, None].expand_as(tokens).clone()
            return FilterDecision(keep=keep, level="token", weights=weights, metrics=metrics)

        w = unit_w[unit]
        out_of_band = valid & ~((w >= opts.lower) & (w <= opts.upper))  # NaN w (inf − inf) is out
        metrics["band_rejected"] = fraction(out_of_band, valid)
        keep = ~(out_of_band | vetoed)  # rows that are not valid are not judged here
        return FilterDecision(keep=keep, level="turn", metrics=metrics)


@hookimpl
def register_sample_filters(register):
    register(MRS)
