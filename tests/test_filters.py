"""The built-in sample filters (mrs, prs, meaningful-turn, low-variance-group): their formulas on hand-made
tables, their invariants over random batches, their options, and their use through the learning host."""

from __future__ import annotations

import importlib.util
import math
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tritongym.core.errors import ConfigError, PluginError
from tritongym.core.learn.learning import LearningSignalBuilder
from tritongym.core.plugins import DEFAULT_PLUGINS, PluginHost
from tritongym.core.turn_batch import FilterDecision, TurnBatch
from tritongym.plugins.estimators.low_variance_group import LowVarianceGroup
from tritongym.plugins.estimators.meaningful_turn import MeaningfulTurn
from tritongym.plugins.estimators.mrs import MRS
from tritongym.plugins.estimators.prs import PRS

FILTER_MODULES = (
    "tritongym.plugins.estimators.mrs",
    "tritongym.plugins.estimators.prs",
    "tritongym.plugins.estimators.meaningful_turn",
    "tritongym.plugins.estimators.low_variance_group",
)
GRANULARITIES = ["trajectory", "turn"]
MODES = ["geometric", "sequence", "token-truncate"]

ESTIMATOR_PLUGIN = '''
import torch

from tritongym import hookimpl
from tritongym.core.interfaces import AdvantageEstimator
from tritongym.core.turn_batch import Advantages


class GroupMean(AdvantageEstimator):
    """Test estimator: the turn's reward minus the mean reward of its prompt group's baseline rows."""

    name = "test-group-mean"

    def estimate(self, batch):
        advantages = torch.zeros_like(batch.reward)
        for rows in batch.index_groups([batch.group]):
            members = batch.baseline[rows]
            mean = batch.reward[rows][members].mean() if bool(members.any()) else 0.0
            advantages[rows] = batch.reward[rows] - mean
        return Advantages(per_row=advantages)


@hookimpl
def register_estimators(register):
    register(GroupMean)
'''


@pytest.fixture
def host(tmp_path):
    """Built-ins plus the four filters, TRLOO where its module exists, and a test estimator as a fallback."""
    extra = tuple(m for m in ("tritongym.plugins.estimators.trloo",) if importlib.util.find_spec(m) is not None)
    path = tmp_path / "group_mean_estimator.py"
    path.write_text(textwrap.dedent(ESTIMATOR_PLUGIN))
    builtins = tuple(dict.fromkeys((*DEFAULT_PLUGINS, *FILTER_MODULES, *extra)))
    return PluginHost(builtins=builtins, extra_plugins=[str(path)], load_entry_points=False)


def estimator_of(host: PluginHost) -> str:
    return "trloo" if "trloo" in host.names("estimator") else "test-group-mean"


def row(group: int, trajectory: int, turn: int, reward: float = 0.0, **fields) -> dict:
    return {"group": group, "trajectory": trajectory, "turn": turn, "reward": reward, **fields}


def decide(cls, batch: TurnBatch, options: dict | None = None, seed: int = 0) -> FilterDecision:
    sample_filter = cls.from_options(options or {})
    decision = sample_filter.decide(batch, torch.Generator().manual_seed(seed))
    decision.validate(batch, cls.name)
    return decision


def test_filters_register_like_plugins(host):
    names = {"mrs", "prs", "meaningful-turn", "low-variance-group"}
    assert names <= set(host.names("sample_filter"))
    for name in names:
        registered = host.get("sample_filter", name)
        assert registered.plugin in FILTER_MODULES and registered.doc
        assert registered.cls.level in ("turn", "group")


# --- mrs ------------------------------------------------------------------------------------------------


def mrs_rows(log_ratios: list[list[float]], trajectory: int = 0, group: int = 0, **fields) -> list[dict]:
    """One trajectory, one turn per list: rollout log-probs -1.0 - k / 10, train = rollout + ℓ."""
    rows = []
    for turn, ells in enumerate(log_ratios):
        rollout = [-1.0 - k / 10 for k in range(len(ells))]
        train = [r + ell for r, ell in zip(rollout, ells)]
        rows.append(row(group, trajectory, turn, rollout_logprobs=rollout, train_logprobs=train, **fields))
    return rows


