"""The `hrd` estimator (plugins/estimators/hrd.py) and the code spans it splits on (core/learn/spans.py).

HRD's math against hand-worked numbers, its unbiasedness per span (exact expectation on a bandit),
permutation equivariance and masking as properties, and the code span of real responses under a real
tokenizer.  A real training step with `hrd` is in tests/test_trainer.py."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongym.core.errors import ConfigError, PluginError
from tritongym.core.learn.interaction import extract_code
from tritongym.core.learn.learning import LearningSignalBuilder
from tritongym.core.plugins import get_host
from tritongym.core.turn_batch import TurnBatch, TurnRow


def close(got: torch.Tensor, want: list) -> None:
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64), rtol=0, atol=1e-12)


def hrd(**options):
    return get_host().create("estimator", "hrd", options)


def row(group, trajectory, correct, speedup=None, turn=0, mask=(False, True), **extra) -> dict:
    """A turn whose tokens are plan (False) or code (True) as `mask` says; components as the gym stores them."""
    components = {"correctness": float(correct)}
    if speedup is not None:
        components["speedup"] = float(speedup)
    return {
        "group": group,
        "trajectory": trajectory,
        "turn": turn,
        "reward": float(correct) + (speedup or 0.0),
        "components": components,
        "rollout_logprobs": [-1.0] * len(mask),
        "code_mask": list(mask),
        **extra,
    }


# --- the math, by hand ------------------------------------------------------------------------------------


def test_hrd_matches_hand_worked_advantages():
    # group 0: (correct, speedup) = (1, 2), (0, -), (1, 0.5), (1, 1.5); tokens plan, plan, code, code
    # group 1: a single-turn group of two, one hacked (its turn reward is the penalty -1 in both spans)
    mask = (False, False, True, True)
    rows = [
        row(0, 0, 1, 2.0, mask=mask),
        row(0, 1, 0, None, mask=mask),
        row(0, 2, 1, 0.5, mask=mask),
        row(0, 3, 1, 1.5, mask=mask),
        row(1, 4, 1, 3.0, mask=mask),
        {**row(1, 5, 0, 0.0, mask=mask), "reward": -1.0, "hacked": True},
    ]
    batch = TurnBatch.from_rows(rows)
    out = hrd().estimate(batch)
    # plan rewards 2, 0 (absent), 0.5, 1.5: leave-one-out A = R - mean of the other three
    plan = [2 - 2 / 3, 0 - 4 / 3, 0.5 - 3.5 / 3, 1.5 - 2.5 / 3, 3 - (-1), -1 - 3]
    code = [1 - 2 / 3, 0 - 1, 1 - 2 / 3, 1 - 2 / 3, 1 - (-1), -1 - 1]
    for i in range(6):
        want = [0.1 * plan[i], 0.1 * plan[i], code[i], code[i]]
        assert out.per_token[i].tolist() == pytest.approx(want, abs=1e-12), i
        assert float(out.per_row[i]) == pytest.approx(sum(want) / 4, abs=1e-12)
    assert out.metrics["code_tokens"] == 0.5 and out.metrics["plan_absent"] == pytest.approx(1 / 6)
    torch.testing.assert_close(out.token_advantages(batch), out.per_token)

    # TritonRL's GRPO: (R - mean) / (std + eps) per span, population std; alpha and weights as configured
    grpo = hrd(baseline="mean", normalize_std=True, alpha=0.5, code_components={"correctness": 2.0})
    got = grpo.estimate(batch).per_token
    # plan rewards (2, 0, 0.5, 1.5): mean 1, centred (1, -1, -0.5, 0.5); population variance
    # (1 + 1 + 0.25 + 0.25) / 4 = 0.625, std 0.7905694150, so A = centred / 0.7905704150 =
    # (1.2649094641, -1.2649094641, -0.6324547320, 0.6324547320), times alpha 0.5 on plan tokens
    assert got[:4, 0].tolist() == pytest.approx([0.6324547320, -0.6324547320, -0.3162273660, 0.3162273660], abs=1e-9)
    # code rewards 2 x correctness = (2, 0, 2, 2): mean 1.5, centred (0.5, -1.5, 0.5, 0.5); variance
    # (0.25 + 2.25 + 0.25 + 0.25) / 4 = 0.75, std 0.8660254038, so A = centred / 0.8660264038
    assert got[:4, 3].tolist() == pytest.approx([0.5773496025, -1.7320488076, 0.5773496025, 0.5773496025], abs=1e-9)


def test_hrd_on_multi_turn_rewards_to_go_and_a_lone_turn():
    # trajectory 0: turns (correct 0, speed -) then (1, 2); trajectory 1: (1, 1) only
    rows = [row(0, 0, 0, None, turn=0), row(0, 0, 1, 2.0, turn=1), row(0, 1, 1, 1.0, turn=0)]
    batch = TurnBatch.from_rows(rows)
    out = hrd().estimate(batch)
    # turn 0: plan G = (0 + 2, 1) -> (1, -1); code G = (0 + 1, 1) -> (0, 0); turn 1 is alone: 0 (singleton zero)
    close(out.per_token, [[0.1, 0.0], [0.0, 0.0], [-0.1, 0.0]])
    lone = hrd(singleton="return").estimate(batch).per_token
    assert lone[1].tolist() == pytest.approx([0.2, 1.0])
    turn_only = hrd(returns="reward").estimate(batch).per_token  # each turn's own reward
    assert turn_only[0].tolist() == pytest.approx([-0.1, -1.0])


def test_a_response_without_code_is_all_plan_and_plan_only_weighting():
    rows = [row(0, 0, 1, 2.0, mask=(False, False)), row(0, 1, 0, None, mask=(False, True))]
    out = hrd(alpha=1.0).estimate(TurnBatch.from_rows(rows))
    close(out.per_token, [[2.0, 2.0], [-2.0, -1.0]])


# --- unbiasedness per span on a bandit ---------------------------------------------------------------------

ARMS = [(1.0, 2.0), (0.0, 0.0), (1.0, 0.5)]  # (correctness, speedup) of each arm
LOGITS = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)


def _grad_log_pi(arm: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(arm), 3).double() - torch.softmax(LOGITS, 0)


def _true_gradient(component: int) -> torch.Tensor:
    logits = LOGITS.clone().requires_grad_(True)
    values = torch.tensor([arm[component] for arm in ARMS], dtype=torch.float64)
    (torch.softmax(logits, 0) * values).sum().backward()
    return logits.grad


def _span_estimates(arms: list[int], **options) -> tuple[torch.Tensor, torch.Tensor]:
    """(plan, code) policy-gradient estimates of one group: Σ over that span's tokens of A·∇log π, / n."""
    batch = TurnBatch.from_rows([row(0, i, *ARMS[a]) for i, a in enumerate(arms)])
    tokens = hrd(**options).estimate(batch).token_advantages(batch)
    plan = sum(float(tokens[i, 0]) * _grad_log_pi(a) for i, a in enumerate(arms)) / len(arms)
    code = sum(float(tokens[i, 1]) * _grad_log_pi(a) for i, a in enumerate(arms)) / len(arms)
    return plan, code


