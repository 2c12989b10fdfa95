"""The PPO policy loss against a loop-by-loop reference, and its masking, clipping and validation."""

from __future__ import annotations

import math

import pydantic
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongym.core.learn.policy_loss import PolicyLossOptions, policy_loss

AGGREGATIONS = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]


def reference(logprobs, old, advantages, mask, options, weights=None):
    """The loss and metrics written out token by token in Python floats (float64), from the definitions."""
    rows, tokens = len(logprobs), len(logprobs[0])
    total, row_values, all_tokens = 0.0, [], 0
    clipped = dual = kl = ratio_sum = 0.0
    for r in range(rows):
        row_sum, row_tokens = 0.0, 0
        for t in range(tokens):
            if not mask[r][t]:
                continue
            a = advantages[r] if not isinstance(advantages[r], list) else advantages[r][t]
            w = 1.0 if weights is None else (weights[r] if not isinstance(weights[r], list) else weights[r][t])
            log_ratio = min(max(logprobs[r][t] - old[r][t], -20.0), 20.0)
            ratio = math.exp(log_ratio)
            unclipped = -a * ratio
            clip = -a * min(max(ratio, 1 - options.clip_low), 1 + options.clip_high)
            value = max(unclipped, clip)
            clipped += clip > unclipped
            if options.dual_clip is not None and a < 0 and value > -a * options.dual_clip:
                value = -a * options.dual_clip
                dual += 1
            kl += ratio - 1 - log_ratio
            ratio_sum += ratio
            row_sum += w * value
            row_tokens += 1
        all_tokens += row_tokens
        total += row_sum
        if row_tokens:
            if options.aggregation == "seq-mean-token-mean":
                row_values.append(row_sum / row_tokens)
            else:
                row_values.append(row_sum / (options.token_sum_norm or 1.0))
    if options.aggregation == "token-mean":
        loss = total / all_tokens if all_tokens else 0.0
    else:
        loss = sum(row_values) / len(row_values) if row_values else 0.0
    n = max(all_tokens, 1)
    return loss, {
        "clip_fraction": clipped / n,
        "dual_clip_fraction": dual / n,
        "approx_kl": kl / n,
        "ratio_mean": ratio_sum / n,
        "tokens": all_tokens,
    }


def random_batch(seed, rows, tokens, *, row_advantages=False, weights=None, empty_row=None):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(rows, tokens, generator=g, dtype=torch.float64) * 3
    # Log-ratios of a few tenths put tokens on both sides of every clip bound; some go past the dual clip.
    logprobs = old + torch.randn(rows, tokens, generator=g, dtype=torch.float64) * 0.6
    shape = (rows,) if row_advantages else (rows, tokens)
    advantages = torch.randn(shape, generator=g, dtype=torch.float64)
    mask = torch.rand(rows, tokens, generator=g) < 0.7
    if empty_row is not None:
        mask[empty_row % rows] = False
    w = None
    if weights == "row":
        w = torch.rand(rows, generator=g, dtype=torch.float64) * 2
        w[0] = 0.0
    elif weights == "token":
        w = torch.rand(rows, tokens, generator=g, dtype=torch.float64) * 2
    return logprobs.requires_grad_(), old, advantages, mask, w