@st.composite
def random_rows(draw, identical: bool):
    """Ragged trajectories in a few groups with random policy masks and some padding rows; train log-probs
    equal to the rollout ones (`identical`) or off by up to ±3 nats."""
    rows, trajectory = [], 0
    logprob = st.floats(-20.0, 0.0, allow_nan=False)
    for group in range(draw(st.integers(1, 3))):
        for _ in range(draw(st.integers(1, 3))):
            for turn in range(draw(st.integers(1, 3))):
                n = draw(st.integers(0, 6))
                rollout = draw(st.lists(logprob, min_size=n, max_size=n))
                if identical:
                    train = list(rollout)
                else:
                    shift = draw(st.lists(st.floats(-3.0, 3.0, allow_nan=False), min_size=n, max_size=n))
                    train = [r + s for r, s in zip(rollout, shift)]
                mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
                valid = draw(st.sampled_from([True, True, True, False]))
                rows.append(
                    row(
                        group,
                        trajectory,
                        turn,
                        valid=valid,
                        rollout_logprobs=rollout,
                        train_logprobs=train,
                        policy_mask=mask,
                    )
                )
            trajectory += 1
    return rows


@settings(deadline=None, max_examples=40)
@given(random_rows(identical=True))
def test_mrs_identical_logprobs_keep_everything(rows):
    batch = TurnBatch.from_rows(rows)
    for granularity in GRANULARITIES:
        for mode in MODES:
            decision = decide(MRS, batch, {"granularity": granularity, "mode": mode})
            assert bool(decision.keep.all()), (granularity, mode)
            if mode == "token-truncate":
                assert decision.level == "token"
                assert torch.equal(decision.weights, torch.ones_like(decision.weights))
            else:
                assert decision.level == "turn" and decision.weights is None
                assert decision.metrics["band_rejected"] == 0.0 or math.isnan(decision.metrics["band_rejected"])
            if bool(batch.tokens.any()):
                assert decision.metrics["kl_k3"] == 0.0


@settings(deadline=None, max_examples=40)
@given(random_rows(identical=False), st.sampled_from([math.nan, 1e30, -1e30, math.inf]))
def test_mrs_ignores_whatever_non_policy_tokens_hold(rows, garbage):
    """Padding, tool-output tokens and invalid rows may hold NaN or huge numbers: nothing changes."""
    clean = TurnBatch.from_rows(rows)
    dirty_rows = []
    for r in rows:
        mask = r["policy_mask"]
        r = dict(r)
        for key in ("rollout_logprobs", "train_logprobs"):
            r[key] = [v if (ok and r["valid"]) else garbage for v, ok in zip(r[key], mask)]
        dirty_rows.append(r)
    dirty = TurnBatch.from_rows(dirty_rows)
    options = {"lower": 0.5, "upper": 2.0}
    for granularity in GRANULARITIES:
        for mode in MODES:
            opts = {**options, "granularity": granularity, "mode": mode}
            a, b = decide(MRS, clean, opts), decide(MRS, dirty, opts)
            assert torch.equal(a.keep, b.keep)
            assert (a.weights is None) == (b.weights is None)
            if a.weights is not None:
                assert torch.equal(a.weights, b.weights)
            assert a.metrics.keys() == b.metrics.keys()
            for key in a.metrics:
                assert a.metrics[key] == pytest.approx(b.metrics[key], nan_ok=True)


def test_mrs_band_on_the_trajectory_geometric_mean():
    # mean ℓ over the trajectory's 4 policy tokens is 0.002: w = exp(0.002) ≈ 1.002 > 1.001
    rows = mrs_rows([[0.001, 0.003], [0.002, 0.002]]) + mrs_rows([[0.0, 0.0], [0.0]], trajectory=1)
    batch = TurnBatch.from_rows(rows)
    decision = decide(MRS, batch)
    assert decision.keep.tolist() == [False, False, True, True]
    assert decision.metrics["band_rejected"] == 0.5
    assert decision.metrics["w_max"] == pytest.approx(1.0020020013)  # e^0.002 = 1 + 0.002 + 0.002²/2 + ...
    assert decision.metrics["w_min"] == pytest.approx(1.0)
    assert decide(MRS, batch, {"upper": 1.01}).keep.all()
    # mirrored below the band
    below = TurnBatch.from_rows(mrs_rows([[-0.002, -0.002]]))
    assert not decide(MRS, below).keep.any()
    assert decide(MRS, below, {"lower": 0.99}).keep.all()


