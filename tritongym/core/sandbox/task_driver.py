"""One task driven through one worker and its GPU's keeper (`TaskDriver`), from the reference's side to `Evidence`.

The driver is cut along its seams: its keeper calls and GPU holds (`keeper_calls.py`), its memory admission
(`admission.py`), its reference timing (`reference_timing.py`) and its evidence (`task_evidence.py`); what is left
here is the order of one task and the worker's frames, each handled by one method (`HANDLERS`, a table over
`protocol.FromWorker`, as pytest-xdist's parent dispatches its workers' events).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

from tritongym.core.models import ErrorInfo, Evidence, ProfileEntry, TimingReport, TimingStats, TrialEvidence
from tritongym.core.sandbox.admission import TaskMemory
from tritongym.core.sandbox.compile_clock import CompileClock
from tritongym.core.sandbox.keeper_calls import KeeperCalls
from tritongym.core.sandbox.problem_gpus import reference_key
from tritongym.core.sandbox.processes import CLOSED, END_OF_STREAM, KeeperProcess, KeeperUnavailable, Worker
from tritongym.core.sandbox.reference_timing import ReferenceTiming
from tritongym.core.sandbox.task_evidence import EvidenceAssembly, out_of_memory_beside_others
from tritongym.core.verdict import judge_every_trial
from tritongym.core.worker import frames
from tritongym.core.worker.protocol import (
    FromWorker,
    HandoutAsk,
    HandoutsLent,
    KeeperRefusal,
    KeeperRequest,
    LendRequest,
    PrepareRequest,
    ScreenRequest,
    ToWorker,
    encode,
    tagged,
    worker_view,
)
from tritongym.core.worker_task import WorkerTask


class TaskDriver(KeeperCalls, TaskMemory, ReferenceTiming, EvidenceAssembly):
    """Feeds one task to one worker and the GPU's keeper, and turns their answers into `Evidence`.

    Order of one evaluation: the keeper builds (or finds) the reference's side (`PREP`, GPU shared) and times
    the reference (`RTIM`, GPU exclusive); then the candidate's worker gets the task, lends its outputs to
    the keeper (`HOUT`/`HAND`, relayed as `LEND`, copied by CUDA IPC; on the CPU `HDAT`, relayed unopened as `FILL`)
    and sends its report (`CAND`), which the keeper compares (`CMPR`); if every trial matched (`judge_every_trial`,
    the Evaluator's rule), the worker times the candidate and, still holding the GPU exclusively, asks for the
    reference's drift check (`RCHK`, relayed as `DRFT`, answered `RCHD` once the keeper re-timed the reference
    briefly: one exclusive hold for both, so no second drain of the GPU's sharers); then it lends the timed calls'
    outputs (`TIMD`, compared by `CMPT`).  A worker that did not ask gets the check after `TIMD`, under an exclusive
    hold of its own."""

    BUDGET_PER_REFERENCE_S = 6.0
    """The candidate's time limit grows by this many times what the reference's side took (its trials, probes
    and shape sets): a problem whose reference takes 20 s gets 120 s more than the configured floor."""

    REFERENCE_LIMIT_S = 1800.0
    """The reference's side (outputs, gold, probes, its timing) is the problem's cost, not the candidate's: it
    has this long, and a reference that takes longer is the problem's error, named so."""

    EXIT_WAIT_S = 10.0
    """How long a worker whose channel ended may take to exit by itself (a CUDA process's exit takes a moment)
    before it is killed: its own exit status says whether it died of its own or was killed from outside."""

    def __init__(
        self, pool, worker: Worker | None, task: WorkerTask, timeout_s: float, alone=False, gpu: str | None = None
    ) -> None:
        """`worker`: the candidate's; None for a screen, which the keeper of `gpu` runs (`screen_in_keeper`)."""
        self.pool, self.worker, self.task = pool, worker, task
        self.gpu: str = worker.gpu if worker is not None else str(gpu)
        self.alone = alone  # run again after running out of memory: the whole GPU's memory reserved, from the build on
        self.timeout_s = timeout_s
        self.budget_s = timeout_s
        self.lock = pool.locks[self.gpu]
        self.holding: str | None = None
        # what this task's shared holds are for (`GPULock.HOLDERS`): the reference's side until the candidate's
        # worker gets the task, a screen's controls, then the candidate
        self.holder = "screen" if task.mode == "screen" else "reference"
        self.holding_for = self.holder
        self.task_id = os.urandom(8).hex()
        self.started = time.monotonic()
        self.keeper: KeeperProcess | None = None
        self.prep: dict = {}
        self.reference_phases: dict[str, float] = {}  # seconds of the keeper's reference timing (torch.compile's)
        self.reference_memory_mb: dict[str, float] = {}  # the keeper's memory after that timing
        self.reference_flags: dict[str, bool] = {}  # whether another task's timing served (`reference_check_shared`)
        self.planned: list[TrialEvidence] = []
        self.reference_before = None
        self.timing: TimingReport | None = None
        self.candidate_seen = False
        self.told_time = False  # the candidate was judged correct and told TIME
        self.drift_checked = False  # the reference's drift check was asked of the keeper (at most once per task)
        self.reference_after: TimingStats | None = None  # its answer, until TIMD
        self.report: dict | None = None
        self.trials: list[TrialEvidence] = []
        self.timed_trials: list[TrialEvidence] = []
        self.compared: dict = {}
        self.pr: float | None = None
        self.profile: list[ProfileEntry] = []
        self.compare_s = 0.0
        self.lock_wait_s = 0.0
        # the keeper's requests: its own work, and the rest (waiting for it to finish others' requests, frames)
        self.keeper_work_s = 0.0
        self.keeper_queue_s = 0.0
        self.keeper_busy_s = 0.0
        self.phase = "the reference's side"
        self.granted_mb: float | None = None
        self.capped_here = False  # the worker's allocator cap is the pool's (`_admit`), not the configuration's
        self.reference_granted_mb: float | None = None  # the keeper's build's reservation, until it is done
        self.host_record: str | None = None  # the record whose host reservation this task holds, until it ends
        self.host_whole_mb = 0.0  # a lone task's hold on the whole host budget, until its record is measured
        # the keeper's GPU memory for this task, counted until its FREE (`_count_keeper_memory`); None: not counted
        self.keeper_mb: float | None = None
        self.device_record: tuple | None = None  # (gpu, record key) whose device memory this task counts with others
        self.answer_host_mb = 0.0  # host memory of this task's own `precomputed` answer, parked by the keeper
        self.memory_wait_s = 0.0
        self.reference_key = reference_key(task)
        self.compiles = CompileClock()  # Triton's compile seconds, kept off the candidate's budget (up to a cap)

    def drive(self) -> tuple[Evidence, bool]:
        """(evidence, whether the worker or the keeper died without finishing)."""
        started = self.started = time.monotonic()
        self._with_known_timings()
        self.deadline = started + self.timeout_s
        try:
            self.keeper = self.pool.keeper_for(self.gpu, self.task)
            if self.task.mode == "screen":
                # negative controls run no candidate (the worker compares them itself): the problem's own cost,
                # under the reference's limit rather than a candidate's
                self.deadline = started + max(self.timeout_s, self.REFERENCE_LIMIT_S)
                self.phase = "the screen (negative controls)"
                # a screen reserves as a reference's build does (it runs the reference, on its own inputs), so
                # screens of large problems wait for each other; one that still ran out runs again alone
                if self.alone:
                    self._admit(alone=True)
                else:
                    self._reserve_reference(parking=False)
            else:
                if self.alone:  # run again after running out of memory beside others: alone from the build on
                    self._admit(alone=True)
                else:
                    self._reserve_reference()
                failed = self._prepare()
                self._release_reference()
                self._fit_host_to_record()
                if failed is not None:
                    return self._problem(failed, started), False
                if not self.alone:
                    self._admit()
                self._count_keeper_memory()
                self._widen_alone_cap()
                self.phase = "import and correctness trials"
                self.holder = "candidate"
            if not self.worker.send(ToWorker.TASK, worker_view(self.task).model_dump_json().encode()):
                return self._worker_died(CLOSED, started), True
            while True:
                now = time.monotonic()
                remaining = self.deadline + self.compiles.pending_s(now) - now
                if remaining <= 0:
                    self.worker.kill()
                    why = (
                        f"the candidate did not finish {self.phase} within its time budget of {self.budget_s:.4g} s "
                        f"(the configured {self.timeout_s:g} s"
                        + (
                            f" plus {self.BUDGET_PER_REFERENCE_S:g}x the {self.prep.get('compute_s', 0):.3g} s the "
                            "reference's side took"
                            if self.budget_s > self.timeout_s
                            else ""
                        )
                        + f"){self.compiles.said()}, and was killed"
                    )
                    return self._crash("Timeout", why, started), False
                frame = self.worker.next_frame(min(0.25, remaining))
                if frame is None:
                    limit = self.pool.options.memory_mb
                    if limit and self.worker.rss_mb() > limit:
                        self.worker.kill()
                        why = f"memory limit exceeded: the worker's resident memory passed {limit} MiB"
                        return self._crash("MemoryLimit", why, started), False
                    continue
                kind, payload = frame
                if kind == END_OF_STREAM:
                    return self._worker_died(payload, started), True
                try:
                    done = self._handle(kind, payload)
                except KeeperUnavailable:
                    raise
                except Exception as exc:  # noqa: BLE001 - any malformed payload is the worker's crash
                    self.worker.kill()
                    why = f"the worker sent a malformed {kind} frame ({type(exc).__name__}: {exc})"
                    return self._crash("WorkerCrashed", why, started), False
                if done is not None:
                    return done, False
        except KeeperUnavailable as exc:  # infrastructure: retried once, then the backend's error, never a verdict
            self.worker.kill()
            evidence = self._crash("KeeperCrashed", f"the reference keeper failed: {exc}", started)
            evidence.stage = "setup"
            return evidence, True
        finally:
            self._release()
            self._let_go_of_host()
            if self.answer_host_mb:
                self.pool.host_memory.release(self.answer_host_mb)
                self.answer_host_mb = 0.0
            if self.keeper is not None and not self.keeper.dead:
                # in the background, so the task's slot is not held while a timing keeps the hold back
                counted = (self.keeper_mb, self.device_record)
                threading.Thread(target=self._free_in_keeper, args=(self.keeper, *counted), daemon=True).start()
            else:
                self._uncount_keeper_memory(self.keeper_mb, self.device_record)
            self.keeper_mb, self.device_record = None, None

    def screen_in_keeper(self) -> tuple[Evidence, bool]:
        """A problem's negative-control screen, run by its GPU's keeper (`keeper/screen.py`: trusted, up before
        any worker, no candidate code), under a shared hold and the reference's memory reservation, as a build:
        (evidence, whether the keeper died, so that the pool runs it once more)."""
        started = self.started = time.monotonic()
        self.deadline = started + max(self.timeout_s, self.REFERENCE_LIMIT_S)
        self.phase = "the screen (negative controls)"
        try:
            self.keeper = self.pool.keeper_for(self.gpu, self.task)
            if self.alone:
                self._admit(alone=True)
            else:
                self._reserve_reference(parking=False)
            request = encode(ScreenRequest(task=self.task.model_dump(mode="json")))
            ok, answer = self._ask(KeeperRequest.SCREEN, request)
            if ok:
                evidence = Evidence.model_validate(answer["evidence"])
            else:  # the request itself failed in the keeper (not the reference: that is in the screen's evidence)
                refusal = KeeperRefusal.model_validate(answer)
                evidence = Evidence(stage=refusal.stage, error=refusal.error)
            died = False
        except KeeperUnavailable as exc:  # infrastructure: run once more, then the backend's error, never a verdict
            evidence = Evidence(stage="setup", error=ErrorInfo(kind="KeeperCrashed", message=f"the keeper: {exc}"))
            died = True
        finally:
            self._release()
            self.release_worker_memory()  # the build's reservation, or the whole GPU's when run alone
        evidence.worker_s = time.monotonic() - started
        self._waits_into(evidence)
        return evidence, died

    def _worker_died(self, why: bytes, started: float) -> Evidence:
        """The worker's crash once its channel ended (`why`: `CLOSED`) or broke (a malformed frame), in words that
        say how it ended: waited for first (`EXIT_WAIT_S`), since the kill here would otherwise be every death's
        cause, and a death by SIGKILL reads as one from outside (the pool runs such a task again instead of judging
        it: `WorkerPool._run_placed`)."""
        if why == CLOSED and self.worker.ended(self.EXIT_WAIT_S) is None:
            self.worker.kill()
            message = f"the worker closed its channel and had not exited {self.EXIT_WAIT_S:g} s later; it was killed"
            return self._crash("WorkerCrashed", message, started)
        self.worker.kill()
        message = self.worker.death() if why == CLOSED else why.decode("utf-8", "replace")
        return self._crash("WorkerCrashed", message, started)

    def prepare_ahead(self) -> None:
        """The keeper's side of this task, before any worker is free for it: `PREP` (the record built and kept in the
        keeper's cache), then `FREE`.  The task's own driver, once a worker comes, finds the record cached instead of
        building it while its worker idles: a cold `eval` built it after its worker's start, not during it.  Not the
        reference's timing: an exclusive hold of its own (a drain of every sharer), while the task's own timing,
        paired with its candidate, is taken anyway.  Whatever fails here is left to that driver, which meets it again
        and reports it."""
        self.started = time.monotonic()
        self.deadline = self.started + self.REFERENCE_LIMIT_S
        try:
            self.keeper = self.pool.keeper_for(self.gpu, self.task)
            self._reserve_reference()
            self._prepare(timed=False)
        except Exception:  # noqa: BLE001 - the task's own driver meets the same failure and reports it
            pass
        finally:
            self._release()
            self.release_worker_memory()
            self._let_go_of_host()
            if self.answer_host_mb:
                self.pool.host_memory.release(self.answer_host_mb)
                self.answer_host_mb = 0.0
            if self.keeper is not None and not self.keeper.dead:
                self._free_in_keeper(self.keeper)

    def _prepare(self, timed: bool = True) -> dict | None:
        """The keeper's `PREP` and (`timed`) `RTIM`; the keeper's `FAIL` answer (the problem's error), or None."""
        request = PrepareRequest(task=self.task.model_dump(mode="json"), task_id=self.task_id)
        ok, prep = self._ask(KeeperRequest.PREPARE, encode(request))
        if not ok:
            return prep
        self.prep = prep
        self._keep_measured_peaks()
        answer_mb = float(prep.get("answer_host_mb") or 0.0)
        if answer_mb and self.pool.host_memory is not None:
            # the task's own answer (`ReferenceRecord.precomputed_answer`), parked beside the shared record: already
            # in host memory, held by this task alone (each sample of an RL batch its own), counted for the rest
            self.answer_host_mb = self.pool.host_memory.take(answer_mb)
        self.planned = [TrialEvidence.model_validate({**p, "outputs": []}) for p in prep["planned"]]
        kept = [int(p["seed"]) for p in prep["planned"][len(self.task.seeds) :]]
        self.task = self.task.model_copy(update={"kept_trials": kept})
        extra = self.BUDGET_PER_REFERENCE_S * float(prep.get("compute_s") or 0.0)
        self.budget_s = self.timeout_s + extra
        if timed and self.gpu != "cpu" and self.task.timing.enabled:
            self.phase = "timing the reference"
            if not self._shared_reference_check():
                failed = self._time_reference()
                if failed is not None:
                    return failed
        self.deadline = time.monotonic() + self.budget_s  # the candidate's budget starts when its work does
        return None

    # --- the worker's frames, one method each (`HANDLERS`): None to go on, or the task's evidence ----------------

    def _handle(self, kind: str, payload: bytes) -> Evidence | None:
        """One frame of the worker's, through `HANDLERS`; a kind it does not list is a malformed frame."""
        handler = self.HANDLERS.get(kind)
        if handler is None:
            raise ValueError(f"unexpected frame {kind}")
        return handler(self, payload)

    def _grant(self, exclusive: bool, resume: bool = False) -> None:
        self.deadline += self.compiles.taken_back(time.monotonic(), resumed=resume)  # nor is compiling (a cap)
        self.deadline += self._acquire(exclusive=exclusive, resume=resume)  # waiting is not the candidate's time
        self.worker.send(ToWorker.GRANTED)

    def _on_share(self, payload: bytes) -> None:
        self._grant(exclusive=False)

    def _on_resume(self, payload: bytes) -> None:
        self._grant(exclusive=False, resume=True)

    def _on_lock(self, payload: bytes) -> None:
        self._grant(exclusive=True)

    def _on_unlock(self, payload: bytes) -> None:
        self._release()
        self.compiles.given_back(time.monotonic(), payload)

    def _on_yield(self, payload: bytes) -> None:
        if self.holding != "shared":
            raise ValueError("YILD without a shared hold to step aside from")
        began = time.monotonic()
        self.lock.step_aside(self.holding_for)
        waited = time.monotonic() - began
        self.lock_wait_s += waited
        self.deadline += waited
        self.worker.send(ToWorker.GRANTED)

    def _on_ask_handouts(self, payload: bytes) -> None:
        asked = HandoutAsk.model_validate_json(payload).outputs
        answer = self._ask_or_refused(KeeperRequest.LEND, encode(LendRequest(task_id=self.task_id, outputs=asked)))
        self.worker.send(ToWorker.HANDOUTS, encode(HandoutsLent.model_validate(answer)))

    def _on_handout_bytes(self, payload: bytes) -> None:
        self._ask_or_refused(KeeperRequest.FILL, tagged(self.task_id, payload))  # relayed unopened
        self.worker.send(ToWorker.BYTES_TAKEN)

    def _on_candidate(self, payload: bytes) -> None:
        if self.candidate_seen:
            raise ValueError("a second CAND in one task")
        self.candidate_seen = True
        began = time.monotonic()
        self.report = frames.tensors_from_bytes(payload)
        if len(self.report["trials"]) > len(self.planned):
            raise ValueError("CAND reports more trials than were planned")
        # the keeper reads the report as the worker sent it; this process reads it for the evidence
        self.compared = judged = self._ask_or_refused(KeeperRequest.COMPARE, tagged(self.task_id, payload))
        self.trials = [
            self._trial(t, sent, comparisons)
            for t, (sent, comparisons) in enumerate(zip(self.report["trials"], judged["trials"]))
        ]
        self.compare_s = time.monotonic() - began
        if self.report.get("error") is None:
            correct = judge_every_trial(self.trials, planned=len(self.planned)).correct
            if correct:
                self.phase = "timing"
                self.told_time = True
            self.worker.send(ToWorker.TIME if correct else ToWorker.STOP)

    def _on_check_in_hold(self, payload: bytes) -> None:
        self._drift_check_in_hold(payload)

    def _on_timed(self, payload: bytes) -> None:
        if not self.candidate_seen:
            raise ValueError("TIMD before CAND")
        data = frames.tensors_from_bytes(payload)
        timing = TimingReport.model_validate_json(data["timing"])
        if self.timing is not None:  # the keeper's, measured before the candidate existed
            timing.reference_before = self.reference_before
            timing.reference_cached = self.timing.reference_cached
            timing.bytes_moved, timing.bandwidth_gbps = self.timing.bytes_moved, self.timing.bandwidth_gbps
            timing.compile_reference = self.timing.compile_reference
            timing.compile_reference_source = self.timing.compile_reference_source
            timing.field_reference = self.timing.field_reference  # the field's convention (field_convention.py)
            timing.field_reference_source = self.timing.field_reference_source
            timing.field_ops = self.timing.field_ops
            timing.notes = self.timing.notes + timing.notes
        self.pr = data["pr"]
        self.profile = [ProfileEntry.model_validate(p) for p in json.loads(data["profile"])]
        timed = [(int(t), int(n), list(entries)) for t, n, entries in data["timed"]]
        if any(not 0 <= t < len(self.planned) for t, _, _ in timed):
            raise ValueError("TIMD names a trial that was not planned")
        if self.prep.get("draws_random"):
            # a reference that draws random numbers (KernelBench's dropout in training mode) has no one answer
            # for a call whose generator state nobody set: the trials seed it, the timed calls cannot
            timing.notes.append(
                "the reference draws random numbers (dropout, for example): the timed calls' outputs were not "
                "compared with its, only the seeded trials'"
            )
            timed = []
        request = frames.tensors_to_bytes({"task_id": self.task_id, "timed": timed})
        judged = self._ask_or_refused(KeeperRequest.COMPARE_TIMED, request)
        for trial, n_outputs, comparisons in judged["timed"]:
            sent = {"n_outputs": n_outputs, "launches": [], "mutated": []}
            self.timed_trials.append(self._trial(trial, sent, comparisons))
        timing.timed_outputs_checked = len(self.timed_trials)
        if not self.drift_checked:  # a worker that did not ask inside its timing hold: a hold of the check's own
            self.drift_checked = True
            self.phase = "the reference's drift check"
            self.reference_after = self._drift_check(exclusive=True)
        timing.reference_after = self.reference_after
        self.timing = timing

    def _on_done(self, payload: bytes) -> Evidence:
        return self._finish(payload, self.started)

    HANDLERS: dict[str, Callable[[TaskDriver, bytes], Evidence | None]] = {
        FromWorker.SHARE: _on_share,
        FromWorker.RESUME: _on_resume,
        FromWorker.LOCK: _on_lock,
        FromWorker.UNLOCK: _on_unlock,
        FromWorker.YIELD: _on_yield,
        FromWorker.ASK_HANDOUTS: _on_ask_handouts,
        FromWorker.HANDOUT_BYTES: _on_handout_bytes,
        FromWorker.CANDIDATE: _on_candidate,
        FromWorker.CHECK_IN_HOLD: _on_check_in_hold,
        FromWorker.TIMED: _on_timed,
        FromWorker.DONE: _on_done,
    }
    """Every frame a worker may send during a task, and its handler; anything else is a malformed frame."""


def screen_in_keeper(pool, task: WorkerTask, timeout_s: float, gpu: str) -> Evidence:
    """A problem's screen on `pool`, by the keeper of `gpu` (`TaskDriver.screen_in_keeper`).  Out of memory beside
    others, it runs once more with the GPU alone; a keeper that died, once more (the keeper is started again)."""
    from tritongym.core.timeline import mark

    alone = False
    evidence = Evidence()
    for attempt in (1, 2):
        mark("task_start", mode=task.mode, gpu=gpu, waited_s=0.0)
        evidence, died = TaskDriver(pool, None, task, timeout_s, alone=alone, gpu=gpu).screen_in_keeper()
        mark("task_end", mode=task.mode, gpu=gpu)
        if attempt == 1 and not alone and out_of_memory_beside_others(pool, task, evidence):
            alone = True
            continue
        if alone:
            evidence.flags["ran_alone"] = True
        if not died:
            return evidence
    return evidence


def prepare_ahead(pool, task: WorkerTask, timeout_s: float, gpu: str) -> threading.Thread | None:
    """On a pool that starts workers on demand (a one-candidate `eval`), when no worker of `gpu` is ready and the
    problem's reference side was never built on `pool`, build it now in the background (`TaskDriver.prepare_ahead`),
    once per problem at a time, while the task waits for its worker's start: the thread doing it, or None.  A pool
    kept warm for a stream of work has its workers up before its tasks come, and there a task's own build, with its
    cost in the task's budget and its out-of-memory retried alone, is left as it was."""
    key = reference_key(task)
    with pool._guard:
        if not pool.options.start_on_demand:
            return None
        if pool.ready.ready_on(gpu) or key in pool.peaks or key in pool.ahead:
            return None
        pool.ahead.add(key)

    def ahead() -> None:
        try:
            TaskDriver(pool, None, task, timeout_s, gpu=gpu).prepare_ahead()
        finally:
            with pool._guard:
                pool.ahead.discard(key)

    thread = threading.Thread(target=ahead, daemon=True, name="prepare-ahead")
    thread.start()
    return thread
