"""The plugin host: built-ins, third-party plugins from a file, a module, an entry point and the
environment; broken, duplicate and misspelt plugins; and a third-party reward used in an evaluation."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError, PluginError, UnknownPluginObject
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.interfaces import KINDS
from tritongym.core.plugins import DEFAULT_PLUGINS, PluginHost, PluginWarning, get_host
from tritongym.core.problems import load_problem

REWARD_PLUGIN = """
from pydantic import BaseModel, ConfigDict

from tritongym import hookimpl
from tritongym.core.interfaces import Reward


class LengthOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scale: float = 1.0


class KernelIdReward(Reward):
    '''Deterministic test reward: the first hex digit of the kernel id, scaled.'''

    name = "{name}"
    Options = LengthOptions

    def score(self, result):
        return int(result.kernel_id[0], 16) * self.options.scale


@hookimpl
def register_rewards(register):
    register(KernelIdReward)
"""


def _plugin_file(tmp_path, name="kernel-id", filename="my_reward.py"):
    path = tmp_path / filename
    path.write_text(textwrap.dedent(REWARD_PLUGIN.format(name=name)))
    return path


def test_builtins_are_registered_like_plugins():
    host = PluginHost(load_entry_points=False)
    registered = {(r.kind, r.name): r for r in host.all()}
    assert ("backend", "triton-cpu") in registered
    assert ("check", "structure") in registered and ("check", "launches") in registered
    assert {("reward", n) for n in ("correctness", "speedup", "profiling")} <= set(registered)
    assert {r.plugin for r in registered.values()} <= set(DEFAULT_PLUGINS)
    assert all(r.doc for r in registered.values()), "every built-in has a one-line doc"
    assert set(KINDS) == {
        "backend",
        "check",
        "reward",
        "estimator",
        "sample_filter",
        "engine",
        "search_strategy",
        "probe",
    }
    assert {("search_strategy", "exhaustive"), ("search_strategy", "random")} <= set(registered)


def test_plugin_from_file_is_used_in_an_evaluation(tmp_path, relu_problem):
    path = _plugin_file(tmp_path)
    host = PluginHost(extra_plugins=[str(path)], load_entry_points=False)
    reg = host.get("reward", "kernel-id")
    assert reg.plugin == str(path) and reg.doc.startswith("Deterministic test reward")
    config = EvalConfig(backend="triton-cpu", rewards={"kernel-id": 2.0}, reward_options={"kernel-id": {"scale": 0.5}})
    evaluator = Evaluator(config, host=host)
    # a syntax error is judged without a worker, and still scored by every selected reward
    result = evaluator.evaluate("def broken(:\n", relu_problem)
    expected = int(result.kernel_id[0], 16) * 0.5
    assert result.reward.components == {"kernel-id": expected}
    assert result.reward.total == pytest.approx(2.0 * expected)


def test_plugin_options_are_validated_naming_the_object(tmp_path):
    host = PluginHost(extra_plugins=[str(_plugin_file(tmp_path))], load_entry_points=False)
    with pytest.raises(ConfigError, match=r"reward 'kernel-id'.*scale"):
        host.create("reward", "kernel-id", {"scale": "lots"})
    with pytest.raises(ConfigError, match="bogus"):
        host.create("reward", "kernel-id", {"bogus": 1})


def test_plugin_from_module_name_and_environment(tmp_path, monkeypatch):
    _plugin_file(tmp_path, name="env-reward", filename="tg_env_plugin.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TRITONGYM_PLUGINS", "tg_env_plugin")
    host = get_host()
    assert host.get("reward", "env-reward").plugin == "tg_env_plugin"


def test_installed_entry_point_plugin(tmp_path, monkeypatch):
    """A distribution installed on sys.path (dist-info with entry_points.txt), found by the group."""
    site = tmp_path / "site"
    site.mkdir()
    _plugin_file(site, name="ep-reward", filename="tg_ep_plugin.py")
    dist = site / "tg_ep_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tg-ep-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[tritongym]\nep_reward = tg_ep_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("TRITONGYM_LOAD_PLUGINS", "tg-ep-demo")
    host = PluginHost()
    reg = host.get("reward", "ep-reward")
    assert reg.plugin == "tg-ep-demo:ep_reward"
    result = Evaluator(EvalConfig(backend="triton-cpu", rewards={"ep-reward": 1.0}), host=host).evaluate(
        "def broken(:\n", load_problem("relu")
    )
    assert result.reward.components == {"ep-reward": float(int(result.kernel_id[0], 16))}
    # and the way out: an empty selection loads no installed plugin
    monkeypatch.setenv("TRITONGYM_LOAD_PLUGINS", "")
    with pytest.raises(UnknownPluginObject, match="ep-reward"):
        PluginHost().get("reward", "ep-reward")
    sys.modules.pop("tg_ep_plugin", None)


def test_broken_plugin_is_reported_by_name_and_skipped(tmp_path):
    bad = tmp_path / "bad_plugin.py"
    bad.write_text("raise RuntimeError('cannot start')\n")
    with pytest.warns(PluginWarning, match=r"bad_plugin\.py.*cannot start"):
        host = PluginHost(extra_plugins=[str(bad)], load_entry_points=False)
    assert "triton-cpu" in host.names("backend")
    assert any("cannot start" in s for s in host.skipped)
    with pytest.raises(PluginError, match="cannot start"):
        PluginHost(extra_plugins=[str(bad)], load_entry_points=False, strict=True)


def test_plugin_raising_in_its_hook_is_skipped(tmp_path):
    bad = tmp_path / "raising.py"
    bad.write_text("from tritongym import hookimpl\n\n@hookimpl\ndef register_checks(register):\n    1 / 0\n")
    with pytest.warns(PluginWarning, match="register_checks.*ZeroDivisionError"):
        host = PluginHost(extra_plugins=[str(bad)], load_entry_points=False)
    assert "structure" in host.names("check")


def test_unknown_hook_name_is_caught(tmp_path):
    typo = tmp_path / "typo.py"
    typo.write_text("from tritongym import hookimpl\n\n@hookimpl\ndef register_reward(register):\n    pass\n")
    with pytest.warns(PluginWarning, match="unknown hook.*register_reward"):
        PluginHost(extra_plugins=[str(typo)], load_entry_points=False)
    with pytest.raises(PluginError, match="register_reward"):
        PluginHost(extra_plugins=[str(typo)], load_entry_points=False, strict=True)


def test_duplicate_names_are_an_error_naming_both_plugins(tmp_path):
    dup = _plugin_file(tmp_path, name="speedup", filename="dup.py")
    with pytest.raises(PluginError, match=r"reward 'speedup'.*tritongym\.plugins\.rewards\.speedup.*dup\.py"):
        PluginHost(extra_plugins=[str(dup)], load_entry_points=False)


def test_invalid_registered_object_is_refused(tmp_path):
    bad = tmp_path / "notaclass.py"
    bad.write_text(
        "from tritongym import hookimpl\n\n@hookimpl\ndef register_rewards(register):\n    register(object)\n"
    )
    with pytest.warns(PluginWarning, match="not a subclass of Reward"):
        PluginHost(extra_plugins=[str(bad)], load_entry_points=False)


def test_unknown_object_lists_known_names():
    host = PluginHost(load_entry_points=False)
    with pytest.raises(UnknownPluginObject, match="triton-cpu"):
        host.get("backend", "triton-tpu")


def test_cli_plugins_json_lists_builtins_and_file_plugins(tmp_path):
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    result = CliRunner().invoke(app, ["plugins", "--json", "--plugin", str(_plugin_file(tmp_path))])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    names = {(r["kind"], r["name"]) for r in rows}
    assert ("backend", "triton-cpu") in names and ("reward", "kernel-id") in names
    assert all(set(r) == {"kind", "name", "plugin", "doc", "options"} for r in rows)


EVERY_HOOK_PLUGIN = """
from tritongym import hookimpl
from tritongym.core import interfaces


