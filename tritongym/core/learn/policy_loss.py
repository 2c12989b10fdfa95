"""The PPO policy-gradient loss the release trains with, over masked multi-turn token batches.

The release (REFERENCE.md, "Policy loss used by the release") trains with a clipped PPO objective:
clip 0.2 below and 0.28 above (the asymmetric "clip-higher" bounds, which leave room for unlikely tokens
with a positive advantage to grow), a dual clip of 3 for negative advantages, tokens summed per sequence
and averaged over sequences, no KL term and no entropy bonus.  `PolicyLossOptions()` is that setting.

Every tensor is `[rows, tokens]`: one row per training row (a turn: its history is the prompt, its
response the tokens), one column per token position.  `mask` marks the tokens the policy generated (1);
padding and the tool and feedback tokens spliced between turns are 0.  Masked tokens are out of the loss
entirely (numerator *and* denominator), and whatever values they hold, NaN and inf included, reach
neither the loss nor its gradient.

    out = policy_loss(logprobs, batch.rollout_logprobs, signal.advantages, signal.mask, weights=signal.weights)
    out.loss.backward()
    log(clip_fraction=out.clip_fraction, approx_kl=out.approx_kl)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # torch is imported where it is used: loading the plugin stays cheap
    import torch

Aggregation = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]

LOG_RATIO_LIMIT = 20.0
"""`logprobs - old_logprobs` is clamped to +-this before `exp`, as verl does, so that a stale or broken
log-prob cannot turn the ratio into inf (whose gradient through a discarded branch is 0 * inf = NaN)."""


class PolicyLossOptions(BaseModel):
    """How the PPO loss clips and aggregates.  The defaults are the release's setting."""

    model_config = ConfigDict(extra="forbid")

    clip_low: float = Field(default=0.2, ge=0, description="the ratio is clipped below at 1 - clip_low (release: 0.2)")
    clip_high: float = Field(
        default=0.28,
        ge=0,
        description="the ratio is clipped above at 1 + clip_high (release: 0.28, 'clip-higher', so that "
        "low-probability tokens with a positive advantage can still gain mass)",
    )
    dual_clip: float | None = Field(
        default=3.0,
        gt=1,
        description="for negative advantages the per-token loss is capped at -advantage * dual_clip, so one "
        "token whose ratio exploded cannot dominate the batch (release: 3); None disables it",
    )
    aggregation: Aggregation = Field(
        default="seq-mean-token-sum",
        description="token-mean: mean over all policy tokens of the batch; seq-mean-token-sum: sum over each "
        "sequence's policy tokens, then mean over sequences (release); seq-mean-token-mean: mean over each "
        "sequence's policy tokens, then mean over sequences",
    )
    token_sum_norm: float | None = Field(
        default=None,
        gt=0,
        description="seq-mean-token-sum only: divide each sequence's token sum by this constant (Dr. GRPO "
        "uses the maximum response length) so the loss scale does not depend on batch content; None = plain sum",
    )

    @model_validator(mode="after")
    def _norm_needs_token_sum(self) -> PolicyLossOptions:
        if self.token_sum_norm is not None and self.aggregation != "seq-mean-token-sum":
            raise ValueError(
                f"token_sum_norm only applies to aggregation 'seq-mean-token-sum', not {self.aggregation!r}"
            )
        return self


