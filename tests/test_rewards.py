"""Rewards (Dr. Kernel's R = C + C·speedup + C·PR): the built-in components and their options, weights,
the hack penalty, components absent on a backend that does not time, broken third-party rewards, and the
breakdown stored in the registry."""

from __future__ import annotations

import math
import textwrap

import pytest
from conftest import RELU_KERNEL, registry_before

from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError, PluginError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.learn.feedback import render_feedback
from tritongym.core.models import Candidate, EvaluationResult, Problem, RewardBreakdown, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.registry import Registry
from tritongym.core.registry.migrations import migrate

PROBLEM = Problem(
    name="toy", source="class Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"
)
KERNEL = Candidate(source="x = 1\n")
PAPER = {"correctness": 1.0, "speedup": 1.0, "profiling": 1.0}
RELEASED = {"correctness": 0.5, "speedup": 0.5, "profiling": 0.5}


def _result(status=Status.ok, speedup=None, pr=None, backend="triton-cuda", **fields) -> EvaluationResult:
    timed = speedup is not None
    return EvaluationResult(
        problem_id=PROBLEM.name,
        problem_key=PROBLEM.key,
        kernel_id=KERNEL.kernel_id,
        backend=backend,
        device="cuda:0" if backend == "triton-cuda" else "cpu",
        device_class="NVIDIA H100" if backend == "triton-cuda" else "cpu",
        size=PROBLEM.size,
        protocol="1-test",
        status=status,
        correct=status == Status.ok,
        hacked=status == Status.hacked,
        runtime_ms=1.0 if timed else None,
        ref_runtime_ms=speedup if timed else None,
        speedup=speedup,
        pr=pr,
        fingerprint=local_fingerprint(),
        **fields,
    )


def _cpu_result() -> EvaluationResult:
    """What the triton-cpu backend returns for a correct kernel: no timing, no profile."""
    return _result(backend="triton-cpu")


def _evaluator(host=None, registry=None, **config) -> Evaluator:
    return Evaluator(
        EvalConfig(backend="triton-cpu", **config),
        registry=registry,
        host=host or PluginHost(load_entry_points=False),
    )


# --- the paper's reward and its weights ---------------------------------------------------------------


@pytest.mark.parametrize(("speedup", "pr", "expected"), [(2.5, 0.4, 1 + 2.5 + 0.4), (4.5, 0.75, 1 + 3 + 0.75)])
def test_paper_weights_give_c_plus_c_speedup_plus_c_pr(speedup, pr, expected):
    reward = _evaluator(rewards=PAPER)._score(_result(speedup=speedup, pr=pr))
    assert reward.total == pytest.approx(expected)
    assert reward.components == pytest.approx({"correctness": 1.0, "speedup": min(speedup, 3), "profiling": pr})
    assert reward.weights == PAPER and reward.absent == {} and reward.penalty is None
    half = _evaluator(rewards=RELEASED)._score(_result(speedup=speedup, pr=pr))
    assert half.total == pytest.approx(expected / 2)
    assert half.components == reward.components


def test_default_rewards_are_the_papers():
    assert EvalConfig().rewards == PAPER and EvalConfig().hack_penalty == 0.0


def test_pr_is_clipped_to_the_unit_interval():
    evaluator = _evaluator(rewards={"profiling": 1.0})
    assert evaluator._score(_result(speedup=1.0, pr=1.7)).components == {"profiling": 1.0}
    assert evaluator._score(_result(speedup=1.0, pr=-0.2)).components == {"profiling": 0.0}


@pytest.mark.parametrize("status", [Status.incorrect, Status.runtime_error, Status.rejected])
def test_an_incorrect_turn_scores_zero_in_every_component(status):
    # measurements an incorrect kernel might still carry (a timing, a profile) earn nothing
    reward = _evaluator()._score(_result(status, speedup=2.0, pr=0.9))
    assert reward.components == {"correctness": 0.0, "speedup": 0.0, "profiling": 0.0}
    assert reward.total == 0.0 and reward.absent == {}


@pytest.mark.parametrize("penalty", [0.0, -1.0])
def test_a_hacked_turn_earns_the_penalty_and_keeps_its_components(penalty):
    reward = _evaluator(hack_penalty=penalty)._score(_result(Status.hacked, speedup=2.0, pr=0.9))
    assert reward.total == penalty and reward.penalty == penalty
    assert reward.components == {"correctness": 0.0, "speedup": 0.0, "profiling": 0.0}
    assert "hack penalty" in reward.describe()


def test_a_hacked_turn_with_a_generous_third_party_reward_still_earns_only_the_penalty(tmp_path):
    host = PluginHost(extra_plugins=[str(_plugin(tmp_path, "always-one", "return 1.0"))], load_entry_points=False)
    reward = _evaluator(host, rewards={"always-one": 1.0}, hack_penalty=-1.0)._score(_result(Status.hacked))
    assert reward.total == -1.0 and reward.components == {"always-one": 1.0}