def _named(base, name):
    return type(name.title().replace("-", ""), (base,), {"name": name, "__doc__": f"Test {name}."})


@hookimpl
def register_backends(register):
    register(_named(interfaces.Backend, "t-backend"))


@hookimpl
def register_checks(register):
    register(_named(interfaces.StaticCheck, "t-check"))


@hookimpl
def register_rewards(register):
    register(_named(interfaces.Reward, "t-reward"))


@hookimpl
def register_estimators(register):
    register(_named(interfaces.AdvantageEstimator, "t-estimator"))


@hookimpl
def register_sample_filters(register):
    register(_named(interfaces.SampleFilter, "t-filter"))


@hookimpl
def register_engines(register):
    register(_named(interfaces.GenerationEngine, "t-engine"))
"""


def test_a_plugin_implementing_every_hook_loads_through_the_real_path(tmp_path):
    path = tmp_path / "every_hook.py"
    path.write_text(EVERY_HOOK_PLUGIN)
    host = PluginHost(extra_plugins=[str(path)], load_entry_points=False, strict=True)
    mine = {(r.kind, r.name) for r in host.all() if r.plugin == str(path)}
    assert mine == {
        ("backend", "t-backend"),
        ("check", "t-check"),
        ("reward", "t-reward"),
        ("estimator", "t-estimator"),
        ("sample_filter", "t-filter"),
        ("engine", "t-engine"),
    }


def test_every_hookspec_is_documented_and_maps_to_a_kind():
    from tritongym.core import hookspecs
    from tritongym.core.interfaces import HOOK_OF_KIND

    specs = [n for n in dir(hookspecs) if n.startswith("register_")]
    assert sorted(specs) == sorted(HOOK_OF_KIND.values())
    for name in specs:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), f"{name} has no docstring"


def test_a_check_that_raises_fails_closed_and_names_its_plugin(tmp_path, relu_problem):
    from conftest import RELU_KERNEL

    path = tmp_path / "raising_check.py"
    path.write_text(
        "from tritongym import hookimpl\nfrom tritongym.core.interfaces import StaticCheck\n\n"
        "class Boom(StaticCheck):\n    '''Always raises.'''\n    name = 'boom'\n\n"
        "    def check_source(self, tree, candidate, problem):\n        raise KeyError('oops')\n\n"
        "@hookimpl\ndef register_checks(register):\n    register(Boom)\n"
    )
    host = PluginHost(extra_plugins=[str(path)], load_entry_points=False)
    config = EvalConfig(backend="triton-cpu", checks={"structure": {}, "boom": {}})
    result = Evaluator(config, host=host).evaluate(RELU_KERNEL, relu_problem)
    assert result.status.value == "rejected"
    verdicts = {c.name: c for c in result.checks}
    assert verdicts["structure"].passed, "one broken check must not silence the others"
    assert not verdicts["boom"].passed and f"plugin '{path}'" in verdicts["boom"].reason


def test_cli_plugins_lists_estimators_and_filters_with_their_options():
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    result = CliRunner().invoke(app, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = {(r["kind"], r["name"]): r for r in json.loads(result.stdout)}
    for name in ("grpo", "rloo", "trloo", "reinforce"):
        assert ("estimator", name) in rows
    for name in ("mrs", "prs", "meaningful-turn", "low-variance-group"):
        assert ("sample_filter", name) in rows
    trloo = {o["name"]: o for o in rows[("estimator", "trloo")]["options"]}
    assert trloo["gamma"]["default"] == 1.0 and trloo["singleton"]["default"] == "return"
    prs = {o["name"]: o["default"] for o in rows[("sample_filter", "prs")]["options"]}
    assert prs == {"tau": 0.3, "scale": 0.1, "hard_threshold": False}
    speedup = {o["name"]: o["default"] for o in rows[("reward", "speedup")]["options"]}
    assert speedup == {"cap": 3.0, "lower": None, "log": False, "reference": "eager"}
    table = CliRunner().invoke(app, ["plugins", "--kind", "sample_filter"])
    assert table.exit_code == 0 and "lower=0.999" in table.stdout and "speedup" not in table.stdout
    bad = CliRunner().invoke(app, ["plugins", "--kind", "filters"])
    assert bad.exit_code == 2 and "valid choices" in bad.output


def test_cli_plugins_lists_hrd_and_the_llm_judge_with_their_options():
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    result = CliRunner().invoke(app, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = {(r["kind"], r["name"]): r for r in json.loads(result.stdout)}
    hrd = {o["name"]: o["default"] for o in rows[("estimator", "hrd")]["options"]}
    assert hrd["alpha"] == 0.1 and hrd["baseline"] == "leave-one-out"
    assert hrd["plan_components"] == {"speedup": 1.0} and hrd["code_components"] == {"correctness": 1.0}
    assert rows[("estimator", "hrd")]["plugin"] == "tritongym.plugins.estimators.hrd"
    judge = rows[("check", "llm-judge")]
    options = {o["name"]: o for o in judge["options"]}
    assert judge["plugin"] == "tritongym.plugins.checks.llm_judge" and "off by default" in judge["doc"]
    assert options["engine"]["default"] == "openai" and options["unparseable"]["default"] == "fail"
    assert options["template"]["default"] is None and "$candidate_code" in options["template"]["description"]
    assert {"model", "engine_options", "evidence", "temperature", "max_tokens", "seed"} <= set(options)


def test_trace_hooks_traces_every_registration_call(tmp_path):
    """`TRITONGYM_TRACE_HOOKS=1` rides on pluggy's hook-call monitoring: each registration hook of each
    plugin goes through pluggy (not straight to the function), so the trace names the hook, the plugin and
    what the call returned.  In a fresh process, as a user would set it; unset, nothing is traced."""
    import os
    import subprocess

    plugin = _plugin_file(tmp_path)
    code = f"from tritongym.core.plugins import get_host\nget_host([{str(plugin)!r}])"
    env = {k: v for k, v in os.environ.items() if k != "TRITONGYM_TRACE_HOOKS"}
    traced = subprocess.run(
        [sys.executable, "-c", code], env={**env, "TRITONGYM_TRACE_HOOKS": "1"}, capture_output=True, text=True
    )
    assert traced.returncode == 0, traced.stderr
    assert "register_backends of plugin 'tritongym.plugins.backends.triton_cpu'" in traced.stderr
    assert f"register_rewards of plugin '{plugin}'" in traced.stderr
    assert "  register_rewards [hook]" in traced.stderr
    assert "finish register_rewards --> [] [hook]" in traced.stderr
    quiet = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert quiet.returncode == 0 and "[hook]" not in quiet.stderr
