"""Where the sandboxes of an `Evaluator` run: the one seam between judging and measuring.

The Evaluator does everything that needs the registry or decides a verdict on its own thread (static
checks, cache lookups, judging, storing).  What it hands an executor is plain data: `WorkerTask`s, each to
be measured by the backend inside its sandbox, and it gets back `Evidence`.  Two executors exist:

* `LocalExecutor` (`executor = "local"`): the backend's `measure` in `workers` threads on this host, each
  thread waiting on one sandboxed worker process;
* `RayExecutor` (`executor = "ray"`, `tritongym.core.distributed`): the same backend hosted by Ray actors,
  one per GPU of a cluster, each owning that GPU's warm worker pool.

An executor never judges and never writes the registry: a verdict computed on another machine would have
to be trusted, and a registry with several writers is the corruption ARCHITECTURE.md §5's one writer path rules out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Protocol

from tritongym.core.models import Evidence
from tritongym.core.worker_task import WorkerTask

Measured = tuple[Evidence, float]
"""The evidence of one task and the `time.perf_counter()` at which its measurement began."""


class Executor(Protocol):
    def measure_many(self, tasks: Mapping[int, WorkerTask]) -> Iterator[tuple[int, Evidence, float]]:
        """Measure every task; yield (key, evidence, started) as each finishes, in any order."""

    def measure(self, task: WorkerTask) -> Measured:
        """One task, now (a re-measurement of an implausible speedup)."""

    def close(self) -> None:
        """Release what the executor holds (threads, actors); it may be used again after."""


class TaskBehindScreen:
    """A task whose problem's negative-control screen is still running: made (`build(screen)`) on the executor's
    thread once the screen is done, so that candidates of problems already screened need not wait for it."""

    def __init__(self, build: Callable[..., WorkerTask], screen: Future) -> None:
        self._build = build
        self._screen = screen
        self.task: WorkerTask | None = None

    def __call__(self) -> WorkerTask:
        self.task = self._build(screen=self._screen.result())
        return self.task


class LocalExecutor:
    """The backend's `measure` in a pool of threads on this host: today's path, and the default."""

    def __init__(self, measure: Callable[[WorkerTask], Measured], workers: int) -> None:
        self._measure = measure
        self.workers = max(1, workers)

    def measure_many(self, tasks: Mapping[int, WorkerTask | TaskBehindScreen]) -> Iterator[tuple[int, Evidence, float]]:
        if not tasks:
            return

        def measure(task: WorkerTask | TaskBehindScreen) -> Measured:
            return self._measure(task() if isinstance(task, TaskBehindScreen) else task)

        with ThreadPoolExecutor(max_workers=min(self.workers, len(tasks))) as pool:
            futures = {pool.submit(measure, task): key for key, task in tasks.items()}
            for future in as_completed(futures):
                evidence, started = future.result()
                yield futures[future], evidence, started

    def measure(self, task: WorkerTask) -> Measured:
        return self._measure(task)

    def close(self) -> None:
        """Nothing outlives a `measure_many` call here; the backend's own workers are closed by the Evaluator."""