@settings(deadline=None, max_examples=50)
@given(
    seed=st.integers(0, 2**31 - 1),
    rows=st.integers(1, 5),
    tokens=st.integers(1, 7),
    aggregation=st.sampled_from(AGGREGATIONS),
    dual_clip=st.sampled_from([None, 3.0, 1.5]),
    row_advantages=st.booleans(),
    weights=st.sampled_from([None, "row", "token"]),
    empty_row=st.one_of(st.none(), st.integers(0, 4)),
    token_sum_norm=st.sampled_from([None, 4.0]),
)
def test_matches_the_reference(
    seed, rows, tokens, aggregation, dual_clip, row_advantages, weights, empty_row, token_sum_norm
):
    norm = token_sum_norm if aggregation == "seq-mean-token-sum" else None
    options = PolicyLossOptions(aggregation=aggregation, dual_clip=dual_clip, token_sum_norm=norm)
    lp, old, adv, mask, w = random_batch(
        seed, rows, tokens, row_advantages=row_advantages, weights=weights, empty_row=empty_row
    )
    out = policy_loss(lp, old, adv, mask, options, weights=w)
    expected, metrics = reference(
        lp.tolist(), old.tolist(), adv.tolist(), mask.tolist(), options, None if w is None else w.tolist()
    )
    torch.testing.assert_close(out.loss, torch.tensor(expected, dtype=torch.float64))
    for name, value in metrics.items():
        assert getattr(out, name) == pytest.approx(value, abs=1e-12), name
    out.loss.backward()
    assert torch.isfinite(lp.grad).all()


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_gradient_matches_finite_differences(aggregation):
    options = PolicyLossOptions(aggregation=aggregation)
    lp, old, adv, mask, w = random_batch(7, 3, 5, weights="token", empty_row=1)
    torch.autograd.gradcheck(lambda x: policy_loss(x, old, adv, mask, options, weights=w).loss, (lp,))


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
@pytest.mark.parametrize("fill", [math.nan, math.inf, -math.inf, "random"])
def test_masked_values_change_nothing(aggregation, fill):
    options = PolicyLossOptions(aggregation=aggregation)
    lp, old, adv, mask, w = random_batch(3, 4, 6, weights="token", empty_row=2)
    base = policy_loss(lp, old, adv, mask, options, weights=w)
    base.loss.backward()

    def poison(t):
        t = t.detach().clone()
        t[~mask] = torch.randn(int((~mask).sum()), dtype=t.dtype) * 1e3 if fill == "random" else fill
        return t

    lp2 = poison(lp).requires_grad_()
    out = policy_loss(lp2, poison(old), poison(adv), mask, options, weights=poison(w))
    out.loss.backward()
    torch.testing.assert_close(out.loss, base.loss, rtol=0, atol=0)
    torch.testing.assert_close(lp2.grad, lp.grad, rtol=0, atol=0)
    assert (lp2.grad[~mask] == 0).all()
    for name in ("clip_fraction", "dual_clip_fraction", "approx_kl", "ratio_mean", "tokens"):
        assert getattr(out, name) == getattr(base, name), name


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_ratio_one_gives_minus_aggregated_advantages(aggregation):
    _, old, adv, mask, _ = random_batch(5, 4, 6, empty_row=3)
    lp = old.clone().requires_grad_()
    out = policy_loss(lp, old, adv, mask, PolicyLossOptions(aggregation=aggregation))
    masked = torch.where(mask, adv, 0.0)
    counts = mask.sum(-1)
    if aggregation == "token-mean":
        expected = masked.sum() / mask.sum()
    elif aggregation == "seq-mean-token-sum":
        expected = masked.sum(-1)[counts > 0].mean()
    else:
        expected = (masked.sum(-1)[counts > 0] / counts[counts > 0]).mean()
    torch.testing.assert_close(out.loss, -expected)
    assert out.clip_fraction == 0.0
    assert out.dual_clip_fraction == 0.0
    assert out.approx_kl == 0.0
    assert out.ratio_mean == 1.0


