"""Registered probes (`interfaces.Probe`): a check plugin's own call of the candidate inside the worker.

This file is itself the plugin (its hook implementations register the probes and checks below); the probe
functions live in a module written under tmp_path and put on PYTHONPATH, as a third-party package would be,
so the sandboxed worker imports them.  One triton-cpu evaluation of the bundled relu solution judges three
checks at once: one that fails on what its probe saw, one that passes on it, and two whose probes have no
answer (one raises, one names a function its module lacks): those are unjudged.  The built-in probes are
registered through the same hook (`tritongym.plugins.probes.builtin`), and only the probes the enabled checks
declare run: a configuration without `ghost` makes no ghost call, counted by the candidate itself.  A probe with
a trusted half (a `ghost`-like check) is tests/test_probe_plugin_ghost.py.
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
from tritongym.core.models import CheckVerdict, ProbeCall
from tritongym.core.plugins import PluginHost, PluginWarning
from tritongym.core.problems import load_problem
from tritongym.core.worker_task import BUILTIN_PROBES, ProbeSpec

DEFAULT_PROBES = {*BUILTIN_PROBES, "shifted", "host_reads", "nudged"}
"""Every probe the built-in plugins register: the hard-wired built-ins, `shifted` (`plugins/probes/shifted.py`), a
plain plugin probe with a trusted half, and `host_reads` (`plugins/probes/host_reads.py`), one without; both registered
as a third party's is."""

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


def forward_calls(model, inputs):
    # the counting candidate below counts its own forward calls: how many the worker made before this probe
    return model.calls
"""

COUNTING_RELU = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
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


class ForwardCalls(Probe):
    """Test probe: how many times the (counting) candidate's forward was called before it."""

    name = "forward-calls"
    target = f"{PROBE_MODULE}:forward_calls"


def _result(evidence, name: str) -> ProbeCall:
    """The declared probe's call, or CheckUnavailable: a missing or failed probe is no verdict on the kernel."""
    result = evidence.probe(name)
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


class CountsCalls(RuntimeCheck):
    """Test check: passes, saying how many forward calls the worker made before its probe."""

    name = "test-counts-calls"
    probes = ("forward-calls",)
    default_enabled = False

    def judge(self, evidence, candidate, problem):
        return CheckVerdict(name=self.name, passed=True, reason=f"{_result(evidence, 'forward-calls').value} calls")


class ReadsNothingRegistered(RuntimeCheck):
    """Test check naming a probe no plugin registers."""

    name = "test-reads-missing"
    probes = ("no-such-probe",)
    default_enabled = False

    def judge(self, evidence, candidate, problem):
        return CheckVerdict(name=self.name, passed=True)


@hookimpl
def register_probes(register):
    for probe in (OutputStats, Broken, Absent, ForwardCalls):
        register(probe)


@hookimpl
def register_checks(register):
    for check in (PositiveSum, NonNegative, ReadsBroken, ReadsAbsent, CountsCalls, ReadsNothingRegistered):
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
    assert set(rows) == {"output-stats", "broken", "absent", "forward-calls", *DEFAULT_PROBES}
    assert {r["kind"] for r in rows.values()} == {"probe"} and rows["broken"]["plugin"] == __name__
    assert {rows[name]["plugin"] for name in BUILTIN_PROBES} == {"tritongym.plugins.probes.builtin"}


def test_the_built_in_probes_are_registered_through_the_hook_and_declared_by_their_checks():
    """Each built-in probe is a registered `Probe` of the built-in plugin, and each check that reads one declares it:
    the Evaluator sends exactly the declared ones, so a skipped check's probe is not sent."""
    host = PluginHost(load_entry_points=False)  # the built-in plugins only
    for name in BUILTIN_PROBES:
        registered = host.get("probe", name)
        assert registered.plugin == "tritongym.plugins.probes.builtin" and registered.cls.builtin
    readers = {
        "ghost": {"ghost"},
        "caching": {"refresh", "nudged"},
        "determinism": {"repeat"},
        "modes": {"modes"},
        "launches": {"modes"},
        "precomputed": {"precomputed"},
        "degenerate": {"degenerate"},
        "overflow": {"shifted"},
        "host_compute": {"host_reads"},
    }
    for check, probes in readers.items():
        assert set(host.get("check", check).cls.probes) == probes, check
    everything = Evaluator(EvalConfig(backend="triton-cpu"), registry=None, host=host)
    assert set(everything.probes) == DEFAULT_PROBES
    assert all(spec == ProbeSpec(builtin=True) for name, spec in everything.probes.items() if name in BUILTIN_PROBES)
    assert not everything.probes["shifted"].builtin and everything.probes["shifted"].reference
    without = Evaluator(EvalConfig(backend="triton-cpu", skip_checks=["ghost", "modes"]), registry=None, host=host)
    assert set(without.probes) == DEFAULT_PROBES - {"ghost"}  # `launches` still reads the mode calls
    no_modes = Evaluator(EvalConfig(backend="triton-cpu", skip_checks=["modes", "launches"]), registry=None, host=host)
    assert "modes" not in no_modes.probes


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
        assert evaluator.probes == {p.name: ProbeSpec(target=p.target) for p in (OutputStats, Broken, Absent)}
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