def test_hack_penalty_must_be_finite():
    with pytest.raises(ValueError, match="hack_penalty"):
        EvalConfig(hack_penalty=float("-inf"))


# --- the CPU backend: speed and PR are absent, not zero --------------------------------------------------


def test_untimed_components_are_absent_with_their_reason():
    reward = _evaluator()._score(_cpu_result())
    assert reward.components == {"correctness": 1.0}
    assert reward.absent == {
        "speedup": "not timed on backend 'triton-cpu'",
        "profiling": "not profiled on backend 'triton-cpu'",
    }
    assert reward.total == 1.0 and reward.weights == PAPER
    text = reward.describe()
    assert text.startswith("1 (correctness 1;")
    assert "speedup absent: not timed on backend 'triton-cpu'" in text
    assert "profiling absent: not profiled on backend 'triton-cpu'" in text


def test_absent_components_sharing_a_reason_are_named_together():
    reward = RewardBreakdown(total=1.0, components={"c": 1.0}, absent={"a": "not timed", "b": "not timed"})
    assert reward.describe() == "1 (c 1; a and b absent: not timed)"


def test_an_incorrect_untimed_turn_scores_zero_rather_than_absent():
    reward = _evaluator()._score(_result(Status.incorrect, backend="triton-cpu"))
    assert reward.components == {"correctness": 0.0, "speedup": 0.0, "profiling": 0.0} and reward.absent == {}


def test_timed_but_unprofiled_turn_has_only_pr_absent():
    reward = _evaluator()._score(_result(speedup=2.0))
    assert reward.components == {"correctness": 1.0, "speedup": 2.0}
    assert reward.absent == {"profiling": "not profiled on backend 'triton-cuda'"} and reward.total == 3.0


# --- speedup options ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "speedup", "expected"),
    [
        ({}, 0.2, 0.2),
        ({}, 7.0, 3.0),
        ({"cap": 2.0}, 7.0, 2.0),
        ({"lower": 0.5}, 0.2, 0.5),
        ({"lower": 0.5}, 1.5, 1.5),
        ({"log": True}, 2.0, math.log(2)),
        ({"log": True}, 0.5, -math.log(2)),
        ({"log": True}, 1.0, 0.0),
        ({"log": True}, 10.0, math.log(3)),
        ({"log": True}, 0.1, -math.log(3)),  # without `lower`, the floor is 1/cap: a symmetric range
        ({"log": True, "lower": 0.5}, 0.1, math.log(0.5)),
        ({"log": True, "cap": 4.0}, 0.1, -math.log(4)),
    ],
)
def test_speedup_options_on_hand_numbers(options, speedup, expected):
    evaluator = _evaluator(rewards={"speedup": 1.0}, reward_options={"speedup": options})
    assert evaluator._score(_result(speedup=speedup)).components["speedup"] == pytest.approx(expected)


def test_log_speedup_of_an_incorrect_turn_is_zero():
    evaluator = _evaluator(rewards={"speedup": 1.0}, reward_options={"speedup": {"log": True}})
    assert evaluator._score(_result(Status.incorrect, speedup=0.1)).components == {"speedup": 0.0}


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"bogus": 1}, "bogus"),
        ({"cap": 0}, "cap"),
        ({"cap": -1}, "cap"),
        ({"lower": 3.0}, "lower .* must be below cap"),
        ({"lower": 2.0, "cap": 1.5}, "lower .* must be below cap"),
        ({"lower": 0}, "lower"),
        ({"log": True, "cap": 1.0}, "log needs cap above 1"),
    ],
)
def test_invalid_speedup_options_are_config_errors_naming_the_reward(options, needle):
    with pytest.raises(ConfigError, match=rf"reward 'speedup'.*{needle}"):
        _evaluator(reward_options={"speedup": options})


def test_builtin_rewards_without_options_refuse_any():
    with pytest.raises(ConfigError, match=r"reward 'profiling'.*cap"):
        _evaluator(reward_options={"profiling": {"cap": 2}})


# --- third-party rewards --------------------------------------------------------------------------------

PLUGIN = """
from tritongym import hookimpl
from tritongym.core.interfaces import Reward


class ThirdParty(Reward):
    '''A test reward from a plugin file.'''

    name = "{name}"

    def score(self, result):
        {body}

    def absent_reason(self, result):
        return "needs a measurement this test never takes"


@hookimpl
def register_rewards(register):
    register(ThirdParty)
"""


def _plugin(tmp_path, name: str, body: str):
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(textwrap.dedent(PLUGIN).format(name=name, body=body))
    return path


def test_a_third_party_reward_from_a_file_is_a_component(tmp_path):
    path = _plugin(tmp_path, "short-source", "return 1.0 / result.trials if result.trials else 0.25")
    host = PluginHost(extra_plugins=[str(path)], load_entry_points=False)
    evaluator = _evaluator(host, rewards={"correctness": 1.0, "short-source": 2.0})
    reward = evaluator._score(_result(speedup=1.0, trials=4))
    assert reward.components == {"correctness": 1.0, "short-source": 0.25}
    assert reward.total == pytest.approx(1.5) and reward.weights == {"correctness": 1.0, "short-source": 2.0}
    # and through a whole evaluation (a syntax error needs no worker)
    result = evaluator.evaluate("def broken(:\n", PROBLEM)
    assert result.reward.components == {"correctness": 0.0, "short-source": 0.25}


