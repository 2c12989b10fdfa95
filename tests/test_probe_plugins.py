"""Registered probes (`interfaces.Probe`): a check plugin's own call of the candidate inside the worker.

This file is itself the plugin (its hook implementations register the probes and checks below); the probe
functions live in a module written under tmp_path and put on PYTHONPATH, as a third-party package would be,
so the sandboxed worker imports them.  One triton-cpu evaluation of the bundled relu solution judges three
checks at once: one that fails on what its probe saw, one that passes on it, and two whose probes have no
answer (one raises, one names a function its module lacks): those are unjudged.
"""

from __future__ import annotations

import os
import re
import textwrap

import pytest
import torch

from tritongym import hookimpl
from tritongym.core.config import EvalConfig
from tritongym.core.errors import CheckUnavailable, ConfigError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.interfaces import Probe, RuntimeCheck
from tritongym.core.models import CheckVerdict, ProbeResult
from tritongym.core.plugins import PluginHost, PluginWarning
from tritongym.core.problems import load_problem

PROBE_MODULE = "tg_test_probe_functions"

PROBE_FUNCTIONS = """
import torch


def output_stats(model, inputs):
    with torch.no_grad():
        out = model(*inputs)
    # a relu's output is never negative and, on normal inputs, sums to a positive number
    return {"sum": float(out.sum()), "min": float(out.min()), "numel": out.numel()}


def broken(model, inputs):
    raise RuntimeError("probe bug")
"""


class OutputStats(Probe):
    """Test probe: the sum, the minimum and the size of the candidate's output on trial 0's inputs."""

    name = "output-stats"
    target = f"{PROBE_MODULE}:output_stats"


class Broken(Probe):
    """Test probe whose function always raises."""

    name = "broken"
    target = f"{PROBE_MODULE}:broken"


class Absent(Probe):
    """Test probe whose target names a function its module lacks."""

    name = "absent"
    target = f"{PROBE_MODULE}:not_there"


def _result(evidence, name: str) -> ProbeResult:
    """The declared probe's answer, or CheckUnavailable: a missing or failed probe is no verdict on the kernel."""
    result = evidence.probe_results.get(name)
    if result is None or result.error:
        raise CheckUnavailable(f"probe '{name}' gave no answer: {result.error if result else 'not run'}")
    return result


class PositiveSum(RuntimeCheck):
    """Test check: fails when the output on trial 0's inputs sums to more than zero (a relu's does)."""

    name = "test-positive-sum"
    probes = ("output-stats",)

    def judge(self, evidence, candidate, problem):
        result = _result(evidence, "output-stats")
        total = result.value["sum"]
        reason = f"output sum {total:.4f} over {result.value['numel']} elements, {len(result.launches)} launches"
        return CheckVerdict(name=self.name, passed=total <= 0, reason=reason)


class NonNegative(RuntimeCheck):
    """Test check: fails when the output has a negative element (a relu's has none)."""

    name = "test-non-negative"
    probes = ("output-stats",)

    def judge(self, evidence, candidate, problem):
        minimum = _result(evidence, "output-stats").value["min"]
        return CheckVerdict(name=self.name, passed=minimum >= 0, reason=f"output minimum {minimum}")


class ReadsBroken(RuntimeCheck):
    """Test check reading the probe that raises."""

    name = "test-reads-broken"
    probes = ("broken",)

    def judge(self, evidence, candidate, problem):
        _result(evidence, "broken")
        return CheckVerdict(name=self.name, passed=True)


class ReadsAbsent(RuntimeCheck):
    """Test check reading the probe the worker cannot import."""

    name = "test-reads-absent"
    probes = ("absent",)

    def judge(self, evidence, candidate, problem):
        _result(evidence, "absent")
        return CheckVerdict(name=self.name, passed=True)


class ReadsNothingRegistered(RuntimeCheck):
    """Test check naming a probe no plugin registers."""

    name = "test-reads-missing"
    probes = ("no-such-probe",)
    default_enabled = False

    def judge(self, evidence, candidate, problem):
        return CheckVerdict(name=self.name, passed=True)


@hookimpl
def register_probes(register):
    register(OutputStats)
    register(Broken)
    register(Absent)


@hookimpl
def register_checks(register):
    for check in (PositiveSum, NonNegative, ReadsBroken, ReadsAbsent, ReadsNothingRegistered):
        register(check)