@pytest.mark.parametrize(
    ("advantage", "ratio", "dual_clip", "loss", "grad", "clip", "dual"),
    [
        (1.5, 2.0, 3.0, -1.5 * 1.28, 0.0, 1.0, 0.0),  # A > 0, ratio above 1 + clip_high: clipped, no gradient
        (1.5, 1.1, 3.0, -1.5 * 1.1, -1.5 * 1.1, 0.0, 0.0),  # inside the trust region
        (1.5, 0.5, 3.0, -1.5 * 0.5, -1.5 * 0.5, 0.0, 0.0),  # A > 0 below 1 - clip_low: pessimistic max unclipped
        (-2.0, 0.5, 3.0, 2.0 * 0.8, 0.0, 1.0, 0.0),  # A < 0, ratio below 1 - clip_low: clipped at 0.8
        (-2.0, 2.0, 3.0, 2.0 * 2.0, 2.0 * 2.0, 0.0, 0.0),  # A < 0 above 1 + clip_high: pessimistic max unclipped
        (-2.0, 10.0, 3.0, 2.0 * 3.0, 0.0, 0.0, 1.0),  # A < 0, ratio 10: dual clip caps at 3|A|
        (-2.0, 10.0, None, 2.0 * 10.0, 2.0 * 10.0, 0.0, 0.0),  # ... and without the dual clip nothing does
    ],
)
def test_clipping_of_single_tokens(advantage, ratio, dual_clip, loss, grad, clip, dual):
    old = torch.tensor([[-1.0]], dtype=torch.float64)
    lp = (old + math.log(ratio)).requires_grad_()
    adv = torch.tensor([advantage], dtype=torch.float64)
    out = policy_loss(lp, old, adv, torch.ones(1, 1), PolicyLossOptions(dual_clip=dual_clip))
    out.loss.backward()
    torch.testing.assert_close(out.loss.item(), loss)
    torch.testing.assert_close(lp.grad.item(), grad)
    assert (out.clip_fraction, out.dual_clip_fraction, out.tokens) == (clip, dual, 1)


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_all_masked_batch_gives_zero(aggregation):
    lp = torch.full((2, 3), math.nan, requires_grad=True)
    out = policy_loss(
        lp,
        torch.zeros(2, 3),
        torch.ones(2),
        torch.zeros(2, 3, dtype=torch.bool),
        PolicyLossOptions(aggregation=aggregation),
    )
    assert out.loss.item() == 0.0
    out.loss.backward()
    assert (lp.grad == 0).all()
    assert (out.tokens, out.clip_fraction, out.approx_kl, out.ratio_mean) == (0, 0.0, 0.0, 0.0)


def test_zero_weight_row_counts_as_a_sequence_but_adds_nothing():
    lp = torch.zeros(2, 2, requires_grad=True)
    adv = torch.tensor([1.0, 5.0])
    out = policy_loss(lp, torch.zeros(2, 2), adv, torch.ones(2, 2), weights=torch.tensor([1.0, 0.0]))
    assert out.loss.item() == pytest.approx(-2.0 / 2)  # row 0 sums to -2; two sequences


def test_negative_weight_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        policy_loss(torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1), torch.ones(1, 2), weights=torch.tensor([-1.0]))


def test_bf16_inputs_are_computed_in_float32():
    lp = torch.zeros(1, 2, dtype=torch.bfloat16, requires_grad=True)
    out = policy_loss(lp, torch.zeros(1, 2, dtype=torch.bfloat16), torch.ones(1), torch.ones(1, 2))
    assert out.loss.dtype == torch.float32
    out.loss.backward()
    assert lp.grad.dtype == torch.bfloat16


@pytest.mark.parametrize(
    ("argument", "kwargs", "shapes"),
    [
        ("old_logprobs", {"old_logprobs": torch.zeros(2, 4)}, ("[2, 4]", "[2, 3]")),
        ("mask", {"mask": torch.ones(3, 3)}, ("[3, 3]", "[2, 3]")),
        ("advantages", {"advantages": torch.zeros(3)}, ("[3]", "[2, 3]")),
        ("weights", {"weights": torch.ones(2, 1)}, ("[2, 1]", "[2, 3]")),
        ("logprobs", {"logprobs": torch.zeros(6)}, ("[6]",)),
    ],
)
def test_shape_mismatch_names_argument_and_shapes(argument, kwargs, shapes):
    arguments = {
        "logprobs": torch.zeros(2, 3),
        "old_logprobs": torch.zeros(2, 3),
        "advantages": torch.zeros(2),
        "mask": torch.ones(2, 3),
    }
    arguments.update(kwargs)
    with pytest.raises(ValueError) as error:
        policy_loss(**arguments)
    message = str(error.value)
    assert message.startswith(argument)
    for shape in shapes:
        assert shape in message


def test_defaults_are_the_release_setting():
    options = PolicyLossOptions()
    assert (options.clip_low, options.clip_high, options.dual_clip) == (0.2, 0.28, 3.0)
    assert options.aggregation == "seq-mean-token-sum"
    assert options.token_sum_norm is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"clip_ratio": 0.2},
        {"dual_clip": 1.0},
        {"dual_clip": 0.5},
        {"clip_low": -0.1},
        {"aggregation": "sum"},
        {"token_sum_norm": 0.0},
        {"token_sum_norm": 512.0, "aggregation": "token-mean"},
    ],
)
def test_invalid_options_are_refused(kwargs):
    with pytest.raises(pydantic.ValidationError):
        PolicyLossOptions(**kwargs)
