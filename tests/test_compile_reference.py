"""The torch.compile reference: compiled and checked against eager (real torch.compile, on the CPU here),
its timing cached per problem / device class / precision (the parent's logic on worker-style numbers, with
a real registry), m010, the stored-verdict backfill, and the `speedup` reward against it.

The GPU path (the worker compiling and timing both references before any candidate code) runs in
`tests/test_gpu.py::test_compile_reference_is_timed_cached_and_stored`; CI has no GPU.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import registry_before

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.models import Candidate, Evidence, TimingReport, TimingStats
from tritongym.core.plugins import PluginHost
from tritongym.core.registry.migrations import migrate
from tritongym.core.worker.compiled_reference import CompiledReferenceUnavailable, compile_reference
from tritongym.core.worker_task import WorkerTask

TOLERANCES = tolerances_for("ieee", {})


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1) * 2.0


@torch.library.custom_op("tritongym_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


class RefusesToCompile(torch.nn.Module):
    """A custom op with no fake (meta) implementation: eager runs it, Dynamo cannot trace it."""

    def forward(self, x):
        return twice(x)


def _trials(model, n: int = 2):
    inputs = [[torch.randn(8, 32, generator=torch.Generator().manual_seed(s))] for s in range(n)]
    with torch.no_grad():
        outputs = [[model(*xs)] for xs in inputs]
    return inputs, outputs


# slow tier (16 s of Inductor's C++ compile, caches off by design): the fast tier's compiled reference is
# test_compiled_timing_is_stored_once_and_forgotten_with_the_eager_one, through the Evaluator end to end
@pytest.mark.slow
def test_compiled_reference_agrees_with_eager_or_says_why_not():
    model = Softmax()
    inputs, outputs = _trials(model)
    forward = compile_reference(model, zip(inputs, outputs), TOLERANCES)
    assert torch.allclose(forward(inputs[1]), outputs[1][0], atol=1e-6)

    wrong = [[out[0] * 3] for out in outputs]  # as if Inductor computed another function
    with pytest.raises(CompiledReferenceUnavailable, match="disagrees with eager: trial 0 .* outside tolerance"):
        compile_reference(model, zip(inputs, wrong), TOLERANCES)

    broken = RefusesToCompile()
    inputs, outputs = _trials(broken, 1)
    with pytest.raises(CompiledReferenceUnavailable, match="torch.compile failed: .*fake tensor"):
        compile_reference(broken, zip(inputs, outputs), TOLERANCES)


def stats(ms: float) -> TimingStats:
    return TimingStats(median_ms=ms, iqr_ms=0.0, samples=50, mode="graph", l2="flushed")


def _reconciled(evaluator, problem, **timing) -> Evidence:
    evidence = Evidence(stage="done", runtime_ms=0.5, timing=TimingReport(precision="ieee", **timing))
    evaluator._reconcile_timing(evidence, WorkerTask(problem_name=problem.name, problem_source="x"), problem)
    return evidence


def test_compiled_timing_is_stored_once_and_forgotten_with_the_eager_one(evaluator, relu_problem):
    """Worker-style numbers (the GPU produces them in test_gpu.py); what is tested is the parent's bookkeeping."""
    registry, key = evaluator.registry, (relu_problem.key, evaluator.device_class, evaluator.config.precision)
    first = _reconciled(
        evaluator,
        relu_problem,
        reference_before=stats(1.0),
        compile_reference=stats(0.8),
        compile_reference_source="measured",
    )
    assert (first.ref_runtime_ms, first.compile_ref_runtime_ms) == (1.0, 0.8)
    assert registry.reference_timing(*key)["median_ms"] == 1.0
    assert registry.reference_timing(*key, variant="compile")["median_ms"] == 0.8

    # a cached compiled timing is used, not stored again
    registry.store_reference_timing(*key, stats(0.7).model_dump(), "", variant="compile")
    cached = _reconciled(
        evaluator,
        relu_problem,
        reference_before=stats(1.0),
        reference_cached=stats(1.0),
        compile_reference=stats(0.7),
        compile_reference_source="cached",
    )
    assert cached.compile_ref_runtime_ms == 0.7
    assert registry.reference_timing(*key, variant="compile")["median_ms"] == 0.7

    # the eager reference drifted: the device changed, so both cached baselines are dropped
    _reconciled(evaluator, relu_problem, reference_before=stats(1.4), reference_cached=stats(1.0))
    assert registry.reference_timing(*key) is None and registry.reference_timing(*key, variant="compile") is None

    # drift in a task that measured the compiled reference afresh: that timing is as new as the paired one
    registry.store_reference_timing(*key, stats(1.0).model_dump(), "")
    _reconciled(
        evaluator,
        relu_problem,
        reference_before=stats(1.4),
        reference_cached=stats(1.0),
        compile_reference=stats(0.9),
        compile_reference_source="measured",
    )
    assert registry.reference_timing(*key) is None
    assert registry.reference_timing(*key, variant="compile")["median_ms"] == 0.9
    registry.forget_reference_timing(*key, variant="compile")

    # a worker that could not compile sends no compiled timing: nothing claimed, nothing stored
    none = _reconciled(evaluator, relu_problem, reference_before=stats(1.0), notes=["no torch.compile reference: x"])
    assert none.compile_ref_runtime_ms is None and registry.reference_timing(*key, variant="compile") is None


