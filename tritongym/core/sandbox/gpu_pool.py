"""The worker pool of one host (ARCHITECTURE.md §3, §8): warm GPU workers, the GPU held only while timing.

* `workers_per_gpu` worker processes per GPU are kept alive, each started ahead of need (torch imported,
  CUDA initialised, the profiler loaded) so a candidate never waits for a cold start; a replacement is
  started in the background the moment one retires;
* import, compilation and the correctness trials of several candidates run side by side on one GPU
  (they take the GPU's lock shared); timing takes it exclusively, so no other worker's kernels run while
  a sample is taken.  This process grants the lock (`SHAR`/`LOCK`, then `UNLK`); a worker killed while
  holding it releases it;
* a worker retires after `max_tasks` tasks (default 1: every candidate gets a fresh process, so nothing
  one candidate did to torch or Triton can reach the next), after any error (a CUDA error poisons the
  context) and of course when it dies;
* a worker that dies mid-task has its task retried once on a fresh worker; the second death is
  reported as `crashed`, unless a signal no limit of the pool's sends killed it (SIGKILL from another
  process or the OOM killer): that is an infrastructure failure, the backend's error, never a verdict.
  A task that outlives its time limit is killed and reported as `timeout`; a worker whose resident
  memory passes `memory_mb` is killed and reported as `crashed` (address-space limits break CUDA, so
  memory is watched instead).

Beside the workers, each GPU has one reference keeper (`keeper/keeper.py`): a trusted process with its own
CUDA context that computes the reference's outputs, gold and probes (once per problem, shapes, seeds and
precision, then reused by every candidate of it), times the reference, and judges the outputs each worker
lends it (`TaskDriver`).  No reference output ever exists in a process a candidate runs in.  A keeper that
dies is started again and the task retried; a second failure is the backend's error, never a verdict.
Each task's time limit grows with what its reference's side cost (`TaskDriver.BUDGET_PER_REFERENCE_S`).

This module is the pool's policy: which worker gets which task, when workers start and retire, the keepers, the
GPUs' budgets.  Along its seams beside it: `pool_options.py` (options, memory shares), `gpu_lock.py` (`GPULock`),
`admission.py` (`MemoryBudget`, the budget arithmetic, a task's `TaskMemory`), `keeper_choice.py` (which keeper
serves a record), `processes.py` (`Worker`, `KeeperProcess`), `fork_server.py` (`Zygote`, started early by `eval`),
`task_driver.py` (one task, `TaskDriver`) with its keeper calls (`keeper_calls.py`), reference timing
(`reference_timing.py`) and evidence (`task_evidence.py`); the frames they exchange are `worker/protocol.py`'s.  Their
names are importable from here as before.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import threading
import time

from tritongym.core.errors import BackendUnavailable
from tritongym.core.models import ErrorInfo, Evidence
from tritongym.core.sandbox.admission import (
    MemoryBudget,
    TaskMemory,
    _SharedHold,
    alone_room_mb,
    gpu_budget_mb,
    keeper_cache_mb,
)
from tritongym.core.sandbox.fork_server import Zygote, adopt_early, build_launchers
from tritongym.core.sandbox.gpu_lock import GPULock
from tritongym.core.sandbox.keeper_choice import KeeperChoice
from tritongym.core.sandbox.pool_options import (
    CONTEXT_MB,
    HOST_PARKING_SHARE,
    KEEPER_CACHE_SHARE,
    KEEPER_HOST_CACHE_SHARE,
    PoolOptions,
)
from tritongym.core.sandbox.problem_gpus import ProblemGPUs, ReadyWorkers, reference_key
from tritongym.core.sandbox.processes import KeeperProcess, KeeperRefused, KeeperUnavailable, Worker
from tritongym.core.sandbox.reference_timing import _ReferenceCheck
from tritongym.core.sandbox.sandbox import sweep_once
from tritongym.core.sandbox.task_driver import TaskDriver, prepare_ahead, screen_in_keeper
from tritongym.core.sandbox.task_evidence import KEEPER_MEMORY, out_of_memory_beside_others
from tritongym.core.timeline import mark
from tritongym.core.worker import frames
from tritongym.core.worker.protocol import FromWorker, Lifecycle, ToWorker, record_key
from tritongym.core.worker.stages import killed_from_outside
from tritongym.core.worker.timing_flag import ENV as TIMING_WAITS_ENV
from tritongym.core.worker.timing_flag import TimingFlag
from tritongym.core.worker_task import WorkerTask

__all__ = [  # the pool's public names, wherever along its seams they now live
    "CONTEXT_MB",
    "HOST_PARKING_SHARE",
    "KEEPER_CACHE_SHARE",
    "KEEPER_HOST_CACHE_SHARE",
    "KEEPER_MEMORY",
    "GPULock",
    "KeeperProcess",
    "KeeperRefused",
    "KeeperUnavailable",
    "MemoryBudget",
    "PoolOptions",
    "TaskDriver",
    "TaskMemory",
    "Worker",
    "WorkerPool",
    "Zygote",
    "_ReferenceCheck",
    "alone_room_mb",
    "gpu_budget_mb",
    "keeper_cache_mb",
]


class WorkerPool:
    """Warm workers over the chosen GPUs; `run(task, timeout_s)` is safe to call from many threads."""

    def __init__(self, options: PoolOptions) -> None:
        sweep_once()  # what a killed pool (its process's `kill -9`) left: its folders, any process still recorded
        self.options = options
        self.locks = {gpu: GPULock(TimingFlag()) for gpu in options.gpus}
        # warm workers with a task slot, per GPU, and the GPU each problem's tasks go to (`problem_gpus.py`): an RL
        # batch's samples of one problem share their GPU's keeper record instead of every GPU building it
        self.ready: ReadyWorkers[Worker] = ReadyWorkers(options.gpus)
        self.problem_gpus = ProblemGPUs(options.gpus)
        self.failures: list[str] = []
        self.closed = False
        self.info: dict = {}
        self._live: set[Worker] = set()
        self._guard = threading.Lock()
        # per GPU, the workers given a task slot (running one, or waiting in `ready`), at most `workers_per_gpu`;
        # warm workers beyond that wait on standby until a slot frees (`PoolOptions.spare_workers_per_gpu`)
        self._slotted = dict.fromkeys(options.gpus, 0)
        self._standby: dict[str, list[Worker]] = {gpu: [] for gpu in options.gpus}
        # workers being started now, tasks waiting for a worker, and every start asked for (what an on-demand pool
        # counts to start one worker per task, no more: `expect`, `_start_for_waiting`)
        self._starting = 0
        self._start_slots = threading.Semaphore(options.starts_at_once) if options.starts_at_once else None
        self._waiting = 0
        self.workers_started = 0
        self._next_gpu = itertools.cycle(options.gpus)
        # learnt from the first tasks, so later ones skip the full reference timing and the bandwidth test
        self.bandwidth: dict[str, float] = {}
        self.references: dict[str, dict] = {}
        # per problem (TaskDriver.reference_key), the last reference timing taken before a candidate: the samples
        # of an RL batch reuse it for `shared_check_s` instead of each draining the GPU for its own (on an
        # H100 every task took an exclusive hold for it, most of an RL batch's drains)
        self.reference_checks: dict[str, _ReferenceCheck] = {}
        # per problem (TaskDriver.reference_key), the reference side's GPU peak its keeper measured, in MiB: what
        # the next task of the problem reserves before the keeper's PREP, instead of an estimate
        self.peaks: dict[str, float] = {}
        # the host's side of the same: the MiB of outputs a problem's record parked in host memory (a full-size
        # level-1 record parks a dozen copies of a 6 GiB output), and the budget a running task reserves them
        # from; made with the GPU budgets (`_warm_keeper`), shared by every GPU of this host
        self.host_peaks: dict[str, float] = {}
        self.host_memory: MemoryBudget | None = None
        # per keeper record (`record_key`): the host MiB reserved for its parked outputs and how many running
        # tasks hold it.  The record is one for all of them (an RL batch's samples share it), so is its
        # reservation: reserved by the first, released by the last (`TaskDriver._hold_host`)
        self.host_records: dict[str, _SharedHold] = {}
        # per (GPU, keeper record): the MiB of the record's device part counted in the GPU's budget while tasks hold
        # it, and how many do (`TaskDriver._count_keeper_memory`)
        self.device_records: dict[tuple[str, str], _SharedHold] = {}
        self._busy_s = {gpu: 0.0 for gpu in options.gpus}  # seconds workers of each GPU spent on tasks
        self.ahead: set[str] = set()  # problems whose reference side is being built before a worker is free
        # tasks inside `run` now (screens included): one alone has no neighbour for whom its memory is weighed
        self.tasks_in_flight = 0
        # tasks answered whose retired worker is still dying, its memory not yet given back (`_end_in_background`);
        # `finished` is notified as each is done, for the next task's lone check (`TaskMemory._alone_in_pool`)
        self.finishing = 0
        self.finished = threading.Condition(self._guard)
        mark("pool_start", gpus=options.gpus, on_demand=options.start_on_demand)
        threading.Thread(target=_import_torch_meanwhile, name="tritongym-import-torch", daemon=True).start()
        # the fork server `tritongym eval` started before its own imports (`fork_server.start_early`), else a new one
        self.zygote = (adopt_early(options.extra_env) or Zygote(options.extra_env)) if options.use_zygote else None
        self.keepers_per_gpu = options.keepers_per_gpu or max(1, options.workers_per_gpu // 2)
        self.keeper_choice = KeeperChoice(self.keepers_per_gpu)  # which keeper serves each record (`keeper_for`)
        self.memory: dict[str, MemoryBudget] = {}  # per GPU, once its first keeper said how large it is
        self.total_mb: dict[str, float] = {}
        # per GPU, MiB held by processes outside the pool now (`hold_outside`); the keepers' cache share stays
        # what it was when they started (`PoolOptions.outside_mb`), and the budget counts it so
        self.outside_mb: dict[str, float] = dict(options.outside_mb)
        self.keepers: dict[tuple[str, int], KeeperProcess] = {}
        self._keeper_locks = {(gpu, k): threading.Lock() for gpu in options.gpus for k in range(self.keepers_per_gpu)}
        for gpu in options.gpus:
            for k in range(self.keepers_per_gpu):
                threading.Thread(target=self._warm_keeper, args=(gpu, k), daemon=True).start()
        # the GPUs in turn, so that with starts limited (`starts_at_once`) every GPU gets its first workers first
        for _ in range(0 if options.start_on_demand else options.workers_per_gpu + options.spare_workers_per_gpu):
            for gpu in options.gpus:
                self._spawn(gpu)

    # --- the reference keepers ---------------------------------------------------------------------------

    def _warm_keeper(self, gpu: str, k: int) -> None:
        try:
            self.keeper(gpu, k)
        except KeeperUnavailable as exc:
            self.failures.append(str(exc))

    def keeper(self, gpu: str, k: int = 0) -> KeeperProcess:
        """The GPU's k-th keeper, started (again, if the last one died) on demand.  A problem's tasks always go
        to the same keeper (`keeper_for`), so its record is built once; several keepers build several
        problems' records at once."""
        with self._keeper_locks[(gpu, k)]:
            current = self.keepers.get((gpu, k))
            if current is not None and not current.dead:
                return current
            if current is not None:
                current.kill()
            if self.closed:
                raise KeeperUnavailable("the pool is closed")
            mark("keeper_start", gpu=gpu, k=k)
            keeper = KeeperProcess(gpu, self.options, self.zygote, share=1.0 / self.keepers_per_gpu)
            keeper.start(self.options.start_timeout_s)
            mark("keeper_ready", gpu=gpu, k=k)
            self.keepers[(gpu, k)] = keeper
            if self.closed:  # closed while it started (a warm-up's): `close` may not have seen it
                keeper.kill()
                raise KeeperUnavailable("the pool is closed")
            total = float(keeper.info.get("total_mb") or 0.0)
            if total and gpu not in self.memory:
                self.size_gpu(gpu, total)
                if self.host_memory is None:
                    host_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
                    self.host_memory = MemoryBudget(HOST_PARKING_SHARE * host_mb)
            return keeper

    def size_gpu(self, gpu: str, total_mb: float) -> MemoryBudget:
        """The GPU's memory budget, made once its size is known (from its first keeper, or a test's)."""
        with self._guard:  # not beside `hold_outside`: a budget sized from what it is replacing would stay
            self.total_mb[gpu] = total_mb
            budget = self.memory.get(gpu)
            if budget is None:
                budget = self.memory[gpu] = MemoryBudget(self._budget_mb(gpu))
            return budget

    def _budget_mb(self, gpu: str) -> float:
        workers = self.options.workers_per_gpu + self.options.spare_workers_per_gpu
        total = self.total_mb[gpu]
        cache = keeper_cache_mb(total, self.options.outside_mb.get(gpu, 0.0))  # as the keepers were started
        return gpu_budget_mb(total, self.keepers_per_gpu, workers, self.outside_mb.get(gpu, 0.0), cache)

    def hold_outside(self, gpu: str, mb: float) -> None:
        """`mb` MiB of `gpu` are held by a process outside this pool (a trainer beside the judge: its weights,
        optimiser state, generation and update), from now on, instead of what was declared before.  Tasks are
        admitted in what is left (`gpu_budget_mb`, `alone_room_mb`): declared before the GPU was sized, it also
        shrinks the keepers' cache share of keepers started after; declared later, the budget's capacity follows
        at once, and tasks already admitted keep their grants."""
        with self._guard:
            self.outside_mb[gpu] = float(mb)
            if gpu in self.memory:
                self.memory[gpu].resize(self._budget_mb(gpu))

    def memory_state(self) -> dict[str, dict[str, float]]:
        """Per sized GPU, its memory in MiB: total, held outside the pool, the tasks' budget (`capacity`), what is
        reserved now and the most ever reserved at once."""
        with self._guard:
            return {
                gpu: {
                    "total_mb": self.total_mb[gpu],
                    "outside_mb": self.outside_mb.get(gpu, 0.0),
                    "capacity_mb": round(budget.capacity_mb, 1),
                    "reserved_mb": round(budget.reserved_mb, 1),
                    "peak_reserved_mb": round(budget.peak_mb, 1),
                }
                for gpu, budget in self.memory.items()
            }

    def keeper_for(self, gpu: str, task: WorkerTask) -> KeeperProcess:
        """The keeper of `gpu` that serves the task's record: the same one for every task of the record, new records
        spread evenly over the GPU's keepers (`keeper_choice.py`)."""
        return self.keeper(gpu, self.keeper_choice.of(gpu, record_key(task)))

    # --- worker lifecycle ------------------------------------------------------------------------------

    def _spawn(self, gpu: str, counted: bool = False) -> None:
        """Start a worker on `gpu` in the background (`counted`: the caller has counted the start already)."""
        if not counted:
            with self._guard:
                self._starting += 1
                self.workers_started += 1
        self.ready.arriving(gpu, 1)
        threading.Thread(target=self._start_counted, args=(gpu,), daemon=True).start()

    def _start_counted(self, gpu: str) -> None:
        try:
            if self._start_slots is None:
                self._start_worker(gpu)
            else:
                with self._start_slots:  # `PoolOptions.starts_at_once`: the host's starts, a few at a time
                    self._start_worker(gpu)
        finally:  # after `_offer`: a worker is never uncounted between starting and ready
            with self._guard:
                self._starting -= 1
            self.ready.arriving(gpu, -1)

    def expect(self, tasks: int) -> None:
        """`tasks` more tasks are coming.  An on-demand pool (`PoolOptions.start_on_demand`) starts a worker for each
        now, in the background, so that it warms up while the caller still prepares the task; a pool that keeps its
        workers warm has them already."""
        if not self.options.start_on_demand or self.closed or tasks <= 0:
            return
        with self._guard:
            gpus = [next(self._next_gpu) for _ in range(tasks)]
            self._starting += tasks
            self.workers_started += tasks
        for gpu in gpus:
            self._spawn(gpu, counted=True)

    def _start_for_waiting(self) -> None:
        """On an on-demand pool, a worker for each waiting task that no worker is coming for: one nobody announced,
        or a retry after its worker died."""
        if not self.options.start_on_demand or self.closed:
            return
        with self._guard:
            coming = self._starting + self.ready.qsize() + sum(len(s) for s in self._standby.values())
            short = max(0, self._waiting - coming)
            gpus = [next(self._next_gpu) for _ in range(short)]
            self._starting += short
            self.workers_started += short
        for gpu in gpus:
            self._spawn(gpu, counted=True)

    def _start_worker(self, gpu: str) -> None:
        if self.closed:
            return
        flag = self.locks[gpu].flag
        env = {
            frames.PROFILER_WARM_UP_ENV: self.options.profiler_warm_up,
            **({TIMING_WAITS_ENV: flag.path} if flag else {}),
        }
        mark("worker_start", gpu=gpu)
        worker = Worker(gpu, self.options, self.zygote, env)
        with self._guard:
            self._live.add(worker)
        frame = _warm_up(worker, self.locks[gpu], time.monotonic() + self.options.start_timeout_s)
        if frame is not None and frame[0] == Lifecycle.READY:
            worker.info = json.loads(frame[1])
            self.info = self.info or worker.info
            mark("worker_ready", gpu=gpu, parts=worker.info.get("startup_parts"))
            if self.closed:
                self._retire(worker, replace=False)
            else:
                self._offer(worker)
            return
        if frame is None:
            why = f"did not start within {self.options.start_timeout_s:g} s"
        elif frame[0] == Lifecycle.START_FAILED:
            failure = json.loads(frame[1])
            why = f"{failure.get('kind')}: {failure.get('message')}"
        else:
            why = frame[1].decode("utf-8", "replace")
        tail = worker.log_tail(1500).strip()
        self.failures.append(f"GPU {gpu}: {why}" + (f"\n{tail}" if tail else ""))
        self._retire(worker, replace=False)

    def _offer(self, worker: Worker) -> None:
        """A warm worker: into `ready` if its GPU has a task slot free, else on standby for the next one.  On standby
        it is not on its way for `ReadyWorkers` (it waits for a running task to end): counted so, at an RL batch's
        tail on two H200s one GPU idled 8.7 s of 32 beside the other's waiting tasks."""
        with self._guard:
            if self._slotted[worker.gpu] >= self.options.workers_per_gpu:
                self._standby[worker.gpu].append(worker)
                return
            self._slotted[worker.gpu] += 1
        self.ready.put(worker)

    def _slot_freed(self, gpu: str) -> None:
        """A task on `gpu` ended: its slot goes to a worker on standby, if one is."""
        with self._guard:
            self._slotted[gpu] -= 1
            waiting = self._standby[gpu].pop(0) if self._standby[gpu] else None
        if waiting is not None:
            self._offer(waiting)

    def _retire(self, worker: Worker, replace: bool = True) -> None:
        with self._guard:
            self._live.discard(worker)
        worker.send(Lifecycle.EXIT)
        worker.kill()
        if replace and not self.closed and not self.options.start_on_demand:
            self._spawn(worker.gpu)

    def _take(self, gpu: str | None = None) -> Worker:
        """A warm worker for a task placed on `gpu` (None: any), or one of another GPU that would idle."""
        waited = 0.0
        with self._guard:
            self._waiting += 1
        try:
            self._start_for_waiting()
            while True:
                try:
                    return self.ready.get(gpu, timeout=1.0)
                except queue.Empty:
                    waited += 1.0
                with self._guard:
                    alive = bool(self._live) or self._starting > 0  # a start asked for counts before its process
                if self.closed:
                    raise BackendUnavailable("the GPU worker pool was closed while the task waited for a worker")
                if self.failures and not alive:
                    raise BackendUnavailable("no GPU worker could start: " + self.failures[-1])
                if waited > self.options.start_timeout_s * 2:
                    raise BackendUnavailable(f"no GPU worker became ready in {waited:g} s")
                self._start_for_waiting()
        finally:
            with self._guard:
                self._waiting -= 1

    def lock_seconds(self) -> dict[str, dict[str, float]]:
        """Per GPU, the seconds its lock spent in each state since the pool started (`GPULock.seconds`)."""
        return {gpu: {k: round(v, 3) for k, v in lock.seconds().items()} for gpu, lock in self.locks.items()}

    def drained_by(self) -> dict[str, dict[str, float]]:
        """Per GPU, the lock's draining seconds by what the sharers that timers waited for held it for."""
        return {gpu: {k: round(v, 3) for k, v in lock.drained_by().items()} for gpu, lock in self.locks.items()}

    def exclusive_grants(self) -> dict[str, int]:
        """Per GPU, how many times its lock was granted exclusively since the pool started (`GPULock`)."""
        return {gpu: lock.exclusive_grants for gpu, lock in self.locks.items()}

    def busy_seconds(self) -> dict[str, float]:
        """Seconds the workers of each GPU (by its index) have spent on tasks, summed over its workers."""
        with self._guard:
            return dict(self._busy_s)

    def close(self) -> None:
        self.closed = True
        with self._guard:
            workers = list(self._live)
            self._live.clear()
        for worker in workers + list(self.keepers.values()):
            worker.send(Lifecycle.EXIT)
            worker.kill()
        if self.zygote is not None:
            self.zygote.close()
        for lock in self.locks.values():
            if lock.flag is not None:
                lock.flag.close()

    # --- one task --------------------------------------------------------------------------------------

    def run(self, task: WorkerTask, timeout_s: float) -> Evidence:
        """Evidence for one task, on the GPU its problem is placed on (`ProblemGPUs`) unless another GPU's worker
        would idle; a worker death is retried once on a fresh worker."""
        placed = self.problem_gpus.place(reference_key(task))
        with self._guard:
            self.tasks_in_flight += 1
        try:
            if task.mode == "screen":  # by the GPU's keeper: no worker waits for it, nor it for a worker's start
                return screen_in_keeper(self, task, timeout_s, placed)
            return self._run_placed(task, timeout_s, placed)
        finally:
            with self._guard:
                self.tasks_in_flight -= 1
            self.problem_gpus.done(placed)

    def _run_placed(self, task: WorkerTask, timeout_s: float, placed: str) -> Evidence:
        evidence = Evidence()
        alone = False
        first = ""  # how the first attempt's worker died
        for attempt in (1, 2):
            waited = time.monotonic()
            if attempt == 1:
                prepare_ahead(self, task, timeout_s, placed)
            worker = self._take(placed)
            waited = time.monotonic() - waited
            driver = TaskDriver(self, worker, task, timeout_s, alone=alone)
            healthy = False
            run_again = False  # out of memory beside others: once more with the GPU alone
            answered = False  # the evidence is the answer: the verdict does not wait for the retired worker's end
            mark("task_start", mode=task.mode, gpu=worker.gpu, waited_s=round(waited, 3))
            try:
                evidence, died = driver.drive()
                mark("task_end", mode=task.mode, gpu=worker.gpu)
                build_launchers(self.zygote, evidence.launchers)  # before the replacement's fork: it gets them too
                evidence.phases["wait_worker"] = round(waited, 4)
                with self._guard:
                    self._busy_s[worker.gpu] = self._busy_s.get(worker.gpu, 0.0) + (evidence.worker_s or 0.0)
                # how long the worker that ran it took to start (before this task; a replacement's, mostly)
                evidence.phases["worker_startup"] = float(worker.info.get("startup_s") or 0.0)
                for part, seconds in (worker.info.get("startup_parts") or {}).items():
                    evidence.phases[f"worker_startup_{part}"] = float(seconds)
                worker.tasks += 1
                healthy = not died and evidence.error is None and worker.tasks < self.options.max_tasks
                run_again = attempt == 1 and not alone and out_of_memory_beside_others(self, task, evidence)
                answered = not died and not run_again
            finally:
                self._slot_freed(worker.gpu)  # a spare on standby starts the next task now
                if healthy:
                    self._offer(worker)
                    driver.release_worker_memory()
                else:
                    self._retire(worker)
                    if answered:
                        _end_in_background(self, worker, driver)
                    else:  # the task runs again: its next worker is admitted once this one's memory is back
                        worker.wait_gone()
                        driver.release_worker_memory()
            if run_again:
                alone = True  # once more with the GPU alone; out of memory alone, the failure stands
                continue
            if alone:  # a flag: summed over a batch, how many of its tasks ran alone
                evidence.flags["ran_alone"] = True
            if not died:
                return evidence
            if attempt == 1 and evidence.error is not None:
                first = evidence.error.message
            elif evidence.error is not None:
                _second_death(evidence, first)
        return evidence


