"""The engine of `tritongym serve`: a bounded task queue kept in the registry, and the lanes that drain it.

No HTTP here (that is `app.py`), so the rules can be read in one place:

- A task is written to the registry's `service_tasks` table *before* the request that brought it is
  answered; what is accepted is never only in memory.  At start-up every task still queued or running
  (the process stopped or died under it) is queued again, oldest first.
- The queue is bounded: queued plus running tasks never exceed `capacity`; a submission that would pass
  it is refused whole (`QueueFull`, HTTP 429), never half-accepted.
- `lanes` threads each take the oldest queued task and evaluate it with their own view of the Evaluator
  (`Evaluator.with_registry`: the same warm workers, their own SQLite connection), so a slow candidate
  never holds up the others and no two threads share a transaction.  A task whose kernel is being
  evaluated for the same problem by another lane waits for it, and is then answered from the registry.
- This process is the registry's only writer: clients talk HTTP, never SQLite.
- A candidate that crashes, hangs or cheats is a verdict (`done`, with its status), not a failure of
  the service; `failed` is kept for tasks no verdict could be reached for (the problem's reference broke
  in the worker, a plugin raised) and says why.
- Stopping (`stop`) takes no new task, lets running ones finish for up to `drain_s`, and otherwise leaves
  them marked running, to run again at the next start.  The backend's workers are closed only when no
  evaluation is in flight: killing a worker under a candidate would record a false "crashed" verdict.  The
  sandboxes of the tasks left running are killed by `abandon`, as the process exits (see `sandboxes.py`).
- A task may carry its own trial count and time limit (KernelGYM's `num_correct_trials` and `timeout`,
  stored with the task under `request["applied"]`): its lane evaluates it with a view of the Evaluator
  tuned to them (`_tuned`), over the same warm workers.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tritongym.core.errors import ProblemFormatError, TritonGymError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.eval.executor import LocalExecutor
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.models import Candidate, EvaluationResult, Problem
from tritongym.core.problems import parse_problem
from tritongym.core.registry import Registry
from tritongym.core.timeline import mark
from tritongym.service import kernelgym, sandboxes
from tritongym.service.metrics import ServiceMetrics
from tritongym.service.protocol import Health, Submission, TaskState, TaskView

log = logging.getLogger("tritongym.service")

T = TypeVar("T")

MAX_SOURCE_BYTES = 1 << 20  # a candidate or a reference; the same bound as `tritongym eval` reads a file with


class QueueFull(Exception):
    """The submission would take the queue past its capacity (HTTP 429)."""

    def __init__(self, capacity: int, active: int, asked: int) -> None:
        super().__init__(
            f"the queue is full: {active} of {capacity} tasks are queued or running and {asked} more were "
            "submitted; retry after some finish (the Retry-After header says when to try)"
        )
        self.capacity, self.active, self.asked = capacity, active, asked


class SubmissionError(Exception):
    """A submission the service cannot take as it is (HTTP `status_code`: 422 malformed, 413 too large)."""

    def __init__(self, message: str, status_code: int = 422) -> None:
        super().__init__(message)
        self.status_code = status_code


class ServiceStopping(Exception):
    """The service is draining and takes no new task (HTTP 503)."""


@dataclass
class Prepared:
    """A submission resolved to the problem and candidate it names, ready to be queued."""

    problem: Problem
    candidate: Candidate
    task_id: str | None = None
    api: str = "tritongym"
    request: dict = field(default_factory=dict)  # what the API echoes back (KernelGYM's fields)


@dataclass
class _Task:
    id: str
    seq: int
    api: str
    problem: Problem
    candidate: Candidate
    request: dict
    submitted_at: str
    attempts: int = 0
    state: TaskState = TaskState.queued
    started_at: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.problem.key, self.candidate.kernel_id


def _inline_name(source: str) -> str:
    return "inline-" + hashlib.sha256(source.encode()).hexdigest()[:12]


class EvaluationService:
    def __init__(
        self,
        evaluator: Evaluator,
        registry_path: str | Path,
        problems: dict[str, Problem] | None = None,
        *,
        lanes: int = 1,
        capacity: int = 1024,
        max_attempts: int = 3,
    ) -> None:
        if lanes < 1 or capacity < 1 or max_attempts < 1:
            raise ValueError("lanes, capacity and max_attempts must each be at least 1")
        self.evaluator = evaluator
        self.registry_path = Path(registry_path)
        self.registry = Registry(self.registry_path)  # the request side's connection, used under self._lock
        self.problems = dict(problems or {})
        self.lanes = lanes
        self.capacity = capacity
        self.max_attempts = max_attempts
        self.metrics = ServiceMetrics(counts=self.counts, capacity=capacity, lanes=lanes, busy=self._busy)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._watchers: set[Callable[[], None]] = set()
        self._queue: deque[_Task] = deque()
        self._active: dict[str, _Task] = {}  # queued and running tasks, by id
        self._running_keys: set[tuple[str, str]] = set()
        self._threads: list[threading.Thread] = []
        self._lane_registries: list[Registry] = []
        self._stopping = False
        self._stopped: bool | None = None  # stop()'s answer, once it has run
        self._version = local_fingerprint().tritongym
        self._protocol_names = [c.name for c in evaluator.checks]
        # a view with other trials is only sound if its protocol key can be computed as the Evaluator's was
        self._tunable = evaluator.config.protocol_key(self._protocol_names) == evaluator.protocol

    # --- life cycle ------------------------------------------------------------------------------------

    def start(self) -> int:
        """Queue again what an earlier process left unfinished, then start the lanes; returns how many resumed.

        Sandboxes an earlier process left behind when it was killed (their parent is gone; nobody reads their
        verdict) are killed first, so they do not run beside the tasks resumed here."""
        self.evaluator.warm_up(self.lanes)  # the backend's workers start now: the first task finds them warm
        orphans = sandboxes.kill_orphans()
        if orphans:
            log.warning("killed %d sandbox(es) an earlier process left running: %s", len(orphans), orphans)
        with self._lock:
            resumed = 0
            for row in self.registry.unfinished_tasks():
                task = self._task_of(row)
                self._queue.append(task)
                self._active[task.id] = task
                resumed += 1
        self.metrics.count_resumed(resumed)
        if resumed:
            log.info("resuming %d task(s) an earlier run of the service accepted but did not finish", resumed)
        for n in range(self.lanes):
            registry = Registry(self.registry_path)
            self._lane_registries.append(registry)
            lane = self.evaluator.with_registry(registry)
            thread = threading.Thread(target=self._lane, args=(lane,), name=f"tritongym-lane-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return resumed

    def begin_stop(self) -> None:
        """Take no new task from now on (submissions get `ServiceStopping`, health says 'stopping'); the lanes
        finish the task each is running and then end."""
        with self._lock:
            self._stopping = True
            self._changed.notify_all()
            self._tell_watchers()

    def stop(self, drain_s: float = 60.0) -> bool:
        """Take no new task; wait up to `drain_s` for running ones.  True when every lane finished (the
        backend is then closed); False leaves the rest marked running, for the next start to run again.
        A second call answers as the first did."""
        if self._stopped is not None:
            return self._stopped
        self.begin_stop()
        deadline = time.monotonic() + drain_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        left = [t for t in self._threads if t.is_alive()]
        if left:
            with self._lock:
                running = [t.id for t in self._active.values() if t.state == TaskState.running]
            log.warning(
                "%d task(s) still running after %g s (%s); they stay in the queue and run again at the next start",
                len(running),
                drain_s,
                ", ".join(running),
            )
            self._stopped = False
            return False
        self.evaluator.close()
        for registry in self._lane_registries:
            registry.close()
        self._stopped = True
        return True

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from a lane's thread; it must not block) when a task finishes or the service begins to
        stop, until the function returned is called: the HTTP layer's waits wake then, not at a next poll."""
        with self._lock:
            self._watchers.add(callback)

        def stop_watching() -> None:
            with self._lock:
                self._watchers.discard(callback)

        return stop_watching

    def _tell_watchers(self) -> None:
        for callback in list(self._watchers):
            try:
                callback()
            except Exception:  # noqa: BLE001 - a watcher that went away (its event loop closed) must not stop a lane
                log.debug("a task-change watcher failed", exc_info=True)

    def lanes_alive(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    @property
    def stopping(self) -> bool:
        return self._stopping

    # --- submitting ------------------------------------------------------------------------------------

    def prepare(self, submission: Submission) -> Prepared:
        """Resolve a submission's problem and candidate; a `SubmissionError` says what is wrong with it."""
        if len(submission.source.encode()) > MAX_SOURCE_BYTES:  # a Submission's text has a UTF-8 form (protocol.py)
            raise SubmissionError(f"the candidate source is larger than {MAX_SOURCE_BYTES >> 10} KiB", 413)
        if submission.problem is not None:
            problem = self.problems.get(submission.problem)
            if problem is None:
                raise SubmissionError(
                    f"no problem named '{submission.problem}' is served here ({len(self.problems)} are: "
                    "GET /v1/problems lists them); or send the reference itself as problem_source"
                )
        else:
            problem = self.problem_from_source(submission.problem_source or "", submission.problem_name)
        candidate = Candidate(source=submission.source, origin=submission.origin or "service")
        return Prepared(problem=problem, candidate=candidate, task_id=submission.task_id)

    def problem_from_source(self, source: str, name: str | None = None) -> Problem:
        if len(source.encode()) > MAX_SOURCE_BYTES:
            raise SubmissionError(f"the problem source is larger than {MAX_SOURCE_BYTES >> 10} KiB", 413)
        try:
            return parse_problem(source, name or _inline_name(source), "service", self.evaluator.size)
        except ProblemFormatError as exc:
            raise SubmissionError(str(exc)) from None

    def submit(self, items: Sequence[Prepared]) -> list[TaskView]:
        """Queue every item, or none of them (`QueueFull`); an item whose `task_id` is known returns that task."""
        views: list[TaskView | None] = [None] * len(items)
        new: list[tuple[int, Prepared, str]] = []
        with self._lock:
            if self._stopping:
                raise ServiceStopping("the service is shutting down and takes no new task; retry against its successor")
            claimed: dict[str, int] = {}
            for i, item in enumerate(items):
                if item.task_id is not None:
                    if item.task_id in claimed:  # the same id twice in one request: one task
                        continue
                    known = self._view_locked(item.task_id)
                    if known is not None:
                        views[i] = known
                        continue
                    claimed[item.task_id] = i
                new.append((i, item, item.task_id or uuid.uuid4().hex))
            if len(self._active) + len(new) > self.capacity:
                self.metrics.count_rejected("queue_full")
                raise QueueFull(self.capacity, len(self._active), len(new))
            rows = self.registry.add_tasks(
                [
                    {
                        "id": task_id,
                        "api": item.api,
                        "problem_name": item.problem.name,
                        "problem_key": item.problem.key,
                        "problem": item.problem.model_dump_json(),
                        "kernel_id": item.candidate.kernel_id,
                        "candidate": item.candidate.model_dump_json(),
                        "request": _json(item.request),
                    }
                    for _, item, task_id in new
                ]
            )
            for (_, item, task_id), row in zip(new, rows):
                task = _Task(
                    id=task_id,
                    seq=row["seq"],
                    api=item.api,
                    problem=item.problem,
                    candidate=item.candidate,
                    request=item.request,
                    submitted_at=row["submitted_at"],
                )
                self._queue.append(task)
                self._active[task_id] = task
            new_ids = {i: task_id for i, _, task_id in new}
            for i, item in enumerate(items):  # the new tasks, and ids repeated within the request
                if views[i] is None:
                    views[i] = self._view_locked(new_ids.get(i) or item.task_id)
            self._changed.notify_all()
        mark("submitted", tasks=len(new))
        self.metrics.count_submitted(len(new))
        return [v for v in views if v is not None]

    # --- reading ---------------------------------------------------------------------------------------

    def view(self, task_id: str) -> TaskView | None:
        with self._lock:
            return self._view_locked(task_id)

    def views(self, task_ids: Sequence[str]) -> dict[str, TaskView]:
        """The tasks that exist among `task_ids`, by id."""
        with self._lock:
            found = {}
            stored = self.registry.service_tasks([i for i in task_ids if i not in self._active])
            for task_id in task_ids:
                if task_id in self._active:
                    found[task_id] = self._active_view(self._active[task_id])
                elif task_id in stored:
                    found[task_id] = _row_view(stored[task_id])
            return found

    def request_of(self, task_id: str) -> dict | None:
        """The API-specific fields stored with a task (KernelGYM's request), or None if no such task."""
        with self._lock:
            if task_id in self._active:
                return dict(self._active[task_id].request)
            row = self.registry.service_task(task_id)
        return None if row is None else _loads(row["request"])

    def read(self, query: Callable[[Registry], T]) -> T:
        """Run a read-only registry query (best, leaderboard) on the request side's connection, in turn
        with submissions."""
        with self._lock:
            return query(self.registry)

    def all_finished(self, task_ids: Sequence[str]) -> bool:
        with self._lock:
            return not any(i in self._active for i in task_ids)

    def forget(self, task_id: str) -> None:
        """Drop a finished task so its id can be used again (running or queued ones are kept)."""
        with self._lock:
            if task_id not in self._active:
                self.registry.forget_task(task_id)

    def applied(self, trials: int | None, timeout_s: float | None) -> dict:
        """What the lanes will apply of a task's own trial count and time limit: the time limit is capped at
        the service's; under Ray the actors keep the service's limit (they are set up with it)."""
        applied = {}
        if trials is not None and self._tunable:
            applied["trials"] = trials
        if timeout_s is not None and isinstance(self.evaluator.executor, LocalExecutor):
            applied["timeout_s"] = min(float(timeout_s), self.evaluator.limits.timeout_s)
        return applied

    def counts(self) -> tuple[int, int]:
        """(queued, running)."""
        with self._lock:
            running = sum(1 for t in self._active.values() if t.state == TaskState.running)
            return len(self._active) - running, running

    def health(self) -> Health:
        queued, running = self.counts()
        ev = self.evaluator
        health = Health(
            status="stopping" if self._stopping else "healthy",
            version=self._version,
            backend=ev.backend_name,
            device=ev.device,
            device_class=ev.device_class,
            size=ev.size,
            protocol=ev.protocol,
            lanes=self.lanes,
            queued=queued,
            running=running,
            capacity=self.capacity,
            uptime_s=round(self.metrics.uptime_s(), 3),
            problems=len(self.problems),
        )
        fields = kernelgym.health_fields(health, self.metrics.finished(), self._busy())
        return health.model_copy(update=fields)

    def _busy(self) -> dict[str, float]:
        return getattr(self.evaluator.executor, "busy_seconds", self.evaluator.backend.busy_seconds)()

    def render_metrics(self) -> bytes:
        """The Prometheus text of `/metrics`: queue sizes and busy seconds are read now, at the scrape."""
        return self.metrics.render()

    def _view_locked(self, task_id: str) -> TaskView | None:
        if task_id in self._active:
            return self._active_view(self._active[task_id])
        row = self.registry.service_task(task_id)
        return None if row is None else _row_view(row)

    def _active_view(self, task: _Task) -> TaskView:
        position = None
        if task.state == TaskState.queued:
            position = next((n for n, t in enumerate(self._queue) if t.id == task.id), None)
        return TaskView(
            id=task.id,
            state=task.state,
            problem=task.problem.name,
            kernel_id=task.candidate.kernel_id,
            origin=task.candidate.origin,
            position=position,
            attempts=task.attempts,
            submitted_at=task.submitted_at,
            started_at=task.started_at,
        )

    def _task_of(self, row: dict) -> _Task:
        return _Task(
            id=row["id"],
            seq=row["seq"],
            api=row["api"],
            problem=Problem.model_validate_json(row["problem"]),
            candidate=Candidate.model_validate_json(row["candidate"]),
            request=_loads(row["request"]),
            submitted_at=row["submitted_at"],
            attempts=row["attempts"] or 0,
        )

    # --- the lanes -------------------------------------------------------------------------------------

    def _take(self) -> _Task | None:
        """The oldest queued task whose kernel no other lane is evaluating for the same problem (called locked)."""
        for task in self._queue:
            if task.key not in self._running_keys:
                self._queue.remove(task)
                self._running_keys.add(task.key)
                task.state = TaskState.running
                return task
        return None

    def _lane(self, evaluator: Evaluator) -> None:
        registry = evaluator.registry
        assert registry is not None  # every lane is given its own connection in start()
        while True:
            with self._lock:
                task = None if self._stopping else self._take()
                while task is None and not self._stopping:
                    self._changed.wait()
                    task = None if self._stopping else self._take()
                if task is None:
                    return
            started = time.monotonic()
            result: EvaluationResult | None = None
            error = ""
            try:
                task.attempts = registry.start_task(task.id)
                task.started_at = registry.service_task(task.id)["started_at"]
                if task.attempts > self.max_attempts:
                    error = (
                        f"the service stopped {task.attempts - 1} times while evaluating this task; given up "
                        f"(a task is started at most {self.max_attempts} times)"
                    )
                else:
                    result = self._tuned(evaluator, task.request.get("applied") or {}).evaluate(
                        task.candidate, task.problem
                    )
            except TritonGymError as exc:
                error = str(exc)
            except Exception as exc:  # a bug, not the candidate: reported on the task, logged with its traceback
                log.exception("task %s failed inside the service", task.id)
                error = f"internal error in the service: {type(exc).__name__}: {exc}"
            mark("lane_evaluated")
            if result is not None:
                registry.finish_task(task.id, "done", result.model_dump_json(), result.evaluation_id)
            else:
                registry.finish_task(task.id, "failed", error=error)
            mark("lane_finished")
            self.metrics.count_finished(result, time.monotonic() - started)
            with self._lock:
                self._active.pop(task.id, None)
                self._running_keys.discard(task.key)
                self._changed.notify_all()
                self._tell_watchers()

    def _tuned(self, lane: Evaluator, applied: dict) -> Evaluator:
        """The lane's Evaluator with a task's own trial count and time limit (`applied`), over the same backend
        and warm workers; the lane itself when the task has none."""
        trials, timeout_s = applied.get("trials"), applied.get("timeout_s")
        if trials in (None, lane.config.trials) and timeout_s in (None, lane.limits.timeout_s):
            return lane
        view = copy.copy(lane)
        view.config = lane.config.model_copy(update={"trials": trials or lane.config.trials})
        view.protocol = view.config.protocol_key(self._protocol_names)
        if timeout_s is not None and isinstance(lane.executor, LocalExecutor):
            view.limits = lane.limits.model_copy(update={"timeout_s": timeout_s})
            view.executor = LocalExecutor(view._measure, lane.executor.workers)  # measures with view.limits
        return view


def _json(value: dict) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _loads(text: str | None) -> dict:
    return json.loads(text) if text else {}


def _row_view(row: dict) -> TaskView:
    candidate = Candidate.model_validate_json(row["candidate"])
    return TaskView(
        id=row["id"],
        state=TaskState(row["state"]),
        problem=row["problem_name"],
        kernel_id=row["kernel_id"],
        origin=candidate.origin,
        attempts=row["attempts"] or 0,
        submitted_at=row["submitted_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        result=EvaluationResult.model_validate_json(row["result"]) if row["result"] else None,
        error=row["error"],
    )