@pytest.fixture
def host(tmp_path, monkeypatch):
    (tmp_path / f"{PROBE_MODULE}.py").write_text(textwrap.dedent(PROBE_FUNCTIONS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return PluginHost(extra_plugins=[__name__], load_entry_points=False)


def test_probes_are_registered_and_listed(host):
    registered = {(r.kind, r.name): r for r in host.all()}
    assert registered[("probe", "output-stats")].plugin == __name__
    assert registered[("probe", "output-stats")].doc.startswith("Test probe: the sum")


def test_cli_plugins_lists_probes_by_kind():
    import json

    from typer.testing import CliRunner

    from tritongym.cli.app import app

    result = CliRunner().invoke(app, ["plugins", "--json", "--kind", "probe", "--plugin", __name__])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {"output-stats", "broken", "absent"}
    assert {r["kind"] for r in rows.values()} == {"probe"} and rows["broken"]["plugin"] == __name__


GPU = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("backend", ["triton-cpu", pytest.param("triton-cuda", marks=GPU)])
def test_a_check_judges_what_its_probe_saw_in_the_worker(host, backend):
    config = EvalConfig(
        backend=backend,
        trials=2,
        use_cache=False,
        checks={
            n: {}
            for n in ("structure", "test-positive-sum", "test-non-negative", "test-reads-broken", "test-reads-absent")
        },
    )
    problem = load_problem("relu")
    with Evaluator(config, registry=None, host=host) as evaluator:
        assert evaluator.probes == {p.name: p.target for p in (OutputStats, Broken, Absent)}
        result = evaluator.evaluate(problem.solution, problem)
    verdicts = {v.name: v for v in result.checks}
    assert result.correct is False and result.hacked, result.message
    failed = verdicts["test-positive-sum"]
    assert not failed.passed and failed.plugin == __name__
    found = re.fullmatch(r"output sum (\S+) over (\d+) elements, (\d+) launches", failed.reason)
    assert found, failed.reason
    total, numel, launches = float(found[1]), int(found[2]), int(found[3])
    assert total > 0 and numel > 0 and launches >= 1  # the relu kernel ran in the probe
    assert verdicts["test-non-negative"].passed and not verdicts["test-non-negative"].unjudged
    assert verdicts["test-non-negative"].reason.startswith("output minimum 0")
    assert result.unjudged == ["test-reads-absent", "test-reads-broken"]
    assert "RuntimeError: probe bug" in verdicts["test-reads-broken"].reason
    assert "could not import probe target 'tg_test_probe_functions:not_there'" in verdicts["test-reads-absent"].reason


def test_a_check_naming_an_unregistered_probe_is_a_config_error(host):
    config = EvalConfig(backend="triton-cpu", checks={"structure": {}, "test-reads-missing": {}})
    with pytest.raises(ConfigError, match=r"check 'test-reads-missing' .* reads probe 'no-such-probe'.*known probes"):
        Evaluator(config, registry=None, host=host)


def test_a_probe_needs_a_module_function_target_and_its_own_name(tmp_path):
    plugin = tmp_path / "bad_probes.py"
    plugin.write_text(
        textwrap.dedent(
            """
            from tritongym import hookimpl
            from tritongym.core.interfaces import Probe

            class NoTarget(Probe):
                '''No target.'''
                name = "no-target"
                target = "just_a_module"

            class Ghost(Probe):
                '''A built-in's name.'''
                name = "ghost"
                target = "m:f"

            @hookimpl
            def register_probes(register):
                register(NoTarget)
                register(Ghost)
            """
        )
    )
    with pytest.warns(PluginWarning) as caught:
        host = PluginHost(extra_plugins=[str(plugin)], load_entry_points=False)
    messages = " | ".join(str(w.message) for w in caught)
    assert "target 'just_a_module'; name the function" in messages
    assert "'ghost', the name of a built-in probe" in messages
    assert host.names("probe") == []


def test_probe_results_from_the_worker_are_bounded_and_plain():
    from tritongym.core.models import PROBE_JSON_LIMIT
    from tritongym.core.worker.plugin_probes import probe_results

    wanted = {"a": "m:f", "b": "m:g", "c": "m:h", "d": "m:i"}
    raw = {
        "a": {"json": '{"x": [1, 2]}', "error": "", "launches": []},
        "b": {"json": "[" + "1," * PROBE_JSON_LIMIT + "1]", "error": "", "launches": []},
        "c": {"json": "NaN", "error": "", "launches": []},
        "d": {"json": 3, "error": "", "launches": []},
        "unasked": {"json": "1", "error": "", "launches": []},
    }
    results = probe_results(raw, wanted)
    assert results["a"].value == {"x": [1, 2]} and not results["a"].error
    assert "at most" in results["b"].error and results["b"].value is None
    assert "plain JSON" in results["c"].error
    assert "not text" in results["d"].error
    assert set(results) == {"a", "b", "c", "d"}
    assert probe_results("not a dict", wanted) == {}
