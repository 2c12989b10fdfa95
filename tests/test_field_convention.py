"""Speedups against the field's convention (`core/measure/field_convention.py`): which problems need a second
reference timing (measured from one traced forward), the keeper's bookkeeping of it, the Evaluator's verdict
fields and registry cache, m017, and `tritongym report` giving Fast@p both ways.

Run on the CPU; the GPU path (a fp32 matmul's reference slower under the field's convention than in its own class)
is `tests/test_gpu.py::test_the_field_convention_times_a_fp32_matmul_slower_than_its_own_class`.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import registry_before, task_for
from typer.testing import CliRunner

from tritongym.cli.app import app
from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.keeper.keeper import Keeper, ReferenceRecord
from tritongym.core.measure.field_convention import (
    FIELD_SWITCHES,
    differing_switches,
    field_switches,
    sensitive_ops,
)
from tritongym.core.models import Candidate, Evidence, TimingReport, TimingStats
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.registry.migrations import migrate
from tritongym.core.reports.fast_p import P_VALUES, p_key
from tritongym.core.reports.run_report import run_report
from tritongym.core.worker_task import WorkerTask


def stats(ms: float) -> TimingStats:
    return TimingStats(median_ms=ms, iqr_ms=0.0, samples=50, mode="graph", l2="flushed")


# --- which problems the field's convention can change -------------------------------------------------------


def test_the_switches_that_differ_from_the_field_follow_the_policy():
    assert FIELD_SWITCHES == {"matmul": False, "cudnn": True}  # torch's defaults, which KernelBench leaves alone
    assert differing_switches("tf32") == differing_switches("half") == ["matmul"]
    assert differing_switches("ieee") == ["cudnn"]


def test_only_float32_ops_of_a_differing_family_count():
    x = torch.randn(4, 8)
    linear = torch.nn.Linear(8, 3)
    assert sensitive_ops(linear, [x], ["matmul"]) == ["addmm"]
    assert sensitive_ops(lambda a: a @ a.T, [x], ["matmul"]) == ["mm"]
    assert sensitive_ops(lambda a: torch.bmm(a, a.transpose(1, 2)), [x[None]], ["matmul"]) == ["bmm"]
    half = x.to(torch.bfloat16)
    assert sensitive_ops(lambda a: a @ a.T, [half], ["matmul"]) == []  # TF32 switches leave bf16 GEMMs alone
    assert sensitive_ops(lambda a: torch.softmax(a, -1).sum(), [x], ["matmul", "cudnn"]) == []
    conv = torch.nn.Conv2d(2, 3, 3)
    image = torch.randn(1, 2, 6, 6)
    assert sensitive_ops(conv, [image], ["matmul"]) == []  # under tf32 cuDNN's switch is the field's already
    assert sensitive_ops(conv, [image], ["cudnn"]) == ["convolution"]
    assert sensitive_ops(linear, [x], []) == []


def test_the_field_switches_are_set_then_put_back():
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
    torch.set_float32_matmul_precision("high")
    try:
        with field_switches():
            assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is True
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cuda.matmul.allow_tf32 is True and torch.backends.cudnn.allow_tf32 is False
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
        torch.set_float32_matmul_precision("highest")


# --- the keeper ---------------------------------------------------------------------------------------------


def _record(tmp_path, name: str, **update) -> tuple[WorkerTask, ReferenceRecord]:
    problem = load_problem(name, "cpu")
    task = task_for(problem, None, precision="tf32", seeds=[1], **update)
    (tmp_path / name).mkdir()
    return task, ReferenceRecord(task, str(tmp_path / name), torch.device("cpu"))


def test_the_keeper_times_the_field_convention_only_where_it_differs(tmp_path):
    keeper = Keeper("cpu")
    task, record = _record(tmp_path, "relu")
    timing = TimingReport(precision="tf32")
    keeper._time_field(task, record, timing, phases := {})
    # no float32 matmul: the field's reference time is the own class's, and no second timing is taken
    assert (timing.field_reference, timing.field_reference_source, timing.field_ops) == (None, "same_as_own", [])
    assert "time_field_reference" in phases
    again = TimingReport(precision="tf32")
    keeper._time_field(task, record, again, phases := {})
    assert again.field_reference_source == "same_as_own" and phases == {}  # kept: no second traced forward

    task, record = _record(tmp_path, "matmul")
    timing = TimingReport(precision="tf32")
    keeper._time_field(task, record, timing, {})
    # a fp32 GEMM under the tf32 policy: a second timing is due, which a CPU keeper (no timer) cannot take; the
    # field's speedup is then unknown, with the reason, and never made up
    assert timing.field_reference is None and timing.field_reference_source is None
    assert any(note.startswith("no field-convention reference") for note in timing.notes)

    cached = TimingReport(precision="tf32")
    keeper._time_field(task.model_copy(update={"cached_field_reference": stats(2.0).model_dump()}), record, cached, {})
    assert cached.field_reference == stats(2.0) and cached.field_reference_source == "cached"


# --- the Evaluator: verdict fields and the registry's cache ---------------------------------------------------


def _reconciled(evaluator, problem, runtime_ms: float = 0.5, **timing) -> tuple[Evidence, dict]:
    evidence = Evidence(stage="done", runtime_ms=runtime_ms, timing=TimingReport(precision="tf32", **timing))
    evaluator._reconcile_timing(evidence, WorkerTask(problem_name=problem.name, problem_source="x"), problem)
    return evidence, evaluator._field_speedup(evidence)


@pytest.fixture
def gpu_evaluator(registry, monkeypatch):
    """The Evaluator's parent-side bookkeeping as a GPU backend's (worker-style numbers: the GPU makes them in
    test_gpu.py)."""
    evaluator = Evaluator(EvalConfig(backend="triton-cpu"), registry=registry, host=PluginHost(load_entry_points=False))
    monkeypatch.setattr(type(evaluator.backend), "device_type", "cuda", raising=False)
    return evaluator


def test_a_measured_field_timing_is_stored_used_and_forgotten_with_the_own_one(gpu_evaluator, relu_problem):
    evaluator, registry = gpu_evaluator, gpu_evaluator.registry
    key = (relu_problem.key, evaluator.device_class, evaluator.config.precision)
    evidence, fields = _reconciled(
        evaluator,
        relu_problem,
        reference_before=stats(1.0),
        field_reference=stats(6.0),
        field_reference_source="measured",
    )
    assert evidence.ref_runtime_ms == 1.0
    assert fields == {"field_convention": "timed", "field_ref_runtime_ms": 6.0, "speedup_field": 12.0}
    assert registry.reference_timing(*key, variant="field")["median_ms"] == 6.0
    assert evaluator._registry_facts(relu_problem)["cached_field"]["median_ms"] == 6.0
    task = evaluator._task(Candidate(source="x = 1\n"), relu_problem)
    assert task.cached_field_reference["median_ms"] == 6.0  # the keeper then times only the own class

    # the own-class timing drifted: the device changed, the field's cached timing goes with it
    _reconciled(evaluator, relu_problem, reference_before=stats(1.4), reference_cached=stats(1.0))
    assert registry.reference_timing(*key, variant="field") is None

    # same as its own class: the field's speedup is the speedup, nothing stored
    evidence, fields = _reconciled(
        evaluator, relu_problem, reference_before=stats(1.0), field_reference_source="same_as_own"
    )
    assert fields == {"field_convention": "same_as_own", "field_ref_runtime_ms": 1.0, "speedup_field": 2.0}
    assert registry.reference_timing(*key, variant="field") is None

    # the keeper could not tell: unknown, not guessed
    _, fields = _reconciled(evaluator, relu_problem, reference_before=stats(1.0), notes=["no field-convention x"])
    assert fields == {}


def test_a_cpu_verdict_says_the_two_conventions_are_one_and_is_stored_so(evaluator, relu_problem):
    result = evaluator.evaluate(relu_problem.solution, relu_problem)
    assert result.honest_and_correct and result.speedup is None
    assert (result.field_convention, result.speedup_field, result.field_ref_runtime_ms) == ("same_as_own", None, None)
    row = evaluator.registry.db["evaluations"].get(result.evaluation_id)
    assert (row["field_convention"], row["speedup_field"]) == ("same_as_own", None)
    history = evaluator.registry.kernel_history(result.kernel_id)
    assert history["evaluations"][0]["field_convention"] == "same_as_own"
    from tritongym.api import kernel_history

    found = kernel_history(result.kernel_id, registry=evaluator.registry.path)
    assert found.evaluations[0].field_convention == "same_as_own" and found.evaluations[0].speedup_field is None


def test_m017_adds_the_field_columns_to_old_rows(tmp_path):
    db = registry_before(tmp_path / "old.db", "m017")
    assert "speedup_field" not in db["evaluations"].columns_dict
    assert migrate(db)[0] == "m017_field_convention_speedup"
    assert {"field_ref_runtime_ms", "speedup_field", "field_convention"} <= set(db["evaluations"].columns_dict)


# --- the report, both ways ----------------------------------------------------------------------------------


@pytest.fixture
def two_way_run(tmp_path, relu_problem):
    """A run of two samples on a GPU-timed copy of the relu solution's verdict: 1.5x against the reference in its
    own class and 0.9x against the field's (sample A), and 3x / 1.3x (sample B); then a verdict stored before the
    field's convention (no field speedup: unknown there)."""
    registry = Registry(tmp_path / "r.db")
    evaluator = Evaluator(
        EvalConfig(backend="triton-cpu", trials=1), registry=registry, host=PluginHost(load_entry_points=False)
    )
    with evaluator:
        correct = evaluator.evaluate(relu_problem.solution, relu_problem)

    def timed(speedup, field, kernel):
        result = correct.model_copy(
            update={
                "backend": "triton-cuda",
                "device_class": "NVIDIA H100",
                "kernel_id": kernel,
                "runtime_ms": 1.0,
                "speedup": speedup,
                "speedup_field": field,
                "field_convention": None if field is None else "timed",
            }
        )
        result.evaluation_id = registry.store(result, relu_problem, Candidate(source=relu_problem.solution + kernel))
        return result

    run = registry.start_run("eval", "two ways", {})
    registry.add_turn(run, timed(1.5, 0.9, "a"), sample=0, turn=1)
    registry.add_turn(run, timed(3.0, 1.3, "b"), sample=1, turn=1)
    old = registry.start_run("eval", "stored before", {})
    registry.add_turn(old, timed(1.5, None, "c"), sample=0, turn=1)
    yield {"registry": registry, "run": run, "old": old, "path": tmp_path / "r.db"}
    registry.close()