def _warm_up(worker: Worker, lock: GPULock, deadline: float) -> tuple | None:
    """A starting worker's frames until its first that is not about the GPU lock (`READY`, `FAIL`, ...; None past
    `deadline`): its warm-up takes the lock shared for its GPU work (`SHAR` ... `UNLK`), and what it holds when the
    start ends is released."""
    held = False
    while True:
        frame = worker.next_frame(deadline - time.monotonic())
        if frame is not None and frame[0] == FromWorker.SHARE and not held:
            lock.acquire(exclusive=False, holder="worker_start")
            held = worker.send(ToWorker.GRANTED)
            if not held:
                lock.release(exclusive=False, holder="worker_start")
            continue
        if frame is not None and frame[0] == FromWorker.UNLOCK and held:
            lock.release(exclusive=False, holder="worker_start")
            held = False
            continue
        break
    if held:
        lock.release(exclusive=False, holder="worker_start")
    return frame


def _import_torch_meanwhile() -> None:
    """This process decodes every worker's report with `torch.load` (`frames.tensors_from_bytes`); a CLI `eval`
    has not imported torch by then, and doing it on the first report put 3-3.5 s (an H200's cold `pool_compare`
    4.4 s against 0.03 s warm) on the critical path after the worker was ready.  Imported here while the keeper and
    the worker start (seconds of waiting on their pipes), it is there when the first report comes; a process that
    imported it already pays nothing."""
    import sys

    if "torch" in sys.modules:
        return
    began = time.monotonic()
    import torch  # noqa: F401

    mark("parent_torch_imported", seconds=round(time.monotonic() - began, 3))