@pytest.mark.parametrize("n", [2, 3])
def test_each_span_is_an_unbiased_gradient_of_its_own_reward(n):
    # exact expectation over every group of n pulls, weighted by its probability
    probs = torch.softmax(LOGITS, 0)
    expected = {key: torch.zeros(3, dtype=torch.float64) for key in ("plan", "code", "mean_plan", "mean_code")}
    for arms in itertools.product(range(3), repeat=n):
        p = math.prod(float(probs[a]) for a in arms)
        plan, code = _span_estimates(list(arms))
        expected["plan"] += p * plan
        expected["code"] += p * code
        plan, code = _span_estimates(list(arms), baseline="mean")
        expected["mean_plan"] += p * plan
        expected["mean_code"] += p * code
    speed, correct = _true_gradient(1), _true_gradient(0)
    torch.testing.assert_close(expected["plan"], 0.1 * speed, rtol=1e-9, atol=1e-12)  # alpha · ∇E[R_plan]
    torch.testing.assert_close(expected["code"], correct, rtol=1e-9, atol=1e-12)
    # a mean that includes the sample shrinks each span by (n - 1) / n, as GRPO does
    torch.testing.assert_close(expected["mean_plan"], (n - 1) / n * 0.1 * speed, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(expected["mean_code"], (n - 1) / n * correct, rtol=1e-9, atol=1e-12)


# --- properties ---------------------------------------------------------------------------------------------


@st.composite
def hrd_rows(draw):
    rows, trajectory = [], 0
    for g, size in enumerate(draw(st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=3))):
        for _ in range(size):
            width = draw(st.integers(min_value=1, max_value=5))
            mask = draw(st.lists(st.booleans(), min_size=width, max_size=width))
            correct = draw(st.sampled_from([0.0, 1.0]))
            speed = draw(st.none() | st.floats(min_value=0, max_value=3, allow_nan=False))
            rows.append(row(g, trajectory, correct, speed, mask=tuple(mask), hacked=draw(st.booleans())))
            trajectory += 1
    return rows


