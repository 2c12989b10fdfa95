"""The host side of learning (core/learn/learning.py): config validation before any work, filters applied with
the run's seed, the rejected-rows-in-baselines choice, and a user's own estimator and filter from a file."""

from __future__ import annotations

import pytest
import torch

from tritongym.core.errors import ConfigError, PluginError
from tritongym.core.learn.learning import LearningConfig, LearningSignalBuilder
from tritongym.core.plugins import PluginHost
from tritongym.core.turn_batch import TurnBatch

USER_PLUGIN = '''
"""A user's own estimator and filter, loaded with --plugin."""
import torch
from pydantic import BaseModel, ConfigDict

from tritongym import hookimpl
from tritongym.core.interfaces import AdvantageEstimator, SampleFilter
from tritongym.core.turn_batch import Advantages, FilterDecision


class BonusOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bonus: float = 0.5


class RewardPlusBonus(AdvantageEstimator):
    """Advantage = reward + bonus (no baseline): easy to recognise in a test."""

    name = "reward-plus-bonus"
    Options = BonusOptions

    def estimate(self, batch):
        return Advantages(per_row=batch.reward + self.options.bonus, metrics={"bonus": self.options.bonus})


class DropOddTrajectories(SampleFilter):
    """Rejects every turn of odd-numbered trajectories."""

    name = "drop-odd"
    level = "trajectory"

    def decide(self, batch, rng):
        return FilterDecision(keep=batch.trajectory % 2 == 0, level="trajectory", metrics={"seen": batch.rows})


class BrokenEstimator(AdvantageEstimator):
    """Returns NaN, as a buggy plugin might."""

    name = "broken"

    def estimate(self, batch):
        return Advantages(per_row=torch.full_like(batch.reward, float("nan")))


@hookimpl
def register_estimators(register):
    register(RewardPlusBonus)
    register(BrokenEstimator)


@hookimpl
def register_sample_filters(register):
    register(DropOddTrajectories)
'''


@pytest.fixture
def user_host(tmp_path):
    path = tmp_path / "my_learning_plugin.py"
    path.write_text(USER_PLUGIN)
    return PluginHost(extra_plugins=[str(path)], load_entry_points=False)


def batch_of(rewards: list[float], group: int = 0) -> TurnBatch:
    return TurnBatch.from_rows(
        [
            {"group": group, "trajectory": i, "turn": 0, "reward": r, "rollout_logprobs": [-1.0, -2.0]}
            for i, r in enumerate(rewards)
        ]
    )


def test_a_users_estimator_and_filter_from_a_file_are_used(user_host):
    builder = LearningSignalBuilder(
        {"estimator": "reward-plus-bonus", "estimator_options": {"bonus": 2.0}, "filters": {"drop-odd": {}}},
        host=user_host,
    )
    signal = builder.build(batch_of([1.0, 0.0, 3.0, 5.0]))
    assert signal.row_advantages.tolist() == [3.0, 2.0, 5.0, 7.0]
    assert signal.row_keep.tolist() == [True, False, True, False]
    assert signal.advantages.tolist() == [[3.0, 3.0], [0.0, 0.0], [5.0, 5.0], [0.0, 0.0]]
    assert signal.metrics["drop-odd/rejected"] == 0.5
    assert signal.metrics["drop-odd/seen"] == 4.0
    assert signal.metrics["reward-plus-bonus/bonus"] == 2.0


def test_rejected_rows_count_in_baselines_unless_the_run_says_otherwise(user_host):
    batch = batch_of([1.0, 9.0, 3.0, 100.0])  # trajectories 1 and 3 are rejected by drop-odd
    counted = LearningSignalBuilder({"estimator": "rloo", "filters": {"drop-odd": {}}}, host=user_host).build(batch)
    # default (the release): trajectory 0's baseline is the mean of all three others
    assert counted.row_advantages[0] == pytest.approx(1.0 - (9 + 3 + 100) / 3)
    not_counted = LearningSignalBuilder(
        {"estimator": "rloo", "filters": {"drop-odd": {}}, "rejected_in_baselines": False}, host=user_host
    ).build(batch)
    assert not_counted.row_advantages[0] == pytest.approx(1.0 - 3.0)
    assert not_counted.row_advantages[2] == pytest.approx(3.0 - 1.0)
    assert not_counted.row_keep.tolist() == counted.row_keep.tolist() == [True, False, True, False]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"estimator": "trlooo"}, r"unknown estimator 'trlooo' \(valid choices: .*grpo.*rloo.*trloo"),
        ({"filters": {"mrss": {}}}, r"unknown sample filter 'mrss' \(valid choices: .*drop-odd"),
        ({"estimator": "trloo", "estimator_options": {"gama": 1}}, r"estimator 'trloo'.*gama"),
        ({"filters": {"drop-odd": {"x": 1}}}, r"sample_filter 'drop-odd'.*x"),
    ],
)
def test_a_bad_name_or_option_fails_before_any_work(user_host, config, message):
    with pytest.raises(ConfigError, match=message):
        LearningSignalBuilder(config, host=user_host)


def test_unknown_learning_key_is_refused():
    with pytest.raises(Exception, match="estimatr"):
        LearningConfig.model_validate({"estimatr": "trloo"})


def test_a_plugin_returning_nan_is_named(user_host):
    with pytest.raises(PluginError, match="estimator 'broken'.*non-finite"):
        LearningSignalBuilder({"estimator": "broken"}, host=user_host).build(batch_of([1.0, 2.0]))