def _end_in_background(pool: WorkerPool, worker: Worker, driver: TaskDriver) -> None:
    """A retired worker's death awaited, then its GPU memory given back, on a thread of its own: the task's verdict
    needs neither, and waiting for them was 0.1 s of every warm `eval` (a served pool on an H200).  The next task's
    admission needs both: a lone task's check waits for them (`TaskMemory._alone_in_pool`), and any other waits for
    the budget they free."""
    with pool._guard:
        pool.finishing += 1

    def end() -> None:
        try:
            worker.wait_gone()
            driver.release_worker_memory()
        finally:
            with pool._guard:
                pool.finishing -= 1
                pool.finished.notify_all()

    threading.Thread(target=end, name="tritongym-worker-end", daemon=True).start()


def _second_death(evidence: Evidence, first: str) -> None:
    """A task's worker died on its retry too (`first`: how the first one did): the candidate's `crashed`, unless a
    signal no limit of the pool's sends killed it (`stages.FOREIGN_SIGNALS`: SIGKILL from another process, the OOM
    killer; the pool's own kills are `Timeout` and `MemoryLimit`, never a death).  Then, as in the CPU sandbox
    (`sandbox.run_in_sandbox`), it is an infrastructure failure: stage `setup`, the backend's error, never a
    verdict (`Evaluator._judge`)."""
    if not (evidence.error.kind == "WorkerCrashed" and killed_from_outside(evidence.error.message)):
        evidence.error.message += " (also on a retry with a fresh worker)"
        return
    evidence.stage = "setup"
    evidence.error = ErrorInfo(
        kind="InfrastructureFailure",
        message=f"{evidence.error.message} on the task's retry with a fresh worker (its first run: "
        f"{first or 'out of memory beside others'}), by a signal no limit of the pool's sends (the pool's time and "
        "memory kills read as such): another process or the system's OOM killer killed it; not a verdict on the "
        "candidate",
    )