def test_mrs_granularity_and_sequence_mode():
    # turn 0: 2 tokens at 0.002, turn 1: 6 tokens at 0 -> trajectory mean 0.0005, turn 0 alone 0.002
    batch = TurnBatch.from_rows(mrs_rows([[0.002, 0.002], [0.0] * 6]))
    assert decide(MRS, batch).keep.tolist() == [True, True]
    assert decide(MRS, batch, {"granularity": "turn"}).keep.tolist() == [False, True]
    # sequence: w = exp(Σ ℓ) = exp(0.004) leaves the default band; the geometric mean does not
    assert decide(MRS, batch, {"mode": "sequence"}).keep.tolist() == [False, False]
    assert decide(MRS, batch, {"mode": "sequence", "granularity": "turn"}).keep.tolist() == [False, True]
    assert decide(MRS, batch, {"mode": "sequence", "lower": 0.9, "upper": 1.1}).keep.all()


def test_mrs_units_without_policy_tokens_are_kept():
    rows = [
        row(0, 0, 0, rollout_logprobs=[], train_logprobs=[]),
        row(0, 0, 1, rollout_logprobs=[-1.0, -2.0], train_logprobs=[5.0, 5.0], policy_mask=[False, False]),
        row(0, 1, 0, rollout_logprobs=[-1.0], train_logprobs=[-1.0]),
    ]
    batch = TurnBatch.from_rows(rows)
    for granularity in GRANULARITIES:
        for mode in ("geometric", "sequence"):
            decision = decide(MRS, batch, {"granularity": granularity, "mode": mode})
            assert decision.keep.all()
            assert decision.metrics["w_min"] == decision.metrics["w_max"] == 1.0


def test_mrs_veto_rejects_only_the_offending_turn():
    tiny = math.log(1e-5)  # one token the trainer finds 10^5 times less likely than the engine did
    rows = mrs_rows([[0.0] * 4, [0.0, tiny, 0.0, 0.0], [0.0] * 4])
    batch = TurnBatch.from_rows(rows)
    wide = {"lower": 0.1, "upper": 10.0}  # the trajectory's mean (−11.5 / 12) stays inside this band
    decision = decide(MRS, batch, wide)
    assert decision.keep.tolist() == [True, False, True]
    assert decision.metrics["veto_rejected"] == pytest.approx(1 / 3)
    assert decision.metrics["band_rejected"] == 0.0
    assert decide(MRS, batch, {**wide, "granularity": "turn", "upper": 1e6, "lower": 1e-6}).keep.tolist() == [
        True,
        False,
        True,
    ]
    assert decide(MRS, batch, {**wide, "veto": None}).keep.all()
    assert decide(MRS, batch, {**wide, "veto": 1e-6}).keep.all()
    # at default bounds the band rejects the whole trajectory as well
    assert not decide(MRS, batch).keep.any()
    # token-truncate keeps the other turns and masks every token of the vetoed one
    truncated = decide(MRS, batch, {"mode": "token-truncate"})
    assert truncated.keep.all(dim=1).tolist() == [True, False, True]
    assert not truncated.keep[1].any()


def test_mrs_token_truncate_weights():
    # ℓ = ln(π_train / π_rollout) per token, chosen so the ratios exp ℓ are round numbers; the fifth token is
    # not the policy's (a tool output) and holds a ratio of e^7 that must not matter.
    ells = [0.0, math.log(1.5), math.log(3.0), -math.log(2.0), 7.0]
    train = [-2.0 + e for e in ells]
    rows = [row(0, 0, 0, rollout_logprobs=[-2.0] * 5, train_logprobs=train, policy_mask=[True] * 4 + [False])]
    batch = TurnBatch.from_rows(rows)
    decision = decide(MRS, batch, {"mode": "token-truncate"})
    assert decision.level == "token" and decision.keep.all()
    # weights min(ratio, 2): ratios (1, 1.5, 3, 0.5) -> (1, 1.5, 2, 0.5); the non-policy token keeps weight 1
    assert decision.weights[0].tolist() == pytest.approx([1.0, 1.5, 2.0, 0.5, 1.0], abs=1e-12)
    assert decision.metrics["truncated"] == 0.25  # 1 of the 4 policy tokens (ratio 3) was capped
    # k3 = ratio - 1 - ℓ per policy token: 0, 0.5 - 0.4054651081 = 0.0945348919, 2 - 1.0986122887 =
    # 0.9013877113, -0.5 + 0.6931471806 = 0.1931471806; their mean 1.1890697838 / 4 = 0.2972674459
    assert decision.metrics["kl_k3"] == pytest.approx(0.2972674459, abs=1e-10)
    capped = decide(MRS, batch, {"mode": "token-truncate", "truncate": 1.2})
    assert capped.weights[0].tolist() == pytest.approx([1.0, 1.2, 1.2, 0.5, 1.0], abs=1e-12)
    assert capped.metrics["truncated"] == 0.5  # ratios 1.5 and 3 exceed 1.2