def test_a_third_party_reward_may_be_absent_with_its_own_reason(tmp_path):
    host = PluginHost(extra_plugins=[str(_plugin(tmp_path, "maybe", "return None"))], load_entry_points=False)
    reward = _evaluator(host, rewards={"correctness": 1.0, "maybe": 1.0})._score(_result(speedup=1.0))
    assert reward.absent == {"maybe": "needs a measurement this test never takes"} and reward.total == 1.0


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("return float('nan')", "returned nan"),
        ("return float('inf')", "returned inf"),
        ("return 'high'", "returned 'high'"),
        ("raise RuntimeError('boom')", "raised RuntimeError: boom"),
    ],
)
def test_a_broken_reward_is_a_plugin_error_naming_it(tmp_path, body, needle):
    path = _plugin(tmp_path, "broken-reward", body)
    host = PluginHost(extra_plugins=[str(path)], load_entry_points=False)
    evaluator = _evaluator(host, rewards={"correctness": 1.0, "broken-reward": 1.0})
    with pytest.raises(PluginError, match=rf"reward 'broken-reward' \(plugin '.*broken_reward\.py'\) {needle}"):
        evaluator._score(_result(speedup=1.0))


# --- storage --------------------------------------------------------------------------------------------


def test_the_breakdown_is_stored_with_the_evaluation(registry):
    result = _cpu_result()
    result.reward = _evaluator()._score(result)
    eid = registry.store(result, PROBLEM, KERNEL)
    row = registry.db["evaluations"].get(eid)
    assert row["reward"] == 1.0
    stored = registry.reward_of(eid)
    assert stored == result.reward and stored.absent["speedup"] == "not timed on backend 'triton-cpu'"
    hit = registry.lookup(PROBLEM.key, KERNEL.kernel_id, "triton-cpu", "cpu", "1-test")
    assert hit is not None and hit.reward == result.reward


def test_turns_store_the_breakdown_too(registry):
    result = _result(Status.hacked, speedup=2.0)
    result.reward = _evaluator(hack_penalty=-1.0)._score(result)
    result.evaluation_id = registry.store(result, PROBLEM, KERNEL)
    run = registry.start_run("test", "rewards", {})
    turn = registry.add_turn(run, result)
    row = registry.db["turns"].get(turn)
    assert row["reward"] == -1.0
    assert RewardBreakdown.model_validate_json(row["reward_components"]).penalty == -1.0


def test_migration_adds_the_column_to_a_registry_with_rows(tmp_path):
    db = registry_before(tmp_path / "old.db", "m007")
    result = _cpu_result()
    db["problems"].insert({"key": PROBLEM.key, "name": PROBLEM.name, "source": PROBLEM.source})
    db["kernels"].insert({"id": KERNEL.kernel_id, "source": KERNEL.source})
    row = {
        "problem_key": PROBLEM.key,
        "problem_name": PROBLEM.name,
        "kernel_id": KERNEL.kernel_id,
        "status": "ok",
        "correct": 1,
        "hacked": 0,
        "reward": 1.0,
        "result": result.model_dump_json(),
    }
    eid = db["evaluations"].insert(row).last_pk
    assert "m007_reward_components" in migrate(db)
    assert db["evaluations"].get(eid)["reward_components"] == "{}"
    db.close()
    registry = Registry(tmp_path / "old.db")
    assert registry.reward_of(eid) is None  # stored before breakdowns were: unknown, not a zero reward
    assert registry.best("toy")["reward_components"] == "{}"  # the best-kernels view sees the new column
    registry.close()


def test_a_real_evaluation_stores_its_breakdown_and_a_rescored_hit_updates_it(evaluator, registry, relu_problem):
    result = evaluator.evaluate(RELU_KERNEL, relu_problem)
    assert result.status == Status.ok and result.speedup is None and result.pr is None
    assert result.reward.total == 1.0 and set(result.reward.absent) == {"speedup", "profiling"}
    assert registry.reward_of(result.evaluation_id) == result.reward
    assert "speedup absent: not timed on backend 'triton-cpu'" in render_feedback(result)

    halved = Evaluator(
        evaluator.config.model_copy(update={"rewards": RELEASED}), registry=registry, host=evaluator.host
    )
    hit = halved.evaluate(RELU_KERNEL, relu_problem)
    assert hit.cached and hit.evaluation_id == result.evaluation_id and hit.reward.total == 0.5
    assert registry.reward_of(hit.evaluation_id) == hit.reward
    assert registry.db["evaluations"].get(hit.evaluation_id)["reward"] == 0.5
    stored = registry.lookup(relu_problem.key, hit.kernel_id, hit.backend, hit.device_class, halved.protocol)
    assert stored is not None and stored.reward == hit.reward
