"""A task's calls to its GPU's reference keeper, each under the GPU hold it needs, and the task's holds themselves."""

from __future__ import annotations

import json
import time

from tritongym.core.sandbox.processes import KeeperProcess, KeeperRefused, KeeperUnavailable
from tritongym.core.worker.protocol import MALFORMED, KeeperRefusal, KeeperRequest, TaskRequest, encode


class KeeperCalls:
    """A `TaskDriver`'s keeper requests (`_ask`) and GPU holds (`_acquire`, `_release`).  A request never waits for
    the GPU lock while the keeper's mutex is held (the hold is taken first, then the call): see `KeeperProcess`."""

    REFERENCE_SIDE = (KeeperRequest.PREPARE, KeeperRequest.TIME_REFERENCE, KeeperRequest.SCREEN)
    """Requests about the reference alone: the problem's cost, under `REFERENCE_LIMIT_S` rather than the candidate's
    deadline, and a timeout there is the problem's error."""

    def _ask(self, kind: KeeperRequest, payload: bytes, exclusive: bool | None = False) -> tuple[bool, dict]:
        """One keeper request under the GPU lock it needs (`exclusive`: None = whatever the worker holds now,
        shared if nothing): (answered `OKAY`, the answer)."""
        had = self.holding
        if exclusive is not None or had is None:
            self._acquire(exclusive=bool(exclusive))
        limit = self.REFERENCE_LIMIT_S if kind in self.REFERENCE_SIDE else max(self.deadline - time.monotonic(), 1.0)
        began = time.monotonic()
        try:
            ok, answer = self.keeper.call(kind, payload, limit, urgent=self.holding == "exclusive")
        except KeeperUnavailable as exc:
            if not (exc.timed_out and kind in self.REFERENCE_SIDE):
                raise
            what = {
                KeeperRequest.PREPARE: "build its outputs, gold and probes",
                KeeperRequest.SCREEN: "finish its screen (negative controls)",
            }.get(kind, "be timed")
            message = f"the reference did not {what} within {limit:g} s (the limit of a problem's reference side)"
            return False, {"stage": "problem", "error": {"kind": "Timeout", "message": message}}
        finally:
            if exclusive is not None or had is None:
                self._release()
                if had is not None:  # the worker's own hold, taken back
                    self._acquire(exclusive=had == "exclusive", resume=had == "shared")
        answer = json.loads(answer)
        work = float(answer.pop("_keeper_s", 0.0)) if isinstance(answer, dict) else 0.0
        self.keeper_work_s += work
        self.keeper_queue_s += max(time.monotonic() - began - work, 0.0)
        self.keeper_busy_s += self.keeper.waited_s()  # of which behind other tasks' requests to this keeper
        return ok, answer

    def _waits_into(self, evidence) -> None:
        """The task's waits into its `evidence.phases`: for the GPU lock, for memory, and for its keeper (`keeper_work`,
        the keeper's own time; `keeper_queue`, the rest of the requests' time, of which `keeper_queue_busy` behind
        other tasks' requests to the same keeper)."""
        waits = {
            "gpu_lock_wait": self.lock_wait_s,
            "gpu_memory_wait": self.memory_wait_s,
            "keeper_work": self.keeper_work_s,
            "keeper_queue": self.keeper_queue_s,
            "keeper_queue_busy": self.keeper_busy_s,
        }
        evidence.phases.update({name: round(seconds, 4) for name, seconds in waits.items()})

    def _ask_or_refused(self, kind: KeeperRequest, payload: bytes) -> dict:
        """`_ask` under whatever the worker holds, for a request about a candidate's outputs: the answer, or
        `KeeperRefused` (the keeper's failure, retried, never the candidate's), or a `ValueError` where what the
        keeper could not read is the worker's payload it was relayed (`protocol.MALFORMED`: the worker's crash)."""
        ok, answer = self._ask(kind, payload, exclusive=None)
        if ok:
            return answer
        refusal = KeeperRefusal.model_validate(answer)
        if refusal.stage == MALFORMED:
            raise ValueError(f"the keeper could not read it ({refusal.error.kind}: {refusal.error.message})")
        raise KeeperRefused(kind, refusal.error.message)

    def _free_in_keeper(self, keeper: KeeperProcess, keeper_mb: float | None = None, device_record=None) -> None:
        """The keeper's `FREE` for this task, under a shared hold like any GPU work: the keeper poisons what it
        frees (`scrub.py`), GiBs of fills for a large record, and sent with no hold those fills ran beside other
        tasks' timings (two honest level-2 references 2.2x slower in their drift checks on an H100).  The
        keeper's memory for the task (`_count_keeper_memory`) is counted until the answer comes."""
        self.lock.acquire(exclusive=False, holder="keeper_free")
        try:
            keeper.call(KeeperRequest.FREE, encode(TaskRequest(task_id=self.task_id)), 60.0)
        except KeeperUnavailable:
            pass
        finally:
            self.lock.release(exclusive=False, holder="keeper_free")
            self._uncount_keeper_memory(keeper_mb, device_record)

    def _acquire(self, exclusive: bool, resume: bool = False) -> float:
        began = time.monotonic()
        self._release()  # one hold at a time: a second request replaces the first
        holder = self.holder
        self.lock.acquire(exclusive, resume, self.task.timing.timing_window_s if exclusive else 0.0, holder)
        self.holding = "exclusive" if exclusive else "shared"
        self.holding_for = holder
        waited = time.monotonic() - began
        self.lock_wait_s += waited
        return waited

    def _release(self) -> None:
        if self.holding:
            self.lock.release(self.holding == "exclusive", self.holding_for)
            self.holding = None
