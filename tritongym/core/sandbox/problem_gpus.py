"""Which GPU of the host a task runs on: every task of one problem on the same GPU, and warm workers handed out by GPU.

Why: a problem's reference side (the keeper's record: outputs, float64 gold, probes) is built by a keeper
of the GPU the task runs on.  With any worker taking any task, an RL batch's samples of one problem ran on every
GPU and each GPU built every problem's record: on two H200s the keepers' work grew from 46 to 71 s for the same 128
candidates, and two GPUs judged the batch 1.55x as fast as one.  Here a problem is placed once, on the GPU with the
least placed work at that moment, and its tasks wait for a worker of that GPU; a task whose GPU has no warm worker
takes one from a GPU where no task waits for it (work-conserving: a GPU never idles while another has a queue).
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
import time
from queue import Empty
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from tritongym.core.worker_task import WorkerTask


def reference_key(task: WorkerTask) -> str:
    """A problem's reference side as the pool knows it (problem, shapes, precision): what its timing is cached under
    (`WorkerPool.references`) and what places its tasks on one GPU (`ProblemGPUs`, and the Ray executor's actors)."""
    identity = json.dumps([task.problem_source, task.sizes, task.precision], sort_keys=True, default=str)
    return hashlib.sha256(identity.encode()).hexdigest()


class _OnGPU(Protocol):
    gpu: str


W = TypeVar("W", bound=_OnGPU)


class ReadyWorkers(Generic[W]):
    """Warm workers that have a task slot, kept per GPU.  `get(gpu)` prefers a worker of `gpu`; it takes another GPU's
    only when `gpu` cannot serve its waiting tasks soon (more tasks wait for it than it has workers ready or starting
    into a free slot; one on standby waits for a running task to end, `WorkerPool._offer`) and that GPU's ready
    workers outnumber the tasks waiting for them (they would idle otherwise).  A
    worker on its way is worth waiting for: taken elsewhere, the task's keeper record is built a second time (on two
    H200s, an RL batch of four samples built the record twice, the GPU test of one record failed)."""

    def __init__(self, gpus: list[str]) -> None:
        self.cond = threading.Condition()
        self.by_gpu: dict[str, collections.deque[W]] = {gpu: collections.deque() for gpu in gpus}
        self.wanted: dict[str, int] = dict.fromkeys(gpus, 0)  # tasks waiting now for a worker of each GPU
        self.coming: dict[str, int] = dict.fromkeys(gpus, 0)  # workers of each GPU starting
        self.taken_elsewhere = 0  # workers handed to a task placed on another GPU

    def put(self, worker: W) -> None:
        with self.cond:
            self.by_gpu[worker.gpu].append(worker)
            self.cond.notify_all()

    def arriving(self, gpu: str, change: int) -> None:
        """`change` more (or fewer) workers of `gpu` on their way: starting."""
        with self.cond:
            self.coming[gpu] += change
            self.cond.notify_all()

    def ready_on(self, gpu: str) -> int:
        """Workers of `gpu` ready now."""
        with self.cond:
            return len(self.by_gpu.get(gpu, ()))

    def qsize(self) -> int:
        with self.cond:
            return sum(len(q) for q in self.by_gpu.values())

    def _pick(self, gpu: str | None) -> W | None:
        """Under `cond`: the worker for a task placed on `gpu` (None: any GPU), or None."""
        if gpu is not None and self.by_gpu.get(gpu):
            return self.by_gpu[gpu].popleft()
        if gpu is not None and self.wanted[gpu] <= self.coming[gpu]:
            return None  # one of its own is on its way
        spare = [g for g, q in self.by_gpu.items() if len(q) > (self.wanted[g] if g != gpu else 0)]
        if not spare:
            return None
        if gpu is not None:
            self.taken_elsewhere += 1
        return self.by_gpu[max(spare, key=lambda g: len(self.by_gpu[g]) - self.wanted[g])].popleft()

    def get(self, gpu: str | None = None, timeout: float = 1.0) -> W:
        """A worker for a task placed on `gpu`, waiting up to `timeout` seconds; `queue.Empty` if none came."""
        end = time.monotonic() + timeout
        with self.cond:
            if gpu is not None:
                self.wanted[gpu] += 1
            try:
                while True:
                    worker = self._pick(gpu)
                    if worker is not None:
                        return worker
                    remaining = end - time.monotonic()
                    if remaining <= 0:
                        raise Empty
                    self.cond.wait(remaining)
            finally:
                if gpu is not None:
                    self.wanted[gpu] -= 1


class ProblemGPUs:
    """Which GPU each problem's tasks go to: chosen at its first task, the GPU with the fewest tasks placed and not yet
    finished, and kept for the pool's life, so that a later batch of the problem (the next RL step's) finds the
    record its keeper cached.  Batches whose problems all sit on one GPU still use every GPU: `ReadyWorkers` hands an
    idle GPU's worker to a task placed elsewhere."""

    def __init__(self, gpus: list[str]) -> None:
        self._guard = threading.Lock()
        self.gpus = list(gpus)
        self.load: dict[str, int] = dict.fromkeys(gpus, 0)  # tasks placed on each GPU and not yet finished
        self.placed: dict[str, str] = {}  # problem -> GPU

    def place(self, problem: str) -> str:
        """The GPU for one more task of `problem`; call `done(gpu)` when it has finished."""
        with self._guard:
            gpu = self.placed.get(problem)
            if gpu is None:
                gpu = self.placed[problem] = min(self.gpus, key=lambda g: (self.load[g], self.gpus.index(g)))
            self.load[gpu] += 1
            return gpu

    def done(self, gpu: str) -> None:
        with self._guard:
            self.load[gpu] -= 1
