"""The Ray executor: an `Evaluator`'s sandboxes on a Ray cluster (`executor = "ray"`, `--ray ADDRESS`).

Ray is the engine; this module only says what runs where:

* one actor per GPU of the cluster (`num_gpus=1`: Ray places it and sets its CUDA_VISIBLE_DEVICES), or on
  a CPU backend one per worker slot.  The actor hosts the configured backend plugin, built from the
  driver's plugin recipe, so it owns that GPU's warm worker pool (`tritongym.core.sandbox.gpu_pool`) or
  starts the CPU backend's sandboxes, exactly as one host would: candidates run in those sandboxed
  worker processes, never in the actor;
* the driver (the process holding the `Evaluator`) sends `WorkerTask`s and gets `Evidence` back as JSON;
  it alone judges and writes the registry;
* each task goes to the least busy live actor (tasks in flight relative to what its backend serves at
  once); more tasks than free slots wait here, as `ray.wait` reports slots freeing;
* fault tolerance is Ray's: an actor that dies is restarted by Ray (`max_restarts`); the task it was
  running fails with `RayActorError`, and is resubmitted once to another actor.  An actor's death is the
  infrastructure's (killed from outside, its node lost), never the candidate's: a candidate runs in the
  actor's sandboxes, whose own deaths come back as evidence.  So a task whose second actor dies too is the
  backend's error (`InfrastructureFailure`, stage `setup`: `Evaluator._judge` raises `BackendUnavailable`
  and nothing is stored), never a `crashed` verdict on the candidate.

`ray.util.ActorPool` does the routing for one task per actor, but it holds one task per actor (a GPU
actor serves several at once: compilation and correctness of several candidates overlap) and forgets
which task an actor was running when it dies, so the few lines of routing below use `ray.wait` directly.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping

from tritongym.core.config import EvalConfig, RayOptions
from tritongym.core.errors import BackendUnavailable, PluginError
from tritongym.core.models import ErrorInfo, Evidence
from tritongym.core.plugins import PluginHost
from tritongym.core.sandbox.problem_gpus import ProblemGPUs, reference_key
from tritongym.core.worker_task import SandboxLimits, WorkerTask

_MAX_TASKS_PER_ACTOR = 64
_connection = threading.Lock()
_started_ray = False  # whether this process's Ray instance was started here (and is ours to shut down)
_executors = 0  # executors holding the connection


def _import_ray():
    try:
        import ray
    except ImportError:
        raise BackendUnavailable(
            "executor 'ray' needs Ray, which is not installed: pip install 'tritongym[ray]'"
        ) from None
    return ray


def connect(options: RayOptions):
    """Ray, initialised: the instance this process already has, or the one `options.address` names."""
    global _started_ray
    ray = _import_ray()
    with _connection:
        if not ray.is_initialized():
            import logging

            address = None if options.address == "local" else options.address
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise BackendUnavailable(
                    f"cannot start or reach Ray at {options.address!r}: {exc}; set ray.address to 'local', "
                    "'auto' (a cluster `ray start --head` runs here) or the head node's address"
                ) from None
            _started_ray = True
    return ray


def ray_backend_name(config: EvalConfig, host: PluginHost) -> str:
    """The backend to run on the cluster: `auto` means triton-cuda where the cluster has GPUs, which this
    process (often a CPU-only driver) cannot see for itself."""
    if config.backend != "auto":
        return config.backend
    ray = connect(config.ray)
    if ray.cluster_resources().get("GPU", 0) > 0 and "triton-cuda" in host.names("backend"):
        return "triton-cuda"
    return "triton-cpu"


class BackendActor:
    """What one actor runs: the backend plugin, built in the actor's process from the driver's plugins.

    Plain data crosses the wire (JSON of `WorkerTask`, `SandboxLimits` and `Evidence`), so nothing of the
    driver's state (its registry, its plugin objects) is pickled into the actor."""

    def __init__(self, backend_name: str, backend_options: dict, recipe: dict) -> None:
        host = PluginHost(**recipe)
        self.backend = host.create("backend", backend_name, backend_options)

    def describe(self, device: str | None) -> dict:
        """What the driver needs to know before it judges anything: can the backend run here, on which device
        (class), how many tasks it serves at once, and where the actor is."""
        import ray

        reason = self.backend.unavailable_reason()
        facts = {"unavailable": reason, "node": ray.util.get_node_ip_address(), "pid": os.getpid()}
        if reason is None:
            device = device or self.backend.default_device()
            facts.update(device=device, device_class=self.backend.device_class(device))
            facts["concurrency"] = self.backend.concurrency()
        return facts

    def measure(self, task_json: str, limits_json: str) -> tuple[str | None, str | None]:
        """(Evidence as JSON, None), or (None, what the backend raised): a broken backend is the driver's
        `PluginError`, not a dead actor."""
        try:
            task = WorkerTask.model_validate_json(task_json)
            evidence = self.backend.measure(task, SandboxLimits.model_validate_json(limits_json))
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which names the plugin
            return None, f"{type(exc).__name__}: {exc}"
        return evidence.model_dump_json(), None

    def close(self) -> None:
        self.backend.close()


