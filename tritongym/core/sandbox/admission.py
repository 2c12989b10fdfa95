"""Memory admission: what a task may hold on its GPU and on the host, reserved before it runs (ARCHITECTURE.md §3).

`MemoryBudget` is one GPU's (or the host's) budget; the budget arithmetic (`gpu_budget_mb`, `alone_room_mb`) sizes
it; `TaskMemory` is a task's side of it: the keeper's build, the worker's need, the record's parked outputs and
the keeper's memory for the task, each reserved and given back once.
"""

from __future__ import annotations

import json
import threading
import time

from tritongym.core.sandbox.pool_options import CONTEXT_MB, KEEPER_CACHE_SHARE
from tritongym.core.worker.protocol import KeeperRequest, SizeRequest, encode, record_key


class MemoryBudget:
    """Per-GPU admission from measured need: a task's worker reserves what its problem's
    reference was measured to need (`TaskDriver.worker_need_mb`) before it gets the task, and waits while the
    reservations already granted leave too little.  A task that needs more than the GPU's budget waits until the
    GPU is idle and then has it alone.  The candidate's caching allocator is capped at what it was granted, so
    a candidate that needs far more than its reference fails alone instead of starving its neighbours."""

    def __init__(self, capacity_mb: float) -> None:
        self.capacity_mb = capacity_mb
        self.reserved_mb = 0.0
        self.peak_mb = 0.0  # the most ever reserved at once (reported beside a trainer's memory)
        self.holders = 0
        self.waiting = 0  # reservations waiting now: what a test (or a report) sees of admission without a clock
        self.waiting_alone = 0  # tasks that need the whole GPU and wait for it: nobody new goes ahead of them
        self.cond = threading.Condition()

    def _grantable(self, need_mb: float) -> bool:
        """Under `cond`: whether a reservation of `need_mb` is granted now (`reserve`'s rule)."""
        if need_mb >= self.capacity_mb:  # alone: once the GPU is idle
            return self.holders == 0
        # an idle GPU goes to a task waiting to have it alone first, whichever thread wakes first
        return not self.waiting_alone and (self.holders == 0 or self.reserved_mb + need_mb <= self.capacity_mb)

    def idle(self) -> bool:
        """Whether nothing is held or waited for: nobody on this GPU (or host) that a reservation must fit beside."""
        with self.cond:
            return self.holders == 0 and self.waiting == 0

    def admits(self, need_mb: float) -> bool:
        """Whether `reserve(need_mb)` would be granted at once, without waiting."""
        with self.cond:
            return self._grantable(need_mb)

    def resize(self, capacity_mb: float) -> None:
        """A new capacity (memory held outside the pool changed): what is granted stays granted; waiting
        reservations are measured against the new capacity."""
        with self.cond:
            self.capacity_mb = capacity_mb
            self.cond.notify_all()

    def reserve(self, need_mb: float) -> float:
        """Block until `need_mb` fits (or the GPU is idle, for a need beyond the budget); the MiB granted."""
        with self.cond:
            alone = need_mb >= self.capacity_mb
            grant = min(need_mb, self.capacity_mb)
            self.waiting += 1
            if alone:
                self.waiting_alone += 1
                self.cond.notify_all()  # `waiting` changed: a watcher may be waiting for it
                self.cond.wait_for(lambda: self.holders == 0)
                self.waiting_alone -= 1
            else:
                self.cond.notify_all()
                self.cond.wait_for(lambda: self._grantable(grant))
            self.waiting -= 1
            self.reserved_mb += grant
            self.peak_mb = max(self.peak_mb, self.reserved_mb)
            self.holders += 1
        return grant

    def shrink(self, granted_mb: float, to_mb: float) -> float:
        """Part of a grant back while its holder keeps the rest (a whole-budget hold cut to what was measured);
        the MiB still granted."""
        kept = min(granted_mb, max(to_mb, 0.0))
        with self.cond:
            self.reserved_mb = max(self.reserved_mb - (granted_mb - kept), 0.0)
            self.cond.notify_all()
        return kept

    def take(self, need_mb: float) -> float:
        """Count `need_mb` as held at once, without waiting: memory already in use that others must see (waiting
        for it while holding a reservation of one's own could wait forever)."""
        with self.cond:
            self.reserved_mb += need_mb
            self.peak_mb = max(self.peak_mb, self.reserved_mb)
            self.holders += 1
        return need_mb

    def release(self, granted_mb: float) -> None:
        with self.cond:
            self.reserved_mb = max(self.reserved_mb - granted_mb, 0.0)
            self.holders -= 1
            self.cond.notify_all()


