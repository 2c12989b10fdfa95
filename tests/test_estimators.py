"""Advantage estimators (plugins/estimators/) and the turn batch they read (core/turn_batch.py)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongym.core.errors import ConfigError
from tritongym.core.plugins import get_host
from tritongym.core.turn_batch import Advantages, TurnBatch, TurnRow


def estimator(name: str, **options):
    return get_host().create("estimator", name, options)


def rows_from(table: dict[int, dict[int, list[float]]]) -> list[dict]:
    """{group: {trajectory: [reward of turn 0, turn 1, ...]}} -> TurnRow dicts (one token each)."""
    return [
        {"group": g, "trajectory": tr, "turn": t, "reward": r, "rollout_logprobs": [-1.0]}
        for g, trajectories in table.items()
        for tr, rewards in trajectories.items()
        for t, r in enumerate(rewards)
    ]


# Two prompts x four trajectories x up to three turns; some trajectories end early (ragged).
HAND_TABLE = {
    0: {0: [1.0, 0.0, 2.0], 1: [0.0, 1.0], 2: [2.0], 3: [0.0, 0.0, 1.0]},
    1: {4: [0.5, 1.5, 0.25], 5: [0.0, 0.0], 6: [1.0, 0.5], 7: [3.0]},
}
# Worked by hand from A(i,t) = G(i,t) - mean_{j != i} G(j,t); see the returns in the comments.
HAND_TRLOO = {
    # prompt 0: G turn 0 = (3, 1, 2, 1), turn 1 = (2, 1, -, 1), turn 2 = (2, -, -, 1)
    (0, 0): 5 / 3, (0, 1): 1.0, (0, 2): 1.0,
    (1, 0): -1.0, (1, 1): -0.5,
    (2, 0): 1 / 3,
    (3, 0): -1.0, (3, 1): -0.5, (3, 2): -1.0,
    # prompt 1: G turn 0 = (2.25, 0, 1.5, 3), turn 1 = (1.75, 0, 0.5, -), turn 2 = (0.25, -, -, -)
    (4, 0): 0.75, (4, 1): 1.5, (4, 2): 0.25,  # turn 2 of trajectory 4 is alone: A = G, as the release does
    (5, 0): -2.25, (5, 1): -1.125,
    (6, 0): -0.25, (6, 1): -0.375,
    (7, 0): 1.75,
}  # fmt: skip


def by_key(batch: TurnBatch, values: torch.Tensor) -> dict[tuple[int, int], float]:
    return {(int(tr), int(t)): float(v) for tr, t, v in zip(batch.trajectory, batch.turn, values)}


def test_trloo_matches_the_hand_worked_ragged_table():
    batch = TurnBatch.from_rows(rows_from(HAND_TABLE))
    got = by_key(batch, estimator("trloo").estimate(batch).per_row)
    assert got.keys() == HAND_TRLOO.keys()
    for key, want in HAND_TRLOO.items():
        assert got[key] == pytest.approx(want, abs=1e-12), key


def test_trloo_singleton_zero_and_gamma():
    batch = TurnBatch.from_rows(rows_from(HAND_TABLE))
    got = by_key(batch, estimator("trloo", singleton="zero").estimate(batch).per_row)
    assert got[(4, 2)] == 0.0 and got[(0, 0)] == pytest.approx(5 / 3)
    # gamma = 0: the return is the turn's own reward; turn 0 of prompt 0 has rewards (1, 0, 2, 0)
    got = by_key(batch, estimator("trloo", gamma=0.0).estimate(batch).per_row)
    assert got[(0, 0)] == pytest.approx(1 - 2 / 3) and got[(2, 0)] == pytest.approx(2 - 1 / 3)


def test_reward_to_go_discounts_by_turn_index():
    batch = TurnBatch.from_rows(rows_from({0: {0: [1.0, 2.0, 4.0]}}))
    assert batch.returns(0.5).tolist() == [1 + 0.5 * 2 + 0.25 * 4, 2 + 0.5 * 4, 4.0]


def test_rows_of_a_trajectory_may_come_in_any_order():
    rows = rows_from(HAND_TABLE)
    shuffled = rows[::-1]
    a = TurnBatch.from_rows(rows)
    b = TurnBatch.from_rows(shuffled)
    assert by_key(a, estimator("trloo").estimate(a).per_row) == by_key(b, estimator("trloo").estimate(b).per_row)


group_sizes = st.lists(st.integers(min_value=2, max_value=6), min_size=1, max_size=4)


@st.composite
def single_turn_groups(draw, sizes=group_sizes):
    rows, trajectory = [], 0
    for g, n in enumerate(draw(sizes)):
        for _ in range(n):
            reward = draw(st.floats(min_value=-5, max_value=5, allow_nan=False))
            rows.append({"group": g, "trajectory": trajectory, "turn": 0, "reward": reward, "rollout_logprobs": [-1.0]})
            trajectory += 1
    return rows


@settings(deadline=None, max_examples=60)
@given(single_turn_groups())
def test_rloo_is_n_over_n_minus_1_times_mean_centred_grpo_and_sums_to_zero(rows):
    batch = TurnBatch.from_rows(rows)
    rloo = estimator("rloo").estimate(batch).per_row
    grpo = estimator("grpo", normalize_std=False).estimate(batch).per_row
    for g in set(batch.group.tolist()):
        members = batch.group == g
        n = int(members.sum())
        torch.testing.assert_close(rloo[members], n / (n - 1) * grpo[members], rtol=1e-9, atol=1e-9)
        assert float(rloo[members].sum()) == pytest.approx(0.0, abs=1e-9)


@settings(deadline=None, max_examples=40)
@given(single_turn_groups(), st.randoms(use_true_random=False))
def test_permuting_rows_permutes_the_advantages(rows, rnd):
    order = list(range(len(rows)))
    rnd.shuffle(order)
    batch = TurnBatch.from_rows(rows)
    permuted = TurnBatch.from_rows([rows[i] for i in order])
    for name in ("grpo", "rloo", "trloo", "reinforce"):
        a = estimator(name).estimate(batch).per_row
        b = estimator(name).estimate(permuted).per_row
        torch.testing.assert_close(b, a[order], rtol=1e-12, atol=1e-12)


def test_grpo_normalises_by_population_std_with_epsilon():
    # Worked by hand from A_i = (G_i - mean G) / (std G + eps), eps = 1e-6 (the default).
    # Group 0, rewards (1, 0, 2): mean 1, centred (0, -1, 1); population variance (0 + 1 + 1) / 3 = 2/3,
    # std = sqrt(2/3) = 0.8164965809, so A = ±1 / 0.8164975809 = ±1.2247433714 (without eps: ±1.2247448714).
    # Group 1, rewards (2, 2): centred (0, 0), std 0: A = 0 / (0 + eps) = 0, not NaN.
    batch = TurnBatch.from_rows(rows_from({0: {0: [1.0], 1: [0.0], 2: [2.0]}, 1: {3: [2.0], 4: [2.0]}}))
    got = estimator("grpo").estimate(batch).per_row.tolist()
    assert got == pytest.approx([0.0, -1.2247433714, 1.2247433714, 0.0, 0.0], abs=1e-10)
    # unbiased: sample variance (0 + 1 + 1) / (3 - 1) = 1, std 1, so A = ±1 / 1.000001 = ±0.999999000001
    unbiased = estimator("grpo", unbiased_std=True).estimate(batch).per_row.tolist()
    assert unbiased == pytest.approx([0.0, -0.999999000001, 0.999999000001, 0.0, 0.0], abs=1e-12)
    # Dr. GRPO (no std): the centred returns themselves
    assert estimator("grpo", normalize_std=False).estimate(batch).per_row.tolist() == [0.0, -1.0, 1.0, 0.0, 0.0]


def test_reinforce_subtracts_the_batch_mean():
    batch = TurnBatch.from_rows(rows_from({0: {0: [1.0]}, 1: {1: [3.0], 2: [5.0]}}))
    assert estimator("reinforce").estimate(batch).per_row.tolist() == [-2.0, 0.0, 2.0]
    assert estimator("reinforce", baseline="none").estimate(batch).per_row.tolist() == [1.0, 3.0, 5.0]


def test_invalid_rows_get_zero_and_join_no_group():
    rows = rows_from({0: {0: [1.0], 1: [3.0], 2: [100.0]}})
    rows[2]["valid"] = False
    batch = TurnBatch.from_rows(rows)
    for name in ("grpo", "rloo", "trloo", "reinforce"):
        out = estimator(name).estimate(batch)
        assert float(out.token_advantages(batch)[2].abs().sum()) == 0.0, name
    assert estimator("rloo").estimate(batch).per_row[:2].tolist() == [-2.0, 2.0]


def test_rows_outside_the_baseline_are_compared_but_not_compared_with():
    batch = TurnBatch.from_rows(rows_from({0: {0: [1.0], 1: [3.0], 2: [8.0]}}))
    batch = batch.with_(baseline=torch.tensor([True, True, False]))
    got = estimator("rloo").estimate(batch).per_row.tolist()
    assert got == [1.0 - 3.0, 3.0 - 1.0, 8.0 - 2.0]


# --- unbiasedness on a bandit ---------------------------------------------------------------------------

ARM_REWARDS = torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
LOGITS = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)


def _grad_log_pi(arm: int) -> torch.Tensor:
    probs = torch.softmax(LOGITS, 0)
    return torch.nn.functional.one_hot(torch.tensor(arm), 3).double() - probs


def _true_gradient() -> torch.Tensor:
    logits = LOGITS.clone().requires_grad_(True)
    (torch.softmax(logits, 0) * ARM_REWARDS).sum().backward()
    return logits.grad


def _group_estimate(name: str, arms: list[int], **options) -> torch.Tensor:
    rows = [
        {"group": 0, "trajectory": i, "turn": 0, "reward": float(ARM_REWARDS[a]), "rollout_logprobs": [-1.0]}
        for i, a in enumerate(arms)
    ]
    batch = TurnBatch.from_rows(rows)
    advantages = estimator(name, **options).estimate(batch).per_row
    return sum(float(advantages[i]) * _grad_log_pi(a) for i, a in enumerate(arms)) / len(arms)


@pytest.mark.parametrize("n", [2, 4])
def test_rloo_and_trloo_are_unbiased_and_grpo_is_shrunk_exactly(n):
    # Exact expectation over every possible group of n pulls, weighted by its probability.
    probs = torch.softmax(LOGITS, 0)
    expected = {"rloo": torch.zeros(3, dtype=torch.float64), "trloo": torch.zeros(3, dtype=torch.float64)}
    expected["grpo"] = torch.zeros(3, dtype=torch.float64)
    for arms in itertools.product(range(3), repeat=n):
        p = math.prod(float(probs[a]) for a in arms)
        expected["rloo"] += p * _group_estimate("rloo", list(arms))
        expected["trloo"] += p * _group_estimate("trloo", list(arms))
        expected["grpo"] += p * _group_estimate("grpo", list(arms), normalize_std=False)
    truth = _true_gradient()
    torch.testing.assert_close(expected["rloo"], truth, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(expected["trloo"], truth, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(expected["grpo"], (n - 1) / n * truth, rtol=1e-9, atol=1e-12)


def test_monte_carlo_gradient_estimates_on_a_bandit():
    # The same claim by sampling, as a user would see it: many groups of n = 4 pulls in one batch.
    n, groups = 4, 3000
    gen = torch.Generator().manual_seed(7)
    arms = torch.multinomial(torch.softmax(LOGITS, 0), n * groups, replacement=True, generator=gen)
    rows = [
        {"group": i // n, "trajectory": i, "turn": 0, "reward": float(ARM_REWARDS[a]), "rollout_logprobs": [-1.0]}
        for i, a in enumerate(arms.tolist())
    ]
    batch = TurnBatch.from_rows(rows)
    grads = torch.stack([_grad_log_pi(a) for a in range(len(LOGITS))])[arms]  # each pull's: its arm's row
    truth = _true_gradient()
    per_row = {}
    for name, options, factor in [("rloo", {}, 1.0), ("grpo", {"normalize_std": False}, (n - 1) / n)]:
        per_row[name] = estimator(name, **options).estimate(batch).per_row
        per_sample = per_row[name][:, None] * grads
        per_group = per_sample.reshape(groups, n, 3).mean(1)
        mean = per_group.mean(0)
        stderr = per_group.std(0) / math.sqrt(groups)
        assert bool(torch.all((mean - factor * truth).abs() < 4 * stderr + 1e-12)), (name, mean, factor * truth)
    # and the two differ by the predicted factor, not by noise: GRPO is RLOO scaled by (n-1)/n per group
    torch.testing.assert_close(per_row["grpo"], (n - 1) / n * per_row["rloo"])


# --- tokens ---------------------------------------------------------------------------------------------


@settings(deadline=None, max_examples=40)
@given(st.integers(min_value=0, max_value=5), st.floats(allow_nan=True, allow_infinity=True))
def test_padding_and_feedback_tokens_change_nothing_at_policy_tokens(extra, junk):
    base = [
        TurnRow(group=0, trajectory=0, turn=0, reward=1.0, rollout_logprobs=[-0.5, -0.7]),
        TurnRow(group=0, trajectory=1, turn=0, reward=0.0, rollout_logprobs=[-0.1, -0.2, -0.3]),
    ]
    # the same rows with feedback tokens (not policy) inserted and extra padding columns
    noisy = [
        TurnRow(
            group=0,
            trajectory=0,
            turn=0,
            reward=1.0,
            rollout_logprobs=[-0.5, junk, -0.7] + [junk] * extra,
            policy_mask=[True, False, True] + [False] * extra,
        ),
        TurnRow(group=0, trajectory=1, turn=0, reward=0.0, rollout_logprobs=[-0.1, -0.2, -0.3]),
    ]
    a_batch, b_batch = TurnBatch.from_rows(base), TurnBatch.from_rows(noisy)
    for name in ("grpo", "rloo", "trloo", "reinforce"):
        a = estimator(name).estimate(a_batch).token_advantages(a_batch)
        b = estimator(name).estimate(b_batch).token_advantages(b_batch)
        assert b[0].tolist() == [a[0, 0], 0.0, a[0, 1]] + [0.0] * (b.shape[1] - 3)
        assert b[1, :3].tolist() == a[1, :3].tolist()


def test_per_token_advantages_are_zero_outside_policy_tokens():
    batch = TurnBatch.from_rows(
        [TurnRow(group=0, trajectory=0, turn=0, reward=1.0, rollout_logprobs=[0.0, 0.0], policy_mask=[True, False])]
    )
    out = Advantages(per_row=torch.tensor([2.0], dtype=torch.float64), per_token=torch.full((1, 2), 5.0))
    assert out.token_advantages(batch).tolist() == [[5.0, 0.0]]


# --- the batch model ------------------------------------------------------------------------------------


def test_batch_refuses_rows_that_contradict_each_other():
    with pytest.raises(ValueError, match="both turn 0 of trajectory 0"):
        TurnBatch.from_rows(rows_from({0: {0: [1.0]}}) * 2)
    with pytest.raises(ValueError, match="trajectory 0 appears in groups 0 and 1"):
        TurnBatch.from_rows([*rows_from({0: {0: [1.0]}}), {**rows_from({1: {0: [1.0, 2.0]}})[1]}])
    with pytest.raises(ValueError, match="policy_mask has 1 entries but rollout_logprobs has 2"):
        TurnRow(group=0, trajectory=0, turn=0, reward=0.0, rollout_logprobs=[0.0, 0.0], policy_mask=[True])
    with pytest.raises(ValueError, match="train_logprobs must be given for every row or for none"):
        TurnBatch.from_rows(
            [
                {"group": 0, "trajectory": 0, "turn": 0, "reward": 0.0, "train_logprobs": []},
                {"group": 0, "trajectory": 1, "turn": 0, "reward": 0.0},
            ]
        )
    with pytest.raises(ValueError, match="reward must be finite"):
        TurnRow(group=0, trajectory=0, turn=0, reward=math.inf)


def test_unknown_estimator_option_is_a_config_error_naming_the_estimator():
    with pytest.raises(ConfigError, match="estimator 'trloo'.*gama"):
        estimator("trloo", gama=1.0)
    with pytest.raises(ConfigError, match="estimator 'grpo'.*epsilon"):
        estimator("grpo", epsilon=0)
