"""The pool's wire protocol (`worker/protocol.py`) and the decisions it carries once: no processes, no GPU."""

from __future__ import annotations

import pytest

from tritongym.core.models import OutputComparison, TrialEvidence
from tritongym.core.sandbox.keeper_calls import KeeperCalls
from tritongym.core.sandbox.processes import KeeperRefused
from tritongym.core.verdict import judge_every_trial
from tritongym.core.worker import frames
from tritongym.core.worker.protocol import (
    MALFORMED,
    WORKER_HIDDEN,
    KeeperRequest,
    record_key,
    tagged,
    untagged,
    worker_view,
)
from tritongym.core.worker_task import TimingOptions, WorkerTask


def _task(**fields) -> WorkerTask:
    return WorkerTask(problem_name="p", problem_source="x = 1\n", **fields)


def test_the_candidates_worker_never_gets_the_references_numbers():
    """The parent knows the reference's median time (the pool's or the registry's) and its memory peak; the task
    it sends the candidate's worker carries neither (a candidate could shape its timing against the median)."""
    cached = {"median_ms": 1.5, "iqr_ms": 0.01, "samples": 10, "mode": "graph"}
    task = _task(cached_reference=cached, cached_compile_reference=cached, reference_peak_mb=512.0, seeds=[3])
    seen = worker_view(task)
    assert all(getattr(seen, f) is None for f in WORKER_HIDDEN)
    assert seen.seeds == [3] and record_key(seen) == record_key(task)  # the same record, the same trials
    assert task.cached_reference == cached  # the parent's copy keeps them


def test_a_relayed_payload_reaches_the_keeper_byte_for_byte():
    payload = frames.tensors_to_bytes({"ids": [1], "values": [b"\n\n"]})
    assert untagged(tagged("0123abcd", payload)) == ("0123abcd", payload)
    with pytest.raises(ValueError, match="no task id"):
        untagged(b"no separator")


def test_the_keeper_names_undecodable_worker_bytes_malformed():
    from tritongym.core.keeper.keeper import _from_worker
    from tritongym.core.worker.stages import StageError

    with pytest.raises(StageError) as caught:
        _from_worker(tagged("0123abcd", b"not torch.save bytes"))
    assert caught.value.stage == MALFORMED


class _Answers(KeeperCalls):
    """A driver's keeper calls with the keeper's answer given (the refusal rules under test, no process)."""

    def __init__(self, answer: dict) -> None:
        self.answer = answer

    def _ask(self, kind, payload, exclusive=False):
        return False, self.answer


def test_a_relayed_payload_the_keeper_cannot_read_is_the_workers_crash_not_the_keepers_failure():
    """The keeper's refusal is the infrastructure's (retried, never a verdict), except where what it could not read
    is the worker's own bytes, relayed unopened: that is the malformed frame the pool's decoding used to catch."""
    error = {"kind": "UnpicklingError", "message": "undecodable"}
    with pytest.raises(ValueError, match="could not read"):
        _Answers({"stage": MALFORMED, "error": error})._ask_or_refused(KeeperRequest.FILL, b"")
    with pytest.raises(KeeperRefused, match="on FILL"):
        _Answers({"stage": "keeper", "error": error})._ask_or_refused(KeeperRequest.FILL, b"")


def _trial(abs_err: float) -> TrialEvidence:
    out = OutputComparison(index=0, is_tensor=True, numel=4, mismatched=int(abs_err > 0), max_abs_err=abs_err)
    return TrialEvidence(seed=1, outputs=[out], n_outputs=1, ref_n_outputs=1)


def test_every_trial_matched_is_one_rule_with_the_planned_count():
    """The pool's `TIME` or `STOP`: every trial matched and none of those planned is missing."""
    assert judge_every_trial([_trial(0.0), _trial(0.0)], planned=2).correct
    short = judge_every_trial([_trial(0.0)], planned=2)
    assert not short.correct and "1 of 2 planned trials did not run" in short.message
    assert not judge_every_trial([_trial(0.0), _trial(1.0)], planned=2).correct
    assert judge_every_trial([_trial(0.0)]).correct  # the Evaluator, which does not know the plan


def test_a_cached_reference_stands_within_the_tolerance_only():
    timing = TimingOptions(reconcile_tolerance=0.05)
    assert timing.cached_reference_stands(1.04, 1.0)
    assert not timing.cached_reference_stands(1.06, 1.0)
    assert not timing.cached_reference_stands(0.94, 1.0)
