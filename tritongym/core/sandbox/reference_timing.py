"""A task's reference timing: taken by the keeper before the candidate (or shared from another task of its problem),
reconciled once with what the pool knew, and checked for drift after the candidate's timing."""

from __future__ import annotations

import threading
import time

from tritongym.core.models import TimingReport, TimingStats
from tritongym.core.worker.protocol import DriftCheckRequest, KeeperRequest, TimeReferenceRequest, ToWorker, encode


class _ReferenceCheck:
    """The reference's timing before a candidate (`RTIM`), as one task of a problem took it for the tasks of the
    same problem that come within `TimingOptions.shared_check_s` (`WorkerPool.reference_checks`): `done` once
    the keeper answered; `timing` its `TimingReport` as JSON (None: it failed, each task times its own)."""

    __slots__ = ("done", "timing", "at")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.timing: str | None = None
        self.at = 0.0


class ReferenceTiming:
    """A `TaskDriver`'s reference timing and the pool's known timings (`WorkerPool.references`, `.bandwidth`)."""

    def _with_known_timings(self) -> None:
        updates: dict = {}
        if self.task.bandwidth_gbps is None and self.gpu in self.pool.bandwidth:
            updates["bandwidth_gbps"] = self.pool.bandwidth[self.gpu]
        if self.task.cached_reference is None and self.reference_key in self.pool.references:
            updates["cached_reference"] = self.pool.references[self.reference_key]
        compiled_key = self.reference_key + "/compile"
        if self.task.compile_reference and self.task.cached_compile_reference is None:
            if compiled_key in self.pool.references:
                updates["cached_compile_reference"] = self.pool.references[compiled_key]
        if updates:
            self.task = self.task.model_copy(update=updates)

    def _time_reference(self) -> dict | None:
        """The keeper's `RTIM` under an exclusive hold of its own; the keeper's `FAIL` answer, or None.  Under the
        lock, look again: a task of the same problem that started beside this one may have timed the reference
        while this one waited, and then a short check does instead of a full timing."""
        check = self._claim_reference_check()
        self._acquire(exclusive=True)
        try:
            self._with_known_timings()
            known = TimeReferenceRequest(
                task_id=self.task_id,
                known=self.task.cached_reference is not None,
                compile_known=self.task.cached_compile_reference is not None,
            )
            ok, answer = self._ask(KeeperRequest.TIME_REFERENCE, encode(known), exclusive=None)
            if not ok:
                return answer
            self._reference_timing(TimingReport.model_validate_json(answer["timing"]))
            self.reference_phases = {k: float(v) for k, v in answer.get("phases", {}).items()}
            self.reference_memory_mb = {k: float(v) for k, v in answer.get("memory_mb", {}).items()}
            if check is not None:
                check.timing, check.at = answer["timing"], time.monotonic()
            return None
        finally:
            self._release()
            if check is not None:
                check.done.set()

    def _claim_reference_check(self) -> _ReferenceCheck | None:
        """This task's check, for others of its problem to share (None: sharing is off)."""
        if not self.task.timing.shared_check_s:
            return None
        check = _ReferenceCheck()
        with self.pool._guard:
            self.pool.reference_checks[self.reference_key] = check
        return check

    def _shared_reference_check(self) -> bool:
        """Whether a reference timing that another task of this problem took (or is taking) serves this task: one
        taken at most `shared_check_s` ago, before this candidate existed, so nothing this candidate does can have
        slowed it, and close enough in time to pair with this candidate's timing and its drift check.  An RL
        batch's samples of a problem then cost one exclusive hold for the reference, not one each."""
        fresh_s = self.task.timing.shared_check_s
        if not fresh_s:
            return False
        with self.pool._guard:
            check = self.pool.reference_checks.get(self.reference_key)
        if check is None:
            return False
        began = time.monotonic()
        check.done.wait(self.REFERENCE_LIMIT_S)  # one being taken: wait for it rather than queue for another
        waited = time.monotonic() - began
        self.deadline += waited
        self.lock_wait_s += waited
        if check.timing is None or time.monotonic() - check.at > fresh_s:
            return False
        self._with_known_timings()
        if self.task.cached_reference is None:
            return False  # the pool dropped the known timing (it disagreed): this task times it afresh
        if self.task.compile_reference and self.task.cached_compile_reference is None:
            return False  # torch.compile's timing is still to be measured
        timing = TimingReport.model_validate_json(check.timing)
        # torch.compile's timing, if that task measured one, is that task's to report; the known one is used here
        timing.compile_reference, timing.compile_reference_source = None, None
        if timing.field_reference_source == "measured":  # the field's convention: that task's to store, known here
            timing.field_reference_source = "cached"
        self._reference_timing(timing)
        self.reference_flags = {"reference_check_shared": True}
        return True

    def _reference_timing(self, timing: TimingReport) -> None:
        """The keeper's reference timing, reconciled with the one the pool or the registry already knew."""
        self.timing = timing
        self.reference_before = timing.reference_before
        if self.task.cached_reference is not None:
            cached = timing.reference_cached = TimingStats.model_validate(self.task.cached_reference)
            before = self.reference_before
            if before is not None and not self.task.timing.cached_reference_stands(before.median_ms, cached.median_ms):
                # the Evaluator drops the registry's copies on this same test (`TimingOptions.cached_reference_stands`,
                # in `_reconcile_timing`); the
                # pool's must go too, or the next task would be handed the stale timing again and the
                # registry would never be refilled
                self.pool.references.pop(self.reference_key, None)
                measured = timing.compile_reference is not None and not self.task.cached_compile_reference
                if not measured:  # a compiled timing measured in this task is as fresh as the paired one
                    self.pool.references.pop(self.reference_key + "/compile", None)
        elif self.reference_before is not None:
            self.pool.references.setdefault(self.reference_key, self.reference_before.model_dump())
        if self.task.compile_reference and self.task.cached_compile_reference is not None:
            cached = TimingStats.model_validate(self.task.cached_compile_reference)
            timing.compile_reference, timing.compile_reference_source = cached, "cached"
        elif timing.compile_reference is not None:
            timing.compile_reference_source = "measured"
            self.pool.references.setdefault(self.reference_key + "/compile", timing.compile_reference.model_dump())
        else:
            timing.compile_reference_source = None
        if timing.bandwidth_gbps:
            self.pool.bandwidth.setdefault(self.gpu, timing.bandwidth_gbps)

    def _drift_check_in_hold(self, payload: bytes) -> None:
        """The worker's `RCHK`: the reference's drift check (`DRFT`) inside the worker's exclusive timing hold,
        answered `RCHD` (empty: the worker never sees the reference's numbers).  Only a correct candidate told
        `TIME` may ask, once, while it holds the GPU exclusively; anything else is a malformed frame (the worker is
        killed)."""
        if payload:
            raise ValueError("RCHK carries no payload")
        if not self.told_time:
            raise ValueError("RCHK before the candidate was told TIME")
        if self.drift_checked:
            raise ValueError("RCHK after the reference's drift check was already done for this task")
        if self.holding != "exclusive":
            raise ValueError("RCHK without holding the GPU exclusively (it belongs inside the timing hold)")
        self.drift_checked = True
        self.phase = "the reference's drift check"
        self.reference_after = self._drift_check(exclusive=None)  # the worker's exclusive hold
        self.phase = "timing"
        self.worker.send(ToWorker.CHECKED)

    DRIFT_RETRY_ABOVE = 1.1
    """A drift check that finds the reference this much slower than before the candidate is taken once more,
    settled (`Keeper.drift_check`'s `settle`), and the faster of the two kept: the H100 sweep accused three
    honest kernels (2.5-3.5x) while the GPU's memory was nearly full; work a candidate leaves running is still
    running for the second look."""

    def _drift_check(self, exclusive: bool | None) -> TimingStats | None:
        """The keeper's drift check (`DRFT`, `Keeper.drift_check`): the reference re-timed; None if it failed."""
        ok, after = self._ask(KeeperRequest.DRIFT_CHECK, encode(DriftCheckRequest(task_id=self.task_id)), exclusive)
        if not ok:
            return None
        stats = TimingStats.model_validate_json(after["reference_after"])
        before = self.reference_before
        if before is not None and before.median_ms > 0 and stats.median_ms > self.DRIFT_RETRY_ABOVE * before.median_ms:
            settled = DriftCheckRequest(task_id=self.task_id, settle=True)
            ok, again = self._ask(KeeperRequest.DRIFT_CHECK, encode(settled), exclusive)
            if ok:
                second = TimingStats.model_validate_json(again["reference_after"])
                stats = min(stats, second, key=lambda s: s.median_ms)
        return stats