def test_masked_tokens_carry_no_advantage_and_no_weight(user_host):
    batch = TurnBatch.from_rows(
        [
            {"group": 0, "trajectory": 0, "turn": 0, "reward": 1.0, "rollout_logprobs": [-1.0, -1.0, -1.0],
             "policy_mask": [True, False, True]},
            {"group": 0, "trajectory": 1, "turn": 0, "reward": 0.0, "rollout_logprobs": [-1.0]},
        ]
    )  # fmt: skip
    signal = LearningSignalBuilder({"estimator": "rloo"}, host=user_host).build(batch)
    assert signal.mask.tolist() == [[True, False, True], [True, False, False]]
    assert signal.advantages.tolist() == [[1.0, 0.0, 1.0], [-1.0, 0.0, 0.0]]
    assert signal.weights.tolist() == [[1.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    assert torch.equal(signal.advantages == 0, ~signal.mask | (signal.advantages == 0))


def _turns_file(tmp_path, lines):
    import json

    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_cli_advantages_uses_a_plugin_file_and_a_config(tmp_path):
    import json

    from typer.testing import CliRunner

    from tritongym.cli.app import app

    plugin = tmp_path / "my_learning_plugin.py"
    plugin.write_text(USER_PLUGIN)
    config = tmp_path / "run.toml"
    config.write_text('[learning]\nestimator = "reward-plus-bonus"\nestimator_options = { bonus = 1.0 }\n')
    turns = _turns_file(
        tmp_path,
        [
            {"group": 0, "trajectory": 0, "turn": 0, "reward": 1.0, "rollout_logprobs": [-0.1, -0.2]},
            {"group": 0, "trajectory": 1, "turn": 0, "reward": 0.0, "rollout_logprobs": [-0.3]},
        ],
    )
    args = ["advantages", str(turns), "-c", str(config), "--plugin", str(plugin), "-f", "drop-odd", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["estimator"] == "reward-plus-bonus" and report["filters"] == ["drop-odd"]
    assert [(r["advantage"], r["kept"], r["kept_tokens"]) for r in report["rows"]] == [(2.0, True, 2), (1.0, False, 0)]


def test_cli_advantages_names_what_is_wrong(tmp_path):
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    good = {"group": 0, "trajectory": 0, "turn": 0, "reward": 1.0}
    bad_line = _turns_file(tmp_path, [good, '{"group": 0, "trajectory": 1, "turn": 0, "reward": "high"}'])
    result = CliRunner().invoke(app, ["advantages", str(bad_line)])
    assert result.exit_code == 2 and "turns.jsonl:2: not a turn row" in result.output
    result = CliRunner().invoke(app, ["advantages", str(_turns_file(tmp_path, [good])), "-f", "mrss"])
    assert result.exit_code == 2 and "unknown sample filter 'mrss' (valid choices:" in result.output
    assert "prs" in result.output
    duplicate = _turns_file(tmp_path, [good, good])
    result = CliRunner().invoke(app, ["advantages", str(duplicate)])
    assert result.exit_code == 2 and "both turn 0 of trajectory 0" in result.output


def _prs_batch() -> TurnBatch:
    return TurnBatch.from_rows(
        [
            {"group": i % 4, "trajectory": i, "turn": 0, "reward": float(i % 3), "correct": True, "pr": 0.35,
             "rollout_logprobs": [-1.0], "train_logprobs": [-1.0]}
            for i in range(64)
        ]
    )  # fmt: skip


def test_a_filters_draws_do_not_depend_on_the_other_filters(user_host):
    batch = _prs_batch()
    alone = LearningSignalBuilder({"filters": {"prs": {}}}, host=user_host).build(batch, step=3)
    with_others = LearningSignalBuilder(
        {"filters": {"meaningful-turn": {}, "mrs": {}, "prs": {}}}, host=user_host
    ).build(batch, step=3)
    assert alone.row_keep.tolist() == with_others.row_keep.tolist()
    assert 0 < sum(alone.row_keep.tolist()) < 64  # PR 0.35 keeps about half: the draw is real
    other_step = LearningSignalBuilder({"filters": {"prs": {}}}, host=user_host).build(batch, step=4)
    assert other_step.row_keep.tolist() != alone.row_keep.tolist()


def test_one_filter_twice_under_two_labels(user_host):
    batch = TurnBatch.from_rows(
        [
            {"group": 0, "trajectory": 0, "turn": 0, "reward": 1.0, "rollout_logprobs": [-1.0, -1.0],
             "train_logprobs": [-1.0, -1.0 + 1.5]},  # one token's ratio e^1.5 > 2: truncated
            {"group": 0, "trajectory": 1, "turn": 0, "reward": 0.0, "rollout_logprobs": [-1.0],
             "train_logprobs": [-1.0]},
        ]
    )  # fmt: skip
    config = {"filters": {"mrs": {}, "mrs-is": {"use": "mrs", "mode": "token-truncate", "truncate": 2.0}}}
    signal = LearningSignalBuilder(config, host=user_host).build(batch)
    assert signal.row_keep.tolist() == [False, True]  # the geometric band rejects trajectory 0
    assert signal.metrics["mrs-is/truncated"] == pytest.approx(1 / 3)
    assert signal.weights.tolist() == [[0.0, 0.0], [1.0, 0.0]]
    only_truncation = LearningSignalBuilder(
        {"filters": {"is": {"use": "mrs", "mode": "token-truncate"}}}, host=user_host
    )
    weights = only_truncation.build(batch).weights
    assert weights[0].tolist() == [1.0, 2.0]
    with pytest.raises(ConfigError, match="unknown sample filter 'nope'"):
        LearningSignalBuilder({"filters": {"x": {"use": "nope"}}}, host=user_host)