@pytest.mark.parametrize("backend", ["triton-cpu", pytest.param("triton-cuda", marks=GPU)])
def test_only_the_declared_probes_run_a_skipped_ghost_makes_no_ghost_call(host, evidence_of, backend):
    """The candidate counts its forward calls and a plugin probe, run after the built-in ones, reads the count: with
    the `ghost` check on, the worker called the forward once more than the two trials; with it skipped, not at all,
    and no ghost call reaches the evidence."""
    problem = load_problem("relu")
    counted = {}
    for label, checks in (("with ghost", ("structure", "ghost")), ("without", ("structure",))):
        config = EvalConfig(
            backend=backend,
            trials=2,
            use_cache=False,
            checks={n: {} for n in checks},
            enable_checks={"test-counts-calls": {}},
        )
        with Evaluator(config, registry=None, host=host) as evaluator:
            result = evaluator.evaluate(COUNTING_RELU, problem)
        assert result.correct and not result.hacked, result.message
        verdict = next(v for v in result.checks if v.name == "test-counts-calls")
        counted[label] = (verdict.reason, [call.probe for call in evidence_of[-1].probes])
    assert counted["with ghost"] == ("3 calls", ["ghost", "forward-calls"]), counted
    assert counted["without"] == ("2 calls", ["forward-calls"]), counted


def test_the_reference_side_computes_only_the_declared_probes_outputs():
    """The trusted side's forwards for the built-in probes, counted: none for an undeclared probe (the ghost's
    inputs are still answered for `precomputed`, whose decoy that answer is)."""
    from tritongym.core.worker.input_source import InputSource
    from tritongym.core.worker.probes import reference_probe_outputs

    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x.relu()

    sets = [[torch.randn(4, 5)] for _ in range(2)]
    source = InputSource.held(sets, ghost=[torch.randn(4, 5)], precomputed=[torch.randn(4, 5)])
    modes = {"mode:grad+train", "mode:no_grad+eval", "mode:grad+eval"}
    for wanted, calls, names in (
        (set(BUILTIN_PROBES), 5, modes | {"ghost", "precomputed"}),
        ({"refresh", "repeat"}, 0, set()),
        ({"modes"}, 3, modes),
        ({"ghost"}, 1, {"ghost"}),
        ({"precomputed"}, 2, {"ghost", "precomputed"}),
    ):
        model = Counting()
        refs = reference_probe_outputs(model, source, wanted=wanted)
        assert (model.calls, set(refs)) == (calls, names), wanted


def test_a_check_naming_an_unregistered_probe_is_a_config_error(host):
    config = EvalConfig(backend="triton-cpu", checks={"structure": {}, "test-reads-missing": {}})
    with pytest.raises(ConfigError, match=r"check 'test-reads-missing' .* reads probe 'no-such-probe'.*known probes"):
        Evaluator(config, registry=None, host=host)


BAD_PROBES = '''
from tritongym import hookimpl
from tritongym.core.interfaces import Probe


class NoTarget(Probe):
    """No target."""
    name = "no-target"
    target = "just_a_module"


class Ghost(Probe):
    """A built-in's name."""
    name = "ghost"
    target = "m:f"


class FakeBuiltin(Probe):
    """Claims a hard-wired implementation that does not exist."""
    name = "my-ghost"
    builtin = True


class BadReference(Probe):
    """A trusted half that names no function."""
    name = "bad-reference"
    target = "m:f"
    reference = "m"


@hookimpl
def register_probes(register):
    for probe in (NoTarget, Ghost, FakeBuiltin, BadReference):
        register(probe)
'''


def test_a_probe_needs_module_function_targets_and_its_own_name(tmp_path):
    plugin = tmp_path / "bad_probes.py"
    plugin.write_text(BAD_PROBES)
    with pytest.warns(PluginWarning) as caught:
        host = PluginHost(extra_plugins=[str(plugin)], load_entry_points=False)
    messages = " | ".join(str(w.message) for w in caught)
    assert "target 'just_a_module'; name the function the worker calls" in messages
    assert "'ghost', the name of a built-in probe" in messages
    assert "registered probe 'my-ghost' as built-in; only modes, refresh" in messages
    assert "reference 'm'; name the function the trusted side calls" in messages
    assert set(host.names("probe")) == DEFAULT_PROBES  # none of the four, and the built-ins untouched


def test_probe_answers_from_the_worker_are_bounded_and_plain():
    from tritongym.core.models import PROBE_JSON_LIMIT
    from tritongym.core.worker.plugin_probes import probe_calls

    wanted = {n: ProbeSpec(target=f"m:{n}") for n in "abcdef"} | {"ghost": ProbeSpec(builtin=True)}
    raw = {
        "a": {"json": '{"x": [1, 2]}', "error": "", "launches": [], "trial": 0},
        "b": {"json": "[" + "1," * PROBE_JSON_LIMIT + "1]", "error": "", "launches": []},
        "c": {"json": "NaN", "error": "", "launches": []},
        "d": {"json": 3, "error": "", "launches": []},
        "e": {"json": "1", "error": "", "launches": [], "trial": 7},  # no such trial: the worker lies
        "f": "not an entry",
        "ghost": {"json": "1", "error": "", "launches": []},  # a built-in's calls never arrive this way
        "unasked": {"json": "1", "error": "", "launches": []},
    }
    answers = {"a": {"json": "[3]", "error": ""}, "b": {"json": "null", "error": "ValueError: no reference"}}
    calls = {call.probe: call for call in probe_calls(raw, wanted, answers)}
    assert calls["a"].value == {"x": [1, 2]} and not calls["a"].error and calls["a"].reference == [3]
    assert "at most" in calls["b"].error and calls["b"].value is None
    assert calls["b"].reference is None and calls["b"].reference_error == "ValueError: no reference"
    assert "plain JSON" in calls["c"].error
    assert "not text" in calls["d"].error
    assert calls["e"].trial == 0 and calls["e"].value == 1
    assert "malformed" in calls["f"].error
    assert list(calls) == ["a", "b", "c", "d", "e", "f"]
    assert probe_calls("not a dict", wanted) == []