class RayExecutor:
    """Backend actors on a Ray cluster; `measure_many` routes tasks to them (see the module doc)."""

    def __init__(
        self,
        backend_name: str,
        backend_options: dict,
        host: PluginHost,
        options: RayOptions,
        workers: int,
        limits: SandboxLimits,
        device: str | None = None,
    ) -> None:
        self._connected = False
        registered = host.get("backend", backend_name)
        self.backend_name, self.plugin = backend_name, registered.plugin
        self.on_gpu = registered.cls.device_type == "cuda"
        self.options = options
        self.workers = workers
        self.limits_json = limits.model_dump_json()
        self._actor_args = (backend_name, backend_options, host.recipe())
        self._wanted_device = device
        self.actors: list = []
        self.facts: list[dict] = []
        self.busy: list[int] = []
        self.slots: list[int] = []
        self.concurrency: list[int] = []
        self.lost: set[int] = set()
        self.retried = 0  # tasks resubmitted after their actor died
        self.busy_s: dict[str, float] = {}  # seconds of tasks in flight, summed per actor (node and device)
        # `tritongym serve` runs several lanes (threads) over one executor: the routing state is shared
        self._lock = threading.RLock()
        self.device: str = ""
        self.device_class: str = ""
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # --- actors ----------------------------------------------------------------------------------------

    def _count(self) -> int:
        if self.options.actors:
            return self.options.actors
        resources = self._ray.cluster_resources()
        if self.on_gpu:
            gpus = int(resources.get("GPU", 0))
            if gpus == 0:
                raise BackendUnavailable(
                    f"backend '{self.backend_name}' needs GPUs, and the Ray cluster at {self.options.address!r} has "
                    "none; use --backend triton-cpu, or join a cluster with GPUs"
                )
            return gpus
        return max(1, self.workers or int(resources.get("CPU", 1) // self.options.cpus_per_actor))

    def _start(self) -> None:
        global _executors
        if not self._connected:
            self._ray = connect(self.options)
            with _connection:
                _executors += 1
            self._connected = True
        ray = self._ray
        n = self._count()
        most = self.options.tasks_per_actor or (_MAX_TASKS_PER_ACTOR if self.on_gpu else 1)
        actor_class = ray.remote(BackendActor).options(
            num_cpus=self.options.cpus_per_actor,
            num_gpus=1 if self.on_gpu else 0,
            max_restarts=self.options.max_restarts,
            max_task_retries=0,  # a task is resubmitted by us, to another actor, once
            max_concurrency=most + 1,  # its tasks, and a `describe` answered while they run
        )
        self.actors = [actor_class.remote(*self._actor_args) for _ in range(n)]
        refs = [actor.describe.remote(self._wanted_device) for actor in self.actors]
        try:
            self.facts = ray.get(refs, timeout=self.options.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise BackendUnavailable(
                f"{n} Ray actor(s) for backend '{self.backend_name}' did not start within "
                f"{self.options.start_timeout_s:g} s; the cluster has {self._ray.cluster_resources()}: ask for fewer "
                "(ray.actors) or smaller (ray.cpus_per_actor) actors"
            ) from None
        except ray.exceptions.RayActorError as exc:
            raise BackendUnavailable(f"a Ray actor for backend '{self.backend_name}' failed to start: {exc}") from None
        for facts in self.facts:
            if facts["unavailable"]:
                raise BackendUnavailable(
                    f"backend '{self.backend_name}' cannot run on the Ray node {facts['node']}: {facts['unavailable']}"
                )
        classes = sorted({f["device_class"] for f in self.facts})
        if len(classes) > 1:
            raise BackendUnavailable(
                f"the Ray actors run on different device classes ({', '.join(classes)}); verdicts and timings are "
                "stored per device class, so one evaluation runs on one: give each class its own cluster"
            )
        self.device, self.device_class = self.facts[0]["device"], classes[0]
        self.busy = [0] * n
        self.slots = [
            actor_slots(f["concurrency"], self.on_gpu, most, self.options.tasks_per_actor) for f in self.facts
        ]
        self.concurrency = [max(1, int(f["concurrency"])) for f in self.facts]  # tasks each actor's pool runs at once
        self.lost = set()
        # each problem's tasks go to one actor while it has a free slot, so that one keeper builds the problem's
        # record (as `ProblemGPUs` places them on one GPU of a local pool): the least busy actor took each task,
        # and on two H200s every actor built every problem's record
        self.problem_actors = ProblemGPUs([str(i) for i in range(n)])

    def _revive(self) -> None:
        """Lost actors that answer again (Ray restarted them) take tasks again."""
        for index in sorted(self.lost):
            try:
                self._ray.get(
                    self.actors[index].describe.remote(self._wanted_device), timeout=self.options.start_timeout_s
                )
            except (self._ray.exceptions.RayActorError, self._ray.exceptions.GetTimeoutError):
                continue
            self.lost.discard(index)

    def _pick(self, failed_on: set[int], placed: int | None = None) -> int | None:
        """The actor the task's problem is placed on if it is live, has a free slot and the task has not died on it.
        When that actor is only full, another one whose pool would idle (fewer tasks than it runs at once) takes it,
        as a local pool's idle GPU takes a task placed on a busy one (`ReadyWorkers`); else the task waits for its
        own, rather than have a second actor build its problem's record beside work of its own.  A task with no
        such actor (lost, or it died there) goes to the least busy live actor with a free slot, preferring one it has
        not died on.  None: the caller waits for a slot."""
        live = [i for i in range(len(self.actors)) if i not in self.lost]
        choices = [i for i in live if i not in failed_on] or live
        free = [i for i in choices if self.busy[i] < self.slots[i]]
        if placed in free:
            return placed
        if placed in choices:  # its own actor is full
            free = [i for i in free if self.busy[i] < self.concurrency[i]]
        return min(free, key=lambda i: (self.busy[i] / self.slots[i], self.busy[i])) if free else None

    LOOKAHEAD = 512
    """Tasks of the queue looked at for one that can go now: a task whose actor is full does not hold back the tasks
    behind it whose actors have room."""

    def _next(self, queue: deque, failed_on: dict[int, set[int]], placed: dict) -> tuple[int, int] | None:
        """(position in `queue`, actor) of the first task that its own actor can take now; else of the first task
        another actor can take (`_pick`); None when no task can go."""
        looked = list(itertools.islice(queue, self.LOOKAHEAD))
        for position, key in enumerate(looked):
            own = int(placed[key])
            if own not in self.lost and own not in failed_on[key] and self.busy[own] < self.slots[own]:
                return position, own
        for position, key in enumerate(looked):
            index = self._pick(failed_on[key], int(placed[key]))
            if index is not None:
                return position, index
        return None

    def in_flight(self) -> dict[int, int]:
        """Tasks in flight per live actor (index into `actors`)."""
        return {i: self.busy[i] for i in range(len(self.actors)) if i not in self.lost}

    # --- the executor protocol -------------------------------------------------------------------------

    def measure_many(self, tasks: Mapping[int, WorkerTask]) -> Iterator[tuple[int, Evidence, float]]:
        if not tasks:
            return
        ray = self._ray
        with self._lock:
            if not self.actors:  # closed before: start again
                self._start()
            self._revive()
        queue = deque(tasks)
        failed_on: dict[int, set[int]] = defaultdict(set)
        flying: dict = {}  # ObjectRef -> (key, actor index, started)
        placed = {key: self.problem_actors.place(reference_key(task)) for key, task in tasks.items()}
        try:
            while queue or flying:
                while queue:
                    with self._lock:
                        found = self._next(queue, failed_on, placed)
                        if found is None:
                            break
                        position, index = found
                        key = queue[position]
                        del queue[position]
                        ref = self.actors[index].measure.remote(tasks[key].model_dump_json(), self.limits_json)
                        self.busy[index] += 1
                    flying[ref] = (key, index, time.perf_counter())
                if not flying:
                    with self._lock:
                        self._revive()
                        all_lost = len(self.lost) == len(self.actors)
                    if all_lost:
                        raise BackendUnavailable(
                            f"every Ray actor of backend '{self.backend_name}' died and none came back; "
                            f"{len(queue)} task(s) were left"
                        )
                    if not any(self.busy[i] < self.slots[i] for i in range(len(self.actors)) if i not in self.lost):
                        time.sleep(0.05)  # every slot taken by another lane's tasks: wait for one to free
                    continue
                (ref,), _ = ray.wait(list(flying), num_returns=1)
                key, index, started = flying.pop(ref)
                with self._lock:
                    self.busy[index] -= 1
                    label = self._label(index)
                    self.busy_s[label] = self.busy_s.get(label, 0.0) + time.perf_counter() - started
                try:
                    payload, failure = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    with self._lock:
                        self.lost.add(index)
                        failed_on[key].add(index)
                        if len(failed_on[key]) < 2:
                            self.retried += 1
                    if len(failed_on[key]) >= 2:
                        yield key, _actor_died(exc), started
                    else:
                        queue.appendleft(key)
                    continue
                if failure is not None:
                    raise PluginError(
                        f"backend '{self.backend_name}' (plugin '{self.plugin}') raised {failure} on a Ray actor"
                    )
                yield key, Evidence.model_validate_json(payload), started
        finally:  # the caller stopped early (an error while judging): what still runs is no longer waited for
            with self._lock:
                for _, index, _ in flying.values():
                    self.busy[index] -= 1
            for actor in placed.values():
                self.problem_actors.done(actor)

    def _label(self, index: int) -> str:
        facts = self.facts[index] if index < len(self.facts) else {}
        # each actor sees its own GPU as cuda:0, so the actor's number is what tells two apart
        return f"actor{index}@{facts.get('node', '?')}/{facts.get('device', '?')}"

    def busy_seconds(self) -> dict[str, float]:
        """Seconds spent with tasks in flight, per actor (`actor0@node/device`): `tritongym serve`'s per-GPU
        busy time.
        Tasks of one actor overlap (its warm workers run at once), so this can exceed the wall time."""
        with self._lock:
            return dict(self.busy_s)

    def measure(self, task: WorkerTask) -> tuple[Evidence, float]:
        for _, evidence, started in self.measure_many({0: task}):
            return evidence, started
        raise AssertionError("measure_many yields one result per task")  # pragma: no cover

    def close(self) -> None:
        """Stop the actors (their backends close their workers first); Ray itself is shut down only when it
        was started here and no other executor of this process still uses it."""
        global _executors, _started_ray
        if not self._connected:
            return
        ray = self._ray
        if self.actors:
            try:
                ray.get([a.close.remote() for a in self.actors], timeout=30)
            except (ray.exceptions.RayError, TimeoutError):
                pass  # an actor already dead or stuck is killed below all the same
            for actor in self.actors:
                ray.kill(actor, no_restart=True)
            self.actors = []
        self._connected = False
        with _connection:
            _executors -= 1
            if _executors == 0 and _started_ray:
                ray.shutdown()
                _started_ray = False


def actor_slots(concurrency: int, on_gpu: bool, most: int, asked: int | None) -> int:
    """Tasks an actor is sent at once: `asked` (`ray.tasks_per_actor`), else twice what a GPU actor's pool runs at once
    (`concurrency`), as a local Evaluator's threads (one per CPU) keep its pool's queue full: a task waiting there has
    its reference's side built meanwhile (`prepare_ahead`) and takes the next free worker at once, not after a round
    trip to the driver.  With one task per worker slot, two actors on two H200s judged 64 candidates at 0.82x the
    local pool's rate on the same GPUs.  A CPU actor runs one task at a time (`most`)."""
    return max(1, min(most, asked or (2 if on_gpu else 1) * concurrency))


def _actor_died(exc: BaseException) -> Evidence:
    """A task whose actor died, and the one it was retried on too: the infrastructure's failure (stage `setup`, the
    backend's error as the sandbox's `InfrastructureFailure` is), never stored as the candidate's verdict.  It
    used to be `WorkerCrashed` at stage `run`, stored as `crashed`: an honest kernel on a node that was lost, or
    under an actor something killed, was recorded as a kernel that crashes."""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Evidence(
        stage="setup",
        error=ErrorInfo(
            kind="InfrastructureFailure",
            message="the Ray actor evaluating this candidate died, and so did the one it was retried on "
            f"(last: {type(exc).__name__}: {first_line}): an actor killed from outside or a node lost, not a "
            "verdict on the candidate; check the cluster (`ray status`) and evaluate it again",
        ),
    )