@dataclass(frozen=True)
class PolicyLossOutput:
    """The loss to back-propagate and detached per-batch metrics, all over policy (unmasked) tokens only.

    The metrics are unweighted (sample weights scale the loss, not what is measured) and 0.0 when the batch
    holds no policy token.
    """

    loss: torch.Tensor
    """Scalar, connected to `logprobs` (even when every token is masked: then it is 0 with zero gradient)."""
    clip_fraction: float
    """Tokens where the ordinary clip changed the loss (verl's `pg_clipfrac`: clipped loss > unclipped)."""
    dual_clip_fraction: float
    """Tokens with a negative advantage where the dual clip capped the loss (verl's `pg_clipfrac_lower`)."""
    approx_kl: float
    """Mean k3 estimate `ratio - 1 - log(ratio)` of KL(pi_old || pi): non-negative and unbiased for tokens
    sampled from pi_old, the rollout policy (Schulman, "Approximating KL divergence")."""
    ratio_mean: float
    """Mean of `exp(logprobs - old_logprobs)` (after the +-LOG_RATIO_LIMIT clamp)."""
    tokens: int
    """Number of policy tokens in the batch."""


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    options: PolicyLossOptions | None = None,
    weights: torch.Tensor | None = None,
) -> PolicyLossOutput:
    """The clipped (and dual-clipped) PPO loss of one batch, aggregated as `options.aggregation` says.

    logprobs: `[rows, tokens]` log-probabilities of the sampled tokens under the policy being trained.
    old_logprobs: `[rows, tokens]`, the same under the rollout policy (as returned by vLLM).
    advantages: `[rows, tokens]`, or `[rows]` for one advantage per sequence (broadcast over its tokens).
    mask: `[rows, tokens]`, bool or 0/1; non-zero marks a policy token.
    weights: optional non-negative sample weights, `[rows]` or `[rows, tokens]` (from sample filters).  A
        weight scales a token's contribution to the numerator only; the denominators count policy tokens and
        sequences whatever their weight, so a row of weight 0 still counts as a sequence.  To drop a row
        from the denominator too, mask it.

    Denominators: token-mean divides by the number of policy tokens in the batch; the seq-mean modes
    average over the rows holding at least one policy token, and seq-mean-token-mean first divides each
    row's sum by that row's policy-token count.  With no policy token at all, the loss is 0.

    The computation runs in float32 at least (float64 stays float64), so bf16 log-probs lose nothing.
    """
    import torch

    options = options or PolicyLossOptions()
    _check_shapes(logprobs, old_logprobs, advantages, mask, weights)
    dtype = torch.promote_types(logprobs.dtype, torch.float32)
    mask = mask if mask.dtype == torch.bool else mask != 0
    token_mask = mask
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1)
    if weights is not None and weights.dim() == 1:
        weights = weights.unsqueeze(-1)

    # Replace masked values *before* any arithmetic: `torch.where` routes no gradient to the branch it does
    # not pick, but the arithmetic after it would (0 * NaN = NaN), so NaN at a masked position must never
    # enter the graph at all.  Multiplying by the mask instead would let it through.
    def keep(t: torch.Tensor) -> torch.Tensor:
        t = t.to(dtype)
        return torch.where(token_mask, t, torch.zeros((), dtype=dtype, device=t.device))

    logprobs_ = keep(logprobs)
    old_ = keep(old_logprobs)
    adv = keep(advantages.expand_as(logprobs))
    if weights is not None:
        w = keep(weights.expand_as(logprobs))
        if not bool(torch.all(torch.isfinite(w) & (w >= 0))):
            raise ValueError("weights must be finite and non-negative at every policy (unmasked) token")
    else:
        w = None

    # PPO with dual clip, as verl's `compute_policy_loss` (verl/trainer/ppo/core_algos.py) computes it:
    # ratio from the clamped log-ratio, the pessimistic max of unclipped and clipped losses, and for
    # negative advantages a cap at -A * dual_clip.
    log_ratio = torch.clamp(logprobs_ - old_, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    ratio = torch.exp(log_ratio)
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1.0 - options.clip_low, 1.0 + options.clip_high)
    clipped = torch.maximum(pg1, pg2)
    if options.dual_clip is not None:
        pg3 = -adv * options.dual_clip
        negative = adv < 0
        per_token = torch.where(negative, torch.minimum(clipped, pg3), clipped)
        dual_clipped = negative & (clipped > pg3)
    else:
        per_token = clipped
        dual_clipped = torch.zeros_like(token_mask)

    contrib = per_token if w is None else per_token * w
    contrib = torch.where(token_mask, contrib, torch.zeros((), dtype=dtype, device=contrib.device))
    loss = _aggregate(contrib, token_mask, options)

    with torch.no_grad():
        count = int(token_mask.sum())
        n = max(count, 1)

        def mean(values: torch.Tensor) -> float:
            return float(torch.where(token_mask, values.to(dtype), 0).sum() / n)

        return PolicyLossOutput(
            loss=loss,
            clip_fraction=mean(pg2 > pg1),
            dual_clip_fraction=mean(dual_clipped),
            approx_kl=mean(ratio - 1 - log_ratio),
            ratio_mean=mean(ratio),
            tokens=count,
        )


def _aggregate(contrib: torch.Tensor, token_mask: torch.Tensor, options: PolicyLossOptions) -> torch.Tensor:
    """Reduce per-token contributions (already 0 at masked tokens) to the scalar loss.

    Every denominator is clamped at 1, so an empty batch (or row) gives 0 while staying in the graph.
    """
    if options.aggregation == "token-mean":
        return contrib.sum() / token_mask.sum().clamp(min=1)
    row_tokens = token_mask.sum(dim=-1)
    row_sum = contrib.sum(dim=-1)
    if options.aggregation == "seq-mean-token-sum":
        per_row = row_sum / options.token_sum_norm if options.token_sum_norm is not None else row_sum
    else:  # seq-mean-token-mean
        per_row = row_sum / row_tokens.clamp(min=1)
    # Rows without a policy token contribute 0 above and are left out of the sequence count here.
    return per_row.sum() / (row_tokens > 0).sum().clamp(min=1)


def _check_shapes(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor | None,
) -> None:
    if logprobs.dim() != 2:
        raise ValueError(f"logprobs must have shape [rows, tokens], got shape {list(logprobs.shape)}")
    full = tuple(logprobs.shape)
    rows = full[:1]
    for name, tensor, allowed in (
        ("old_logprobs", old_logprobs, (full,)),
        ("mask", mask, (full,)),
        ("advantages", advantages, (full, rows)),
        ("weights", weights, (full, rows)),
    ):
        if tensor is not None and tuple(tensor.shape) not in allowed:
            expected = " or ".join(str(list(shape)) for shape in allowed)
            raise ValueError(
                f"{name} has shape {list(tensor.shape)} but logprobs has shape {list(full)}: "
                f"{name} must have shape {expected}"
            )