OPTION_SETS = [{}, {"baseline": "mean", "normalize_std": True}, {"singleton": "return", "alpha": 0.7}]


@settings(deadline=None, max_examples=40)
@given(hrd_rows(), st.randoms(use_true_random=False))
def test_permuting_rows_permutes_the_token_advantages(rows, rnd):
    order = list(range(len(rows)))
    rnd.shuffle(order)
    batch = TurnBatch.from_rows(rows)
    permuted = TurnBatch.from_rows([rows[i] for i in order])
    for options in OPTION_SETS:
        a = hrd(**options).estimate(batch)
        b = hrd(**options).estimate(permuted)
        torch.testing.assert_close(b.token_advantages(permuted), a.token_advantages(batch)[order], rtol=0, atol=1e-12)
        torch.testing.assert_close(b.per_row, a.per_row[order], rtol=0, atol=1e-12)


@settings(deadline=None, max_examples=40)
@given(hrd_rows(), st.integers(min_value=0, max_value=4), st.floats(allow_nan=True, allow_infinity=True))
def test_padding_feedback_and_invalid_rows_change_nothing_at_policy_tokens(rows, extra, junk):
    # the same rows with a feedback token (not policy, any log-prob, either span) after each token and
    # extra padding, plus an invalid row with a huge reward in the first group
    noisy = []
    for r in rows:
        mask = r["code_mask"]
        noisy.append(
            {
                **r,
                "rollout_logprobs": [v for x in r["rollout_logprobs"] for v in (x, junk)] + [junk] * extra,
                "policy_mask": [p for _ in mask for p in (True, False)] + [False] * extra,
                "code_mask": [c for m in mask for c in (m, not m)] + [True] * extra,
            }
        )
    noisy.append({**row(0, 10_000, 1, 3.0), "valid": False, "reward": 1e9})
    a_batch, b_batch = TurnBatch.from_rows(rows), TurnBatch.from_rows(noisy)
    for options in OPTION_SETS:
        a = hrd(**options).estimate(a_batch).token_advantages(a_batch)
        b = hrd(**options).estimate(b_batch).token_advantages(b_batch)
        assert float(b[-1].abs().sum()) == 0.0  # the invalid row
        for i, r in enumerate(rows):
            n = len(r["code_mask"])
            torch.testing.assert_close(b[i, 0 : 2 * n : 2], a[i, :n], rtol=0, atol=1e-12)
            assert float(b[i, 1::2].abs().sum()) == 0.0  # feedback and padding tokens learn nothing


@settings(deadline=None, max_examples=30)
@given(hrd_rows())
def test_each_span_reads_only_its_own_components(rows):
    # doubling every speedup changes no code-token advantage; flipping correctness no plan-token advantage
    # (hacked rows take their turn reward in both spans and are left as they are)
    batch = TurnBatch.from_rows(rows)
    faster = TurnBatch.from_rows(
        [
            {
                **r,
                "components": {
                    k: v * (2 if k == "speedup" and not r["hacked"] else 1) for k, v in r["components"].items()
                },
            }
            for r in rows
        ]
    )
    flipped = TurnBatch.from_rows(
        [
            {
                **r,
                "components": {
                    **r["components"],
                    "correctness": r["components"]["correctness"]
                    if r["hacked"]
                    else 1 - r["components"]["correctness"],
                },
            }
            for r in rows
        ]
    )
    base = hrd().estimate(batch).token_advantages(batch)
    code = batch.code_mask
    torch.testing.assert_close(hrd().estimate(faster).token_advantages(faster)[code], base[code])
    torch.testing.assert_close(hrd().estimate(flipped).token_advantages(flipped)[~code], base[~code])


# --- validation ----------------------------------------------------------------------------------------------