def test_mrs_needs_train_logprobs(host):
    batch = TurnBatch.from_rows([row(0, 0, 0, rollout_logprobs=[-1.0, -2.0])])
    with pytest.raises(ValueError, match="recompute log-probs"):
        MRS.from_options({}).decide(batch, torch.Generator())
    builder = LearningSignalBuilder({"estimator": estimator_of(host), "filters": {"mrs": {}}}, host=host)
    with pytest.raises(PluginError, match=r"sample filter 'mrs'.*recompute log-probs"):
        builder.build(batch)


def test_mrs_refuses_nan_at_policy_tokens():
    rows = [row(0, 0, 0, rollout_logprobs=[-1.0, math.nan], train_logprobs=[-1.0, -1.0])]
    with pytest.raises(ValueError, match="NaN"):
        MRS.from_options({}).decide(TurnBatch.from_rows(rows), torch.Generator())


# --- prs ------------------------------------------------------------------------------------------------


def prs_batch(prs: list[float | None], correct: bool = True, hacked: bool = False) -> TurnBatch:
    return TurnBatch.from_rows(
        [row(i // 16, i, 0, reward=1.0, correct=correct, hacked=hacked, pr=pr) for i, pr in enumerate(prs)]
    )


def test_prs_keep_rates_follow_the_ramp():
    per_value = 20000
    values = [0.25, 0.32, 0.35, 0.38, 0.5]
    batch = prs_batch([v for v in values for _ in range(per_value)])
    decision = decide(PRS, batch, seed=1234)
    keep = decision.keep.view(len(values), per_value).double()
    # keep probability clip((PR - 0.3) / 0.1, 0, 1), by hand: 0.25 -> -0.5 -> 0; 0.32 -> 0.2; 0.35 -> 0.5;
    # 0.38 -> 0.8; 0.5 -> 2 -> 1
    ramp = [0.0, 0.2, 0.5, 0.8, 1.0]
    for v, kept, p in zip(values, keep, ramp):
        stderr = math.sqrt(p * (1 - p) / per_value)  # 0 at the ends: there every row is rejected or kept
        assert abs(float(kept.mean()) - p) <= 4 * stderr, (v, float(kept.mean()), p)
    # mean keep probability (0 + 0.2 + 0.5 + 0.8 + 1) / 5 = 0.5, so half the correct rows are rejected
    assert decision.metrics["rejected_correct"] == pytest.approx(0.5, abs=0.01)
    assert decision.metrics["keep_prob_mean"] == pytest.approx(0.5)
    assert decision.metrics["unprofiled"] == 0.0


def test_prs_is_reproducible_per_seed_and_row():
    batch = prs_batch([0.35] * 1000)
    first, again = decide(PRS, batch, seed=7), decide(PRS, batch, seed=7)
    assert torch.equal(first.keep, again.keep)
    assert not torch.equal(first.keep, decide(PRS, batch, seed=8).keep)
    # a row's draw depends on the seed and its position only, not on what the other rows are
    other = prs_batch([0.9, None, 0.0] + [0.35] * 997)
    assert torch.equal(decide(PRS, other, seed=7).keep[3:], first.keep[3:])


def test_prs_never_rejects_incorrect_hacked_or_unprofiled_rows():
    for batch in (prs_batch([0.0] * 50, correct=False), prs_batch([0.0] * 50, hacked=True)):
        decision = decide(PRS, batch)
        assert decision.keep.all()
        assert math.isnan(decision.metrics["rejected_correct"])
    unprofiled = decide(PRS, prs_batch([None] * 30 + [0.0] * 10))
    assert unprofiled.keep.tolist() == [True] * 30 + [False] * 10
    assert unprofiled.metrics["unprofiled"] == 0.75
    assert unprofiled.metrics["rejected_correct"] == 0.25
    # padding rows are not judged
    padded = TurnBatch.from_rows([row(0, 0, 0, correct=True, pr=0.0, valid=False), row(0, 1, 0, correct=True, pr=0.0)])
    assert decide(PRS, padded).keep.tolist() == [True, False]


def test_prs_hard_threshold_draws_nothing():
    batch = prs_batch([0.1, 0.29, 0.3, 0.31, 0.9, None])
    generator = torch.Generator().manual_seed(5)
    state = generator.get_state()
    decision = PRS.from_options({"hard_threshold": True}).decide(batch, generator)
    assert decision.keep.tolist() == [False, False, True, True, True, True]
    assert torch.equal(generator.get_state(), state)
    assert decide(PRS, batch, {"hard_threshold": True, "tau": 0.5}).keep.tolist() == [False] * 4 + [True] * 2


# --- meaningful-turn ------------------------------------------------------------------------------------


def meaningful_rows() -> list[dict]:
    return [
        # trajectory 0: success at turn 1; turns 2 and 3 earn nothing -> masked; turn 0 came before it
        row(0, 0, 0, 0.0),
        row(0, 0, 1, 1.5),
        row(0, 0, 2, 0.0),
        row(0, 0, 3, -0.3),
        # trajectory 1: never succeeds -> untouched
        row(0, 1, 0, 0.0),
        row(0, 1, 1, -1.0),
        # trajectory 2 (rows out of order, another group): success at turn 0, 0.5 at turn 1, 0 at turn 2
        row(1, 2, 2, 0.0),
        row(1, 2, 0, 2.0),
        row(1, 2, 1, 0.5),
        # a padding row after the success: not judged
        row(1, 2, 3, 0.0, valid=False),
        # trajectory 3: one turn only
        row(1, 3, 0, 1.0),
    ]


def test_meaningful_turn_masks_failures_after_a_success():
    batch = TurnBatch.from_rows(meaningful_rows())
    decision = decide(MeaningfulTurn, batch)
    assert decision.level == "turn"
    expected = [True, True, False, False, True, True, False, True, True, True, True]
    assert decision.keep.tolist() == expected
    assert decision.metrics["masked"] == pytest.approx(3 / 10)
    # with threshold 0.5, a reward of 0.5 is no success either
    strict = decide(MeaningfulTurn, batch, {"threshold": 0.5})
    assert strict.keep.tolist() == [True, True, False, False, True, True, False, True, False, True, True]


# --- low-variance-group ---------------------------------------------------------------------------------


def low_variance_rows() -> list[dict]:
    return [
        # group 0: earlier turns differ, but every trajectory ends on 1.0 -> dropped
        row(0, 0, 0, 0.0),
        row(0, 0, 1, 1.0),
        row(0, 1, 0, 1.0),
        row(0, 2, 0, 0.3),
        row(0, 2, 1, 0.7),
        row(0, 2, 2, 1.0),
        # group 1: first turns equal, last turns differ (one trajectory's last row is padding) -> kept
        row(1, 3, 0, 0.0),
        row(1, 3, 1, 2.0),
        row(1, 4, 0, 0.0),
        row(1, 4, 1, 2.0, valid=False),
        # group 2: a single trajectory -> std 0 -> dropped
        row(2, 5, 0, 0.0),
        row(2, 5, 1, 3.0),
        # group 3: last rewards 1.0 and 1.0016: population std 0.0008 < 1e-3 <= sample std 0.00113
        row(3, 6, 0, 1.0),
        row(3, 7, 0, 0.0),
        row(3, 7, 1, 1.0016),
    ]


def test_low_variance_group_drops_whole_groups():
    batch = TurnBatch.from_rows(low_variance_rows())
    decision = decide(LowVarianceGroup, batch)
    assert decision.level == "group"
    expected = [False] * 6 + [True] * 4 + [False] * 2 + [False] * 3
    assert decision.keep.tolist() == expected
    assert decision.metrics["dropped_groups"] == 0.75
    sample = decide(LowVarianceGroup, batch, {"std": "sample"})
    assert sample.keep.tolist() == [False] * 6 + [True] * 4 + [False] * 2 + [True] * 3
    assert sample.metrics["dropped_groups"] == 0.5
    assert decide(LowVarianceGroup, batch, {"min_std": 0.0}).keep.all()


def test_low_variance_decision_is_checked_per_group():
    batch = TurnBatch.from_rows(low_variance_rows())
    bad = FilterDecision(keep=torch.tensor([False] + [True] * 14), level="group")
    with pytest.raises(ValueError, match="kept only some rows of group 0"):
        bad.validate(batch, "low-variance-group")


# --- through the learning host --------------------------------------------------------------------------


def test_filters_through_the_learning_signal_builder(host):
    shifted = [{**r, "group": r["group"] + 10, "trajectory": r["trajectory"] + 100} for r in meaningful_rows()]
    batch = TurnBatch.from_rows(low_variance_rows() + shifted)
    config = {
        "estimator": estimator_of(host),
        "filters": {"meaningful-turn": {}, "low-variance-group": {}},
    }
    signal = LearningSignalBuilder(config, host=host).build(batch)
    lv = decide(LowVarianceGroup, batch).keep
    mt = decide(MeaningfulTurn, batch).keep
    assert signal.row_keep.tolist() == (lv & mt & batch.valid).tolist()
    assert torch.equal(signal.mask, signal.row_keep[:, None] & batch.tokens)
    assert bool((signal.advantages[~signal.mask] == 0).all())
    assert signal.metrics["low-variance-group/dropped_groups"] == pytest.approx(3 / 6)
    assert signal.metrics["meaningful-turn/masked"] == pytest.approx(3 / int(batch.valid.sum()))


def test_mrs_and_prs_through_the_learning_signal_builder(host):
    rows = []
    for trajectory in range(4):
        drift = 0.002 if trajectory == 0 else 0.0  # trajectory 0 leaves the band
        for turn in range(2):
            pr = 0.9 if trajectory != 2 else 0.1  # trajectory 2 is correct but lazy
            rows.append(
                row(
                    0,
                    trajectory,
                    turn,
                    reward=1.0 + trajectory,
                    correct=True,
                    pr=pr,
                    rollout_logprobs=[-1.0, -0.5, -3.0],
                    train_logprobs=[-1.0 + drift, -0.5 + drift, math.nan],
                    policy_mask=[True, True, False],
                )
            )
    batch = TurnBatch.from_rows(rows)
    base = {"estimator": estimator_of(host), "filters": {"mrs": {}, "prs": {}}}
    signal = LearningSignalBuilder(base, host=host).build(batch, step=3)
    assert signal.row_keep.tolist() == [False, False, True, True, False, False, True, True]
    assert signal.metrics["mrs/band_rejected"] == 0.25
    assert signal.metrics["prs/rejected_correct"] == 0.25  # PRS judges every correct row, MRS's rejects too
    truncating = {**base, "filters": {"mrs": {"mode": "token-truncate"}}}
    weighted = LearningSignalBuilder(truncating, host=host).build(batch)
    assert weighted.row_keep.all()
    assert weighted.weights[0, :2].tolist() == pytest.approx([1.0020020013] * 2)  # ratio e^0.002, under the cap
    assert weighted.weights[:, 2].tolist() == [0.0] * 8


# --- options --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "options", "match"),
    [
        (MRS, {"bogus": 1}, "bogus"),
        (MRS, {"lower": 1.001, "upper": 0.999}, "lower .* must be below upper"),
        (MRS, {"lower": 1.0, "upper": 1.0}, "must be below upper"),
        (MRS, {"mode": "token"}, "mode"),
        (MRS, {"granularity": "group"}, "granularity"),
        (MRS, {"veto": 0.0}, "veto"),
        (MRS, {"truncate": -1.0}, "truncate"),
        (MRS, {"upper": math.nan}, "upper"),
        (PRS, {"tau": 1.5}, "tau"),
        (PRS, {"scale": 0.0}, "scale"),
        (PRS, {"hard": True}, "hard"),
        (MeaningfulTurn, {"threshold": math.inf}, "threshold"),
        (MeaningfulTurn, {"thresh": 0.0}, "thresh"),
        (LowVarianceGroup, {"std": "unbiased"}, "std"),
        (LowVarianceGroup, {"min_std": -1.0}, "min_std"),
    ],
)
def test_options_are_validated(cls, options, match):
    with pytest.raises(ConfigError, match=rf"sample_filter '{cls.name}'.*{match}"):
        cls.from_options(options)


def test_default_options_are_the_release_recipe():
    mrs = MRS.from_options({}).options
    assert (mrs.granularity, mrs.mode, mrs.lower, mrs.upper, mrs.veto, mrs.truncate) == (
        "trajectory",
        "geometric",
        0.999,
        1.001,
        1e-4,
        2.0,
    )
    prs = PRS.from_options({}).options
    assert (prs.tau, prs.scale, prs.hard_threshold) == (0.3, 0.1, False)
    assert MeaningfulTurn.from_options({}).options.threshold == 0.0
    lv = LowVarianceGroup.from_options({}).options
    assert (lv.min_std, lv.std) == (1e-3, "population")