class _SharedHold:
    """One keeper record's share of a budget, held by every running task of the record and given back by the last:
    its host memory (`WorkerPool.host_records`, granted once `ready`) or its device part
    (`WorkerPool.device_records`); the MiB granted and how many tasks hold it."""

    __slots__ = ("granted_mb", "holders", "ready")

    def __init__(self) -> None:
        self.granted_mb = 0.0
        self.holders = 0
        self.ready = threading.Event()


def keeper_cache_mb(total_mb: float, outside_mb: float = 0.0) -> float:
    """What a GPU's keepers may keep between tasks, all together: their share of the GPU less what processes outside
    the pool held when they started (each keeper computes its part from `TRITONGYM_KEEPER_OUTSIDE_MB`)."""
    return KEEPER_CACHE_SHARE * max(total_mb - outside_mb, 0.0)


def gpu_budget_mb(
    total_mb: float, keepers: int, workers: int, outside_mb: float = 0.0, keeper_cache: float | None = None
) -> float:
    """What the tasks on one GPU may reserve: the GPU less what processes outside the pool hold (`outside_mb`: a
    trainer beside the judge), the keepers' share (their record caches, `keeper_cache`; by default
    `keeper_cache_mb`), every process's context (workers are started ahead of need and hold theirs while idle: on
    the H100 nine idle workers held 6.6 GiB that no reservation stood for) and a margin for the driver's own
    allocations; never below a quarter of what the outside leaves."""
    cache = keeper_cache_mb(total_mb, outside_mb) if keeper_cache is None else keeper_cache
    room = alone_room_mb(total_mb, keepers, workers, outside_mb)
    return max(room - cache, max(total_mb - outside_mb, 0.0) * 0.25)


def alone_room_mb(total_mb: float, keepers: int, workers: int, outside_mb: float = 0.0) -> float:
    """What a task that has the GPU alone may use, worker and keeper together: the GPU less what processes outside
    the pool hold, every process's context and the driver's margin (`gpu_budget_mb` without the keepers' cache
    share)."""
    return total_mb * 0.95 - outside_mb - (keepers + workers) * CONTEXT_MB