def fast(row) -> list:
    return [row.fast[p_key(p)] for p in P_VALUES]


def test_the_report_gives_fast_p_both_ways(two_way_run):
    registry = two_way_run["registry"]
    report = run_report(registry, two_way_run["run"])
    assert fast(report.overall.at(1)) == [1.0, 1.0, 1.0, 0.5]  # p = 1, 1.2, 1.5, 2 against its own class
    assert fast(report.overall_field.at(1)) == [0.5, 0.5, 0.0, 0.0]  # against the field's convention
    field = run_report(registry, two_way_run["run"], reference="field")
    assert field.reference == "field" and field.overall == report.overall_field
    old = run_report(registry, two_way_run["old"])
    assert fast(old.overall.at(1)) == [1.0, 1.0, 1.0, 0.0]
    assert fast(old.overall_field.at(1)) == [None] * 4 and old.overall_field.untimed_correct == 1


def test_the_cli_report_prints_and_emits_both(two_way_run):
    runner = CliRunner()
    db = str(two_way_run["path"])
    text = runner.invoke(app, ["report", str(two_way_run["run"]), "--registry", db], catch_exceptions=False)
    assert text.exit_code == 0, text.output
    assert "against the field's convention" in text.stdout and "KernelBench" in text.stdout
    emitted = runner.invoke(app, ["report", str(two_way_run["run"]), "--registry", db, "--json"])
    data = json.loads(emitted.stdout)
    assert data == run_report(two_way_run["registry"], two_way_run["run"]).model_dump(mode="json")
    assert data["overall_field"]["turns"][0]["fast"]["1"] == 0.5
    old = runner.invoke(app, ["report", str(two_way_run["old"]), "--registry", db], catch_exceptions=False)
    assert "unknown against the field's convention: 1 correct kernel(s)" in old.stdout
    from tritongym.api import report

    assert (
        report(two_way_run["run"], registry=db).overall_field
        == run_report(two_way_run["registry"], two_way_run["run"]).overall_field
    )
