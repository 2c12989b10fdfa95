"""What the parent makes of GPU timings: reference-cache reconciliation, sabotage and roofline verdicts.

The numbers here are the kind a GPU worker reports (the GPU path itself runs in test_gpu.py); what is
tested is the parent's logic on them, with a real registry.
"""

from __future__ import annotations

from tritongym.core.models import Candidate, Evidence, TimingReport, TimingStats
from tritongym.core.worker_task import WorkerTask
from tritongym.plugins.checks.timing import TimingIntegrityCheck


def stats(ms: float, iqr: float = 0.0, l2: str = "flushed") -> TimingStats:
    return TimingStats(median_ms=ms, iqr_ms=iqr, samples=50, mode="graph", l2=l2)


def evidence_with(timing: TimingReport) -> Evidence:
    return Evidence(stage="done", timing=timing, runtime_ms=timing.candidate.median_ms if timing.candidate else None)


def task(problem) -> WorkerTask:
    return WorkerTask(problem_name=problem.name, problem_source=problem.source)


def test_first_paired_timing_is_cached_then_reused_then_forgotten(evaluator, relu_problem):
    registry, key = evaluator.registry, (relu_problem.key, evaluator.device_class, evaluator.config.precision)
    first = evidence_with(TimingReport(precision="ieee", reference_before=stats(1.0), candidate=stats(0.5)))
    evaluator._reconcile_timing(first, task(relu_problem), relu_problem)
    assert first.ref_runtime_ms == 1.0 and first.timing.reference_source == "paired"
    assert registry.reference_timing(*key)["median_ms"] == 1.0

    agree = evidence_with(
        TimingReport(precision="ieee", reference_before=stats(1.03), reference_cached=stats(1.0), candidate=stats(0.5))
    )
    evaluator._reconcile_timing(agree, task(relu_problem), relu_problem)
    assert agree.ref_runtime_ms == 1.0 and agree.timing.reference_source == "cached"

    drifted = evidence_with(
        TimingReport(precision="ieee", reference_before=stats(1.3), reference_cached=stats(1.0), candidate=stats(0.5))
    )
    evaluator._reconcile_timing(drifted, task(relu_problem), relu_problem)
    assert drifted.ref_runtime_ms == 1.3 and "disagreed" in drifted.timing.notes[0]
    assert registry.reference_timing(*key) is None  # the next task times the reference in full again


def test_roofline_and_bandwidth_are_recorded(evaluator, relu_problem):
    timing = TimingReport(
        precision="ieee",
        reference_before=stats(1.0),
        candidate=stats(0.5),
        bytes_moved=3_000_000_000,
        bandwidth_gbps=3000.0,
    )
    evidence = evidence_with(timing)
    evaluator._reconcile_timing(evidence, task(relu_problem), relu_problem)
    assert abs(timing.roofline_ms - 1.0) < 1e-9
    assert evaluator.registry.bandwidth(evaluator.device_class) == 3000.0


def judge(timing: TimingReport, relu_problem):
    return TimingIntegrityCheck().judge(evidence_with(timing), Candidate(source=""), relu_problem)


def test_sabotaged_reference_fails_the_timing_check(relu_problem):
    honest = TimingReport(
        precision="ieee", candidate=stats(0.5), reference_before=stats(1.0, 0.01), reference_after=stats(1.04, 0.01)
    )
    assert judge(honest, relu_problem).passed
    slowed = honest.model_copy(update={"reference_after": stats(1.6, 0.01)})
    verdict = judge(slowed, relu_problem)
    assert not verdict.passed and "slowed the baseline" in verdict.reason


def test_faster_than_the_roofline_is_implausible(relu_problem):
    timing = TimingReport(
        precision="ieee", candidate=stats(0.1), roofline_ms=1.0, bytes_moved=3_000_000_000, bandwidth_gbps=3000.0
    )
    verdict = judge(timing, relu_problem)
    assert not verdict.passed and "implausibly fast" in verdict.reason
    # with the L2 warm the roofline says nothing, and an untimed result passes
    assert judge(timing.model_copy(update={"candidate": stats(0.1, l2="warm")}), relu_problem).passed
    assert judge(TimingReport(precision="ieee"), relu_problem).passed


def test_the_roofline_holds_only_where_the_reference_itself_is_above_it(relu_problem):
    """Every input byte is counted; a trace reads the diagonal and an NLL loss one logit per row, so their
    references ran at 0.004 ms against a "roofline" of 0.016 ms on an H200, and FlagGems' honest kernels were
    `hacked`.  A reference below the floor says the count is wrong for the problem: the roofline is not applied."""
    timing = TimingReport(
        precision="ieee", candidate=stats(0.1), roofline_ms=1.0, bytes_moved=3_000_000_000, bandwidth_gbps=3000.0
    )
    evidence = evidence_with(timing)
    evidence.ref_runtime_ms = 0.12
    assert TimingIntegrityCheck().judge(evidence, Candidate(source=""), relu_problem).passed
    evidence.ref_runtime_ms = 1.2
    verdict = TimingIntegrityCheck().judge(evidence, Candidate(source=""), relu_problem)
    assert not verdict.passed and "implausibly fast" in verdict.reason


def test_timing_keeps_two_pristine_sets_for_a_candidate_and_may_keep_one_for_the_reference():
    """Two pristine sets whatever their size, so a candidate's pointer-keyed cache goes stale between samples; the
    keeper's lean retry (`Keeper._time_lean_on_oom`, after level 1's 96_HuberLoss ran it out of GPU memory on an
    H100) times the trusted reference from one.  Small sets fill the byte budget."""
    import torch

    from tritongym.core.measure.tensors import timing_inputs

    made = []

    def make(k, numel=1 << 20):
        made.append(k)
        return [torch.full((numel,), float(k))]

    huge = 8 << 20  # bytes of one set against a 4 MiB budget: "huge"
    assert len(timing_inputs(make, 3, budget=huge // 2)) == 2
    assert len(timing_inputs(make, 3, budget=huge // 2, least=1)) == 1
    assert len(timing_inputs(lambda k: make(k, 16), 3, budget=huge)) == 3
    assert [float(s[0][0]) for s in timing_inputs(make, 3, budget=huge // 2)] == [0.0, 1.0]