def test_options_are_validated_and_a_batch_without_spans_is_refused():
    with pytest.raises(ConfigError, match="estimator 'hrd'.*normalize_std applies to baseline 'mean'"):
        hrd(normalize_std=True)
    with pytest.raises(ConfigError, match="estimator 'hrd'.*plan_components"):
        hrd(plan_components={})
    with pytest.raises(ConfigError, match="estimator 'hrd'.*alpha"):
        hrd(alpha=-1)
    rows = [TurnRow(group=0, trajectory=i, turn=0, reward=float(i), rollout_logprobs=[-1.0]) for i in range(2)]
    with pytest.raises(PluginError, match="estimator 'hrd'.*needs each response's code span"):
        LearningSignalBuilder({"estimator": "hrd"}).build(TurnBatch.from_rows(rows))
    with pytest.raises(ValueError, match="code_mask must be given for every row or for none"):
        TurnBatch.from_rows([row(0, 0, 1), {k: v for k, v in row(0, 1, 0).items() if k != "code_mask"}])
    with pytest.raises(ValueError, match="code_mask has 1 entries but rollout_logprobs has 2"):
        TurnRow(group=0, trajectory=0, turn=0, reward=0.0, rollout_logprobs=[0.0, 0.0], code_mask=[True])


def test_the_learning_signal_carries_hrds_token_advantages():
    rows = [row(0, 0, 1, 2.0, mask=(False, True, True)), row(0, 1, 0, None, mask=(False, False, True))]
    signal = LearningSignalBuilder({"estimator": "hrd"}).build(TurnBatch.from_rows(rows))
    close(signal.advantages, [[0.2, 1.0, 1.0], [-0.2, -0.2, -1.0]])
    assert signal.row_advantages.tolist() == pytest.approx([2.2 / 3, -1.4 / 3])


# --- code spans ----------------------------------------------------------------------------------------------


def test_the_extractor_says_where_its_block_is():
    text = "Plan: one program per row.\r\n```python\r\nimport triton\r\nclass ModelNew: ...\r\n```\r\nThat's it."
    found = extract_code(text)
    start, end = found.span
    assert text[start:end] == "```python\r\nimport triton\r\nclass ModelNew: ...\r\n```"
    assert found.code == "import triton\nclass ModelNew: ..."
    nested = "x\n````markdown\n```python\ninner\n```\n````\n```python\nlast = 1\n"
    assert nested[slice(*extract_code(nested).span)] == "```python\nlast = 1\n"  # unclosed: to the end
    assert extract_code("no code at all").span is None and extract_code("```python\n\n```").span is None


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    pytest.importorskip("transformers")
    from tritongym.core.generation import ModelSpec, TinyModelSpec
    from tritongym.core.learn.model_loading import load_tokenizer

    return load_tokenizer(ModelSpec(tiny=TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny")))


def _decode(tokenizer):
    return lambda ids: tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)


RESPONSE = (
    "I will launch one program per block of 1024 elements and take the maximum with zero.\n"
    "```python\nimport torch\nimport triton\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n```\n"
    "This keeps the whole computation in Triton."
)


def test_code_tokens_are_exactly_the_fenced_block_under_a_real_tokenizer(tokenizer):
    from tritongym.core.learn.spans import code_token_mask

    ids = tokenizer(RESPONSE, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    mask = code_token_mask(_decode(tokenizer), ids)
    assert len(mask) == len(ids) and not mask[0] and not mask[-1]  # plan first, eos is not code
    first, last = mask.index(True), len(mask) - 1 - mask[::-1].index(True)
    assert all(mask[first : last + 1])  # one contiguous span
    decode = _decode(tokenizer)
    block = RESPONSE[RESPONSE.index("```python") : RESPONSE.index("```\n", RESPONSE.index("pass")) + 3]
    code_text = decode(ids[first : last + 1])
    assert block in code_text and len(code_text) - len(block) <= 2  # at most the boundary tokens' extra chars
    assert decode(ids[:first]).startswith("I will launch") and "```" not in decode(ids[:first])
    assert "```" not in decode(ids[last + 1 :]) and "whole computation" in decode(ids[last + 1 :])
    # the same answer started by a prefill that opened the fence: code from the first token
    body = RESPONSE[RESPONSE.index("import torch") :]
    ids = tokenizer(body, add_special_tokens=False)["input_ids"]
    mask = code_token_mask(decode, ids, prefill="```python\n")
    assert mask[0] and not mask[-1] and "```" in decode([i for i, m in zip(ids, mask) if m])
    assert code_token_mask(decode, tokenizer("no code here", add_special_tokens=False)["input_ids"]) == [False] * len(
        tokenizer("no code here", add_special_tokens=False)["input_ids"]
    )
    assert code_token_mask(decode, []) == []