class TaskMemory:
    """A `TaskDriver`'s memory admission: what it reserves, takes and gives back, on its GPU and the host."""

    def _count_keeper_memory(self) -> None:
        """Count what the keeper holds for this task on the GPU, from `PREP` to its `FREE`: the record's device
        part (a large one is over the keepers' cache share, so that share does not stand for it) and one call's
        handouts.  Uncounted, the next large problem was admitted beside them and ran out of memory: in the
        KernelBench sweep on an H100, with one problem at a time, a screen found 2 GiB free after a
        loss problem's 40 GiB record, and a keeper held 49 GiB beside a task run "alone".  Taken without
        waiting (the task's own worker is admitted already); released once the keeper has freed it."""
        budget = self.pool.memory.get(self.gpu)
        if budget is None:
            return
        self.keeper_mb = budget.take(float(self.prep.get("lent_mb") or 0.0))
        # the record once for all the tasks that hold it (an RL batch's samples share one), like its host memory
        key = (self.gpu, record_key(self.task))
        with self.pool._guard:
            hold = self.pool.device_records.setdefault(key, _SharedHold())
            if hold.holders == 0:
                hold.granted_mb = budget.take(float(self.prep.get("record_device_mb") or 0.0))
            hold.holders += 1
        self.device_record = key

    def _uncount_keeper_memory(self, keeper_mb: float | None, key: tuple | None) -> None:
        """`_count_keeper_memory` undone, once the keeper has freed the task's share: its handouts, and the record
        when no other task holds it.  Nothing when nothing was counted (a screen, a task whose `PREP` failed): a
        release without its take would leave the budget's holders below zero, and a task waiting for the GPU
        alone would wait forever."""
        budget = self.pool.memory.get(self.gpu)
        if budget is None or keeper_mb is None:
            return
        budget.release(keeper_mb)
        if key is None:
            return
        with self.pool._guard:
            hold = self.pool.device_records[key]
            hold.holders -= 1
            if hold.holders > 0:
                return
            del self.pool.device_records[key]
        budget.release(hold.granted_mb)

    def release_worker_memory(self) -> None:
        """The worker's GPU reservation back (and a screen's, which its worker used), once `WorkerPool.run` has
        retired the worker and its process is gone: released when the task ended, a killed worker's GiBs were
        still held by the dying process while the next task allocated beside them."""
        self._release_reference()
        if self.granted_mb is not None:
            self.granted_from.release(self.granted_mb)  # the budget it came from, whatever stands for the GPU now
            self.granted_mb = None

    def worker_need_mb(self) -> float:
        """What a candidate's worker is expected to need on the GPU: twice one forward of the
        reference as the keeper measured it (inputs, their clone, outputs, temporaries, weights: a worker holds
        about that plus a copy of the outputs), with room for a less frugal kernel.  Not the keeper's whole
        build, whose float64 gold no worker computes: sized from that (49 GiB for a full-size ReLU), every
        large problem's worker took the GPU alone.  A worker that still runs out of memory is run again alone
        (`WorkerPool.run`) before it is the candidate's."""
        forward = float(self.prep.get("forward_peak_mb") or 0.0)
        peak = forward or float(self.prep.get("peak_mb") or 0.0)
        return self.WORKER_SLACK_MB + max(1024.0, 2.0 * peak)  # its context is the budget's already

    WORKER_SLACK_MB = 1024.0
    """Allocator room a worker gets beyond twice its reference's forward, whatever the problem: Triton's own
    benchmarking buffer (256 MiB for an autotuned kernel), the poisoning of free blocks before the candidate
    runs (`scrub.poison_free_memory` of an expandable segment's blocks: a copy of each, briefly), fragmentation.
    Without it the smallest problems' workers were capped at 1 GiB, ran out of memory on an H100 and were each run again
    with the GPU alone: an RL batch of 64 took 188 s instead of 120 s."""

    REFERENCE_NEED_FACTOR = 4.0
    """A problem seen for the first time reserves this many times one forward weighed on the meta device (inputs,
    parameters, outputs) for its keeper's build: the inputs, their clone for the call, the outputs and the float64
    gold's temporaries.  Once built, the measured peak is reserved instead (`WorkerPool.peaks`)."""

    def _reserve_reference(self, parking: bool = True) -> None:
        """Reserve GPU memory for the keeper's build of the reference's side (`PREP`, `RTIM`), before it starts:
        a full-size problem built beside others with nothing reserved ran the GPU out of memory for everyone.
        The need is the peak measured the last time (this pool, any task of the problem; else the registry's,
        `WorkerTask.reference_peak_mb`) or the keeper's meta-device weighing (`SIZE`) times
        `REFERENCE_NEED_FACTOR`; waiting for it is not the candidate's.  `parking`: also the host memory of the
        outputs the keeper will park (a screen parks none)."""
        budget = self.pool.memory.get(self.gpu)
        if budget is None:
            return
        peak = self.pool.peaks.get(self.reference_key, self.task.reference_peak_mb)  # this pool's, or the registry's
        # this pool's, or the registry's (`WorkerTask.reference_host_mb`): known, the keeper weighs nothing
        parked = self.pool.host_peaks.get(self.reference_key, self.task.reference_host_mb) if parking else 0.0
        unknown = peak is None or (parked is None and self.pool.host_memory is not None)
        if unknown and self._alone_in_pool(budget):
            # nobody beside it to protect: the whole GPU (and host budget), nothing weighed; the build measures
            if peak is None:
                peak = budget.capacity_mb
            if parked is None and self.pool.host_memory is not None:
                parked = self.host_whole_mb = self.pool.host_memory.capacity_mb
        elif unknown:
            payload = encode(SizeRequest(task=self.task.model_dump(mode="json")))
            ok, answer = self.keeper.call(KeeperRequest.SIZE, payload, 120.0)
            answer = json.loads(answer) if ok else {}
            if peak is None and answer.get("peak_mb") is not None:
                peak = float(answer["peak_mb"])
            elif peak is None and answer.get("forward_mb") is not None:
                peak = self.REFERENCE_NEED_FACTOR * float(answer["forward_mb"])
            if parked is None:
                parked = self._parked_estimate(answer)
        began = time.monotonic()
        if self.pool.host_memory is not None and parked:
            self._hold_host(parked)  # held until the task ends
        self.reference_granted_from = budget
        self.reference_granted_mb = budget.reserve(max(1024.0, peak or 0.0))  # contexts: the budget's already
        waited = time.monotonic() - began
        self.deadline += waited
        self.memory_wait_s += waited

    def _fit_host_to_record(self) -> None:
        """A lone task's hold on the whole host budget (`_alone_in_pool`) cut to what its record parked, once `PREP`
        measured it, so that a task that came meanwhile waits for the build, not for the whole task."""
        if not self.host_whole_mb or self.host_record is None or self.prep.get("record_host_mb") is None:
            return
        with self.pool._guard:
            hold = self.pool.host_records.get(self.host_record)
        if hold is not None and hold.granted_mb == self.host_whole_mb:
            hold.granted_mb = self.pool.host_memory.shrink(hold.granted_mb, float(self.prep["record_host_mb"]))
        self.host_whole_mb = 0.0

    FINISHING_WAIT_S = 10.0
    """How long a lone task waits for the workers of tasks answered before it to be gone (a dying process that takes
    longer is left to the budget: the task is then weighed, as beside any other work)."""

    def _alone_in_pool(self, budget: MemoryBudget) -> bool:
        """Whether this task is the only one in its pool (`WorkerPool.tasks_in_flight`) and nothing holds its GPU's
        budget or the host's: a lone `eval`, cold or handed to a served pool.  Weighing a problem never seen
        (`SIZE`) exists so that tasks are packed beside each other; a lone task has nobody beside it, and the
        weighing cost it 4.2-4.5 s on an H200 (a fresh keeper's first meta-device forward imports `torch._dynamo`),
        a third of a cold eval.  It reserves the whole GPU instead, as a task run alone does, and its build's
        measured peak sizes every later one.  A task that comes meanwhile waits for that reservation: at most the
        screen's or the build's seconds.  A task answered a moment before may still be giving its worker's memory back
        (`gpu_pool._end_in_background`, ~0.1 s): waited for here, so that an `eval` right after another is still
        alone."""
        with self.pool._guard:
            self.pool.finished.wait_for(lambda: not self.pool.finishing, timeout=self.FINISHING_WAIT_S)
            lone = self.pool.tasks_in_flight <= 1
        host = self.pool.host_memory
        return lone and budget.idle() and (host is None or host.idle())

    def _hold_host(self, parked_mb: float) -> None:
        """Hold the host memory of this task's record: reserved by the first task of the record, shared by the
        ones that come while it is held (an RL batch of a full-size problem: one record of 54-66 GiB parked for
        all its samples, where each task reserving its own copy ran them one at a time)."""
        key = record_key(self.task)
        pool = self.pool
        with pool._guard:
            hold = pool.host_records.get(key)
            first = hold is None
            if first:
                hold = pool.host_records[key] = _SharedHold()
            hold.holders += 1
        self.host_record = key
        if first:
            hold.granted_mb = pool.host_memory.reserve(parked_mb)
            hold.ready.set()
        else:
            hold.ready.wait()  # the first task's reservation, then shared

    def _let_go_of_host(self) -> None:
        """This task's hold on its record's host memory back; the last holder releases the reservation."""
        if self.host_record is None:
            return
        pool, key, self.host_record = self.pool, self.host_record, None
        with pool._guard:
            hold = pool.host_records[key]
            hold.holders -= 1
            if hold.holders > 0:
                return
            del pool.host_records[key]
        pool.host_memory.release(hold.granted_mb)

    def _parked_estimate(self, size: dict) -> float:
        """Host MiB the record will park, before it exists: an output at least `park_mb` large parked once per
        trial, shape set, late trial and declared built-in probe's call (an over-estimate: mode probes share their
        trial's copy)."""
        outputs, park = size.get("outputs_mb"), size.get("park_mb")
        if outputs is None or park is None or outputs < park:
            return 0.0
        probes = self.task.probes
        # the declared built-ins' reference outputs: three mode calls, the ghost's (also `precomputed`'s decoy),
        # each degeneracy probe's and its control's answer; a plugin probe's reference answer is JSON, not parked
        parked = 3 * ("modes" in probes) + ("ghost" in probes or "precomputed" in probes)
        parked += 2 * len(self.task.degenerate) * ("degenerate" in probes)
        copies = len(self.task.seeds) + len(self.task.extra_sizes) + 1 + parked
        return copies * float(outputs)

    def _release_reference(self) -> None:
        """The build's reservation back (the keeper's record stays within its cache share)."""
        if self.reference_granted_mb is not None:
            self.reference_granted_from.release(self.reference_granted_mb)
            self.reference_granted_mb = None

    def _keep_measured_peaks(self) -> None:
        """What the build measured (the reference's GPU peak, the host MiB its record parked), for the pool's later
        tasks of the problem: kept as soon as the keeper's `PREP` answers, not when the task's memory goes back
        (that waits for its worker's end, in the background: `gpu_pool._end_in_background`)."""
        if self.prep.get("peak_mb") is not None:
            self.pool.peaks[self.reference_key] = float(self.prep["peak_mb"])
        if self.prep.get("record_host_mb") is not None:
            self.pool.host_peaks[self.reference_key] = float(self.prep["record_host_mb"])

    def _admit(self, alone: bool = False) -> None:
        """Reserve the worker's measured need on its GPU (waiting is not the candidate's time), and cap its
        caching allocator there unless the configuration set a cap; `alone`: the whole GPU."""
        budget = self.pool.memory.get(self.gpu)
        if budget is None:
            return
        began = time.monotonic()
        self.granted_from = budget  # released there: a worker's end is awaited in the background (`gpu_pool`)
        self.granted_mb = budget.reserve(budget.capacity_mb if alone else self.worker_need_mb())
        waited = time.monotonic() - began
        self.deadline += waited
        self.memory_wait_s += waited
        if self.task.gpu_memory_fraction is None:
            self.capped_here = True
            fraction = min(1.0, self.granted_mb / self.pool.total_mb[self.gpu])
            self.task = self.task.model_copy(update={"gpu_memory_fraction": round(fraction, 4)})

    def _widen_alone_cap(self) -> None:
        """A worker that has the GPU alone (run again alone, or a need over the budget) is capped at what the GPU
        has beside every process's context and what the keeper holds for this task, not at the budget: the budget
        also leaves out the keepers' cache share, and capped there a full-size level-1 average pooling (16 GiB
        input) ran out at 46 GiB with 36 GiB of the GPU free (on an H100).  Known only after `PREP`: the
        keeper's record and handouts for the task."""
        budget = self.pool.memory.get(self.gpu)
        if budget is None or not self.capped_here or self.granted_mb is None:
            return
        if not (self.alone or self.granted_mb >= budget.capacity_mb):
            return
        total = self.pool.total_mb[self.gpu]
        workers = self.pool.options.workers_per_gpu + self.pool.options.spare_workers_per_gpu
        keeper = float(self.prep.get("record_device_mb") or 0.0) + float(self.prep.get("lent_mb") or 0.0)
        outside = self.pool.outside_mb.get(self.gpu, 0.0)
        room = alone_room_mb(total, self.pool.keepers_per_gpu, workers, outside) - keeper
        fraction = min(1.0, max(room, self.granted_mb) / total)
        self.task = self.task.model_copy(update={"gpu_memory_fraction": round(fraction, 4)})