def test_the_task_asks_for_the_compiled_reference_only_where_it_can_be_timed(registry, relu_problem):
    host = PluginHost(load_entry_points=False)
    cpu = Evaluator(EvalConfig(backend="triton-cpu", compile_reference=True), registry=registry, host=host)
    task = cpu._task(Candidate(source="x = 1\n"), relu_problem)
    assert task.compile_reference is False and task.cached_compile_reference is None  # triton-cpu times nothing


def test_a_stored_verdict_learns_its_compiled_speedup(registry, relu_problem):
    """A kernel judged before its problem's compiled reference was timed gets compile_speedup from the
    registry's compiled timing when a run asks for it, in the row and in the stored result; its verdict is
    untouched.  The timed verdict is the real triton-cpu one with a runtime written in by hand (the CPU
    backend does not time)."""
    host = PluginHost(load_entry_points=False)
    config = EvalConfig(backend="triton-cpu", trials=1, timeout_s=60)
    with Evaluator(config, registry=registry, host=host) as plain:
        judged = plain.evaluate(relu_problem.solution, relu_problem)
    assert judged.honest_and_correct and judged.compile_speedup is None
    registry.refresh(judged.model_copy(update={"runtime_ms": 0.5}))
    with Evaluator(config.model_copy(update={"compile_reference": True}), registry=registry, host=host) as wants:
        before = wants.evaluate(relu_problem.solution, relu_problem)
        assert before.cached and before.compile_speedup is None  # no compiled timing known yet: unknown
        registry.store_reference_timing(
            relu_problem.key, "cpu", config.precision, stats(0.75).model_dump(), "", variant="compile"
        )
        after = wants.evaluate(relu_problem.solution, relu_problem)
    assert after.cached and after.compile_ref_runtime_ms == 0.75 and after.compile_speedup == pytest.approx(1.5)
    assert after.status == judged.status and after.kernel_id == judged.kernel_id
    row = registry.db["evaluations"].get(judged.evaluation_id)
    assert (row["compile_ref_runtime_ms"], row["compile_speedup"]) == (0.75, pytest.approx(1.5))
    assert json.loads(row["result"])["compile_speedup"] == pytest.approx(1.5)
    with Evaluator(config, registry=registry, host=host) as plain:  # a run that did not ask reads what is stored
        assert plain.evaluate(relu_problem.solution, relu_problem).compile_speedup == pytest.approx(1.5)


def test_m010_keeps_eager_timings_and_adds_the_compile_columns(tmp_path):
    db = registry_before(tmp_path / "old.db", "m010")
    db["reference_timings"].insert(
        {"problem_key": "p", "device_class": "H100", "precision": "ieee", "runtime_ms": 1.0, "stats": "{}"}
    )
    assert migrate(db)[0] == "m010_compile_reference"  # then any later migrations
    rows = list(db["reference_timings"].rows)
    assert [(r["problem_key"], r["variant"], r["runtime_ms"]) for r in rows] == [("p", "eager", 1.0)]
    assert db["reference_timings"].pks == ["problem_key", "device_class", "precision", "variant"]
    db["reference_timings"].insert(
        {"problem_key": "p", "device_class": "H100", "precision": "ieee", "variant": "compile"}
    )
    assert db["reference_timings"].count == 2
    assert {"compile_ref_runtime_ms", "compile_speedup"} <= set(db["evaluations"].columns_dict)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [("eager", 2.0), ("compile", 0.8)],
)
def test_speedup_reward_against_either_baseline(reference, expected):
    from test_rewards import _evaluator, _result

    evaluator = _evaluator(rewards={"speedup": 1.0}, reward_options={"speedup": {"reference": reference}})
    result = _result(speedup=2.0, compile_ref_runtime_ms=0.8, compile_speedup=0.8)
    assert evaluator._score(result).components["speedup"] == pytest.approx(expected)
    untimed = _result(speedup=2.0)  # eager timed, compiled not: the compiled component is absent, and says why
    breakdown = evaluator._score(untimed)
    if reference == "compile":
        assert "speedup" not in breakdown.components and "compile_reference = true" in breakdown.absent["speedup"]
    else:
        assert breakdown.components["speedup"] == 2.0
