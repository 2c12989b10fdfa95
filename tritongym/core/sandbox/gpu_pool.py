"""The worker pool of one host (DESIGN.md §3, §8): warm GPU workers, the GPU held only while timing.

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
  reported as `crashed`. A task that outlives its time limit is killed and reported as `timeout`; a worker
  whose resident memory passes `memory_mb` is killed and reported as `crashed` (address-space limits
  break CUDA, so memory is watched instead).

Beside the workers, each GPU has one reference keeper (`worker/keeper.py`): a trusted process with its own
CUDA context that computes the reference's outputs, gold and probes (once per problem, shapes, seeds and
precision, then reused by every candidate of it), times the reference, and judges the outputs each worker
lends it (`TaskDriver`).  No reference output ever exists in a process a candidate runs in.  A keeper that
dies is started again and the task retried; a second failure is the backend's error, never a verdict.
Each task's time limit grows with what its reference's side cost (`TaskDriver.BUDGET_PER_REFERENCE_S`).
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from tritongym.core.errors import BackendUnavailable
from tritongym.core.models import (
    ErrorInfo,
    Evidence,
    LaunchRecord,
    OutputComparison,
    ProfileEntry,
    TimingReport,
    TimingStats,
    TrialEvidence,
    WeightBinding,
)
from tritongym.core.sandbox.problem_gpus import ProblemGPUs, ReadyWorkers, reference_key
from tritongym.core.sandbox.sandbox import _worker_env, log_tail
from tritongym.core.worker import frames
from tritongym.core.worker.stages import exit_text
from tritongym.core.worker.timing_flag import ENV as TIMING_WAITS_ENV
from tritongym.core.worker.timing_flag import TimingFlag
from tritongym.core.worker_task import WorkerTask

_CUDA_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "NVIDIA_DRIVER_CAPABILITIES", "CC", "TRITON_PTXAS_PATH")
_PAGE = os.sysconf("SC_PAGE_SIZE")
CONTEXT_MB = 800.0  # a CUDA context with torch's and Triton's modules loaded, per process (690-794 MiB on an H100)
KEEPER_CACHE_SHARE = 0.25  # of the GPU, for all its keepers' records together (keeper.py's cache_mb)
KEEPER_HOST_CACHE_SHARE = 0.25  # of the host's memory, for all keepers' parked outputs together (keeper.py)
HOST_PARKING_SHARE = 0.5  # of the host's memory, for the parked outputs of the records tasks hold while they run


@dataclass
class PoolOptions:
    gpus: list[str]  # CUDA device indices as strings, or ["cpu"] (the interpreter, for tests)
    workers_per_gpu: int = 2
    # warm workers per GPU beyond `workers_per_gpu`, waiting on standby: a fresh process per candidate means a
    # replacement starts (fork, CUDA context, ~4 s of profiler set-up) after every task, and with spares the next task
    # takes one already warm instead of waiting for it; at most `workers_per_gpu` tasks still run (the triton-cuda
    # backend's default is half of `workers_per_gpu`; the CPU pool of the tests runs none)
    spare_workers_per_gpu: int = 0
    # start workers only as tasks are announced (`WorkerPool.expect`) or wait for one, and never replace a retired
    # one ahead of need: a pool sized to a known, small amount of work (a one-candidate `eval`: its candidate and
    # perhaps its problem's screen) starts what that work needs and nothing after it.  Off: `workers_per_gpu` plus
    # `spare_workers_per_gpu` workers per GPU start at once and each one retired is replaced
    start_on_demand: bool = False
    max_tasks: int = 1
    memory_mb: int | None = 16384
    start_timeout_s: float = 180.0
    use_zygote: bool = True  # fork warm workers from a process that has imported torch and Triton once
    # how a worker sets up CUPTI for the profiler (~4 s per fresh process on an H100, most of a worker's start),
    # always before it takes a task (set up later, CUPTI apparently missed the kernels of modules loaded before it):
    # "unlocked" (a session that launches no kernel, holding nothing: 64 RL candidates 100 s against 118 s, stop 38)
    # or "startup" (a kernel under the start's shared GPU hold, which every timing's drain then waited for)
    profiler_warm_up: str = "unlocked"
    keepers_per_gpu: int | None = None  # reference keepers per GPU (problems spread by key); None: workers // 2
    extra_env: dict[str, str] = field(default_factory=dict)
    # per GPU, MiB held by processes outside the pool when it starts (a trainer beside the judge): left out of the
    # keepers' cache share and of the tasks' budget; `WorkerPool.hold_outside` changes it later
    outside_mb: dict[str, float] = field(default_factory=dict)


def _gpu_env(tmp: str, options: PoolOptions) -> dict[str, str]:
    """The sandbox's stripped environment, plus what the CUDA driver and Triton's compiler may need."""
    env = _worker_env(tmp, options.extra_env)
    env.update({k: os.environ[k] for k in _CUDA_ENV if k in os.environ})
    # torch's host allocations of 2 MiB and up on huge pages: the keeper parks GiBs of reference outputs in
    # host memory, and faulting them in 4 KiB at a time was most of a full-size record's build (parking.py)
    env.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    return env


class GPULock:
    """Per-GPU readers-writer lock, writer first: correctness work of many workers shares the GPU, timing
    has it alone (no other worker's kernels run while a sample is taken), and a waiting timer stops new
    sharers from starting so it waits at most for the ones already running.

    Each timer that stops new sharers costs a *drain*: the GPU runs only the sharers still finishing (113 of
    222 s of an RL batch on an H100, stop 34).  A timer may instead first wait up to its `window_s` with
    sharers still admitted, so that timers arriving meanwhile queue behind it; once any waiting timer's window
    has passed (or the GPU has no sharer) new sharers are held back, and every timer waiting by then runs
    before they resume: one drain for the lot (`TimingOptions.timing_window_s`, off by default until
    measured)."""

    STATES = ("exclusive", "draining", "shared", "idle")

    def __init__(self, flag: TimingFlag | None = None) -> None:
        self.cond = threading.Condition()
        # shared with the workers: set while new sharers are held back, so a sharer gives its hold back at its
        # next call's end instead of at its correctness phase's (`TimingOptions.yield_to_waiting_timings`)
        self.flag = flag
        self.readers = 0
        self.writer = False
        self.waiting_writers = 0
        self.holding_back = False  # new sharers wait: a waiting timer's window has passed
        self._deadlines: list[float] = []  # when each waiting timer's window ends
        # seconds in each state (`seconds()`): how much of the wall the GPU was timing, shared, idle, or
        # "draining" (a timer waiting for sharers to finish while new ones are held back), the lock's own cost
        self._seconds = dict.fromkeys(self.STATES, 0.0)
        self.clock = time.monotonic  # what the accounting reads (a test's own clock)
        self._since = self.clock()
        # exclusive holds granted: each one may cost a drain (every sharer waits), so the count is what a
        # change that folds one timing into another's hold is measured by
        self.exclusive_grants = 0
        # who holds the GPU shared, by kind (`HOLDERS`), and the draining seconds each kind kept a timer waiting
        # (`drained_by`): a drain second is split among the sharers still running, by their numbers.  What the
        # lock's "draining" waits for, measured rather than guessed (issue 40)
        self._sharers: collections.Counter[str] = collections.Counter()
        self._drained_by: dict[str, float] = {}

    def _state(self) -> str:
        if self.writer:
            return "exclusive"
        if self.readers:
            return "draining" if self.holding_back else "shared"
        return "idle"

    HOLDERS = ("candidate", "reference", "screen", "worker_start", "keeper_free")
    """What a shared hold is for: a candidate's import and correctness trials (its worker's hold, and the keeper
    requests made under it), the keeper's build of a problem's reference side (`PREP`), a problem's negative-control
    screen, a fresh worker's start (its CUDA context and timer calibration), the keeper freeing a task's memory."""

    def _account(self) -> None:
        """Called under `cond` before every change of state."""
        now = self.clock()
        elapsed = now - self._since
        state = self._state()
        self._seconds[state] += elapsed
        if state == "draining":
            for holder, count in self._sharers.items():
                self._drained_by[holder] = self._drained_by.get(holder, 0.0) + elapsed * count / self.readers
        self._since = now

    def _hold_back(self, value: bool) -> None:
        """Called under `cond`: new sharers wait (or go on), and the workers' flag says so."""
        self.holding_back = value
        if self.flag is not None:
            self.flag.set(value)

    def seconds(self) -> dict[str, float]:
        with self.cond:
            self._account()
            return dict(self._seconds)

    def drained_by(self) -> dict[str, float]:
        """The draining seconds (`seconds()["draining"]`) split by what the sharers that kept timers waiting held
        the GPU for (`HOLDERS`)."""
        with self.cond:
            self._account()
            return dict(self._drained_by)

    def acquire(self, exclusive: bool, resume: bool = False, window_s: float = 0.0, holder: str = "candidate") -> None:
        """`resume`: a sharer taking back the hold it gave up while compiling goes ahead of waiting timers
        (they were already waiting for it); it only waits for a timing that started meanwhile.  `window_s`: a
        timer's patience before new sharers are held back for it.  `holder`: what a shared hold is for
        (`HOLDERS`), for `drained_by`."""
        with self.cond:
            if exclusive:
                self._account()
                self.waiting_writers += 1
                deadline = time.monotonic() + window_s
                self._deadlines.append(deadline)
                granted = False
                try:
                    while self.writer or self.readers:
                        if not self.holding_back:
                            now = time.monotonic()
                            if not self.readers or min(self._deadlines) <= now:
                                self._account()
                                self._hold_back(True)
                                self.cond.notify_all()
                                continue
                            self.cond.wait(timeout=min(self._deadlines) - now)
                        else:
                            self.cond.wait()
                    granted = True
                finally:
                    self._deadlines.remove(deadline)
                    self._account()
                    self.waiting_writers -= 1
                    if not granted and not self.waiting_writers and not self.writer:
                        self._hold_back(False)  # interrupted: nobody is held back for a timer that left
                        self.cond.notify_all()
                self.writer = True
                self.exclusive_grants += 1
            else:
                self.cond.wait_for(lambda: not self.writer and (resume or not self.holding_back))
                self._account()
                self.readers += 1
                self._sharers[holder] += 1

    def step_aside(self, holder: str = "candidate") -> None:
        """A sharer between two calls gives its hold back and takes it again once the timing that waited for it has
        had the GPU: after the next exclusive grant, or at once if no timer waits.  Not behind every timer queued
        (a plain `acquire` would be: new sharers are held back while any waits), and not ahead of the one waiting
        (a `resume` would be, and that timer might never see the GPU free): each waiting timing costs each sharer
        one call of its own, not its whole correctness phase (`TimingOptions.yield_to_waiting_timings`)."""
        with self.cond:
            self._account()
            granted_before = self.exclusive_grants
            self.readers -= 1
            self._sharers[holder] -= 1
            if not self._sharers[holder]:
                del self._sharers[holder]
            self.cond.notify_all()
            self.cond.wait_for(
                lambda: not self.writer and (self.exclusive_grants > granted_before or not self.waiting_writers)
            )
            self._account()
            self.readers += 1
            self._sharers[holder] += 1

    def release(self, exclusive: bool, holder: str = "candidate") -> None:
        with self.cond:
            self._account()
            if exclusive:
                self.writer = False
                if not self.waiting_writers:  # the last timer held back for: sharers go on
                    self._hold_back(False)
            else:
                self.readers -= 1
                self._sharers[holder] -= 1
                if not self._sharers[holder]:
                    del self._sharers[holder]
            self.cond.notify_all()


class MemoryBudget:
    """Per-GPU admission from measured need (issue 27 item 1): a task's worker reserves what its problem's
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


class Zygote:
    """The pool's handle on its fork server (`worker.zygote`): spawn requests and exit statuses."""

    def __init__(self, options: PoolOptions) -> None:
        self.tmp = tempfile.mkdtemp(prefix="tritongym-zygote-")
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = _gpu_env(self.tmp, options)
        with open(os.path.join(self.tmp, "zygote.log"), "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-m", "tritongym.core.worker.zygote", str(child.fileno())],
                pass_fds=[child.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.tmp,
                env=env,
                start_new_session=True,
            )
        child.close()
        self.cond = threading.Condition()
        self.ready = False
        self.dead = False
        self.pids: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self.gone: set[int] = set()  # children whose exit status was read (`exit_status`)
        self._ids = itertools.count()
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                message = self.sock.recv(1 << 16)
            except OSError:
                message = b""
            with self.cond:
                if not message:
                    self.dead = True
                else:
                    data = json.loads(message)
                    if data.get("ready"):
                        self.ready = True
                    elif "exited" in data:
                        self.exits[data["exited"]] = data["status"]
                    else:
                        self.pids[data["id"]] = data["pid"]
                self.cond.notify_all()
            if not message:
                return

    def spawn(self, fd: int, request: dict, timeout: float) -> int | None:
        """Fork a worker serving on `fd`; its pid, or None when the zygote is not (or no longer) there."""
        with self.cond:
            if not self.cond.wait_for(lambda: self.ready or self.dead, timeout) or self.dead:
                return None
        ident = next(self._ids)
        try:
            with self._send_lock:
                socket.send_fds(self.sock, [json.dumps({**request, "id": ident}).encode()], [fd])
        except OSError:
            return None
        with self.cond:
            self.cond.wait_for(lambda: ident in self.pids or self.dead, timeout)
            return self.pids.pop(ident, None)

    def exit_status(self, pid: int, timeout: float = 5.0) -> int | None:
        with self.cond:
            self.cond.wait_for(lambda: pid in self.exits or self.dead, timeout)
            if pid in self.exits:
                self.gone.add(pid)
            return self.exits.pop(pid, None)

    def wait_gone(self, pid: int, timeout: float) -> bool:
        """Whether the child `pid` has exited (and been reaped) within `timeout`; its exit status stays."""
        with self.cond:
            gone = self.cond.wait_for(lambda: pid in self.exits or pid in self.gone or self.dead, timeout)
            self.gone.discard(pid)  # read once: a later child given the same pid is not taken for gone
            return gone

    def close(self) -> None:
        self.sock.close()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Worker:
    """One worker process (forked by the zygote, or spawned directly) and the thread reading its frames.

    The channel is a raw descriptor number (frames are read and written with `os.read`/`os.write`), and a
    descriptor number is reused by the very next file the process opens once it is closed.  So the number
    is released only after the reader thread has finished with it, and `send` refuses once `kill` began:
    a late `EXIT` to a retired worker once landed in the WAL file of a registry opened meanwhile, which
    then read as an empty database ("no such table: evaluations", issue 15).
    """

    MODULE = "tritongym.core.worker.gpu_worker"
    ROLE = "worker"

    def __init__(
        self, gpu: str, options: PoolOptions, zygote: Zygote | None = None, extra_env: dict[str, str] | None = None
    ) -> None:
        self.gpu = gpu
        self.tasks = 0
        self._channel = threading.Lock()  # held by `send` while writing and by `kill` while closing
        self._closed = False
        self.zygote = zygote
        self.proc: subprocess.Popen | None = None
        self.tmp = tempfile.mkdtemp(prefix="tritongym-gpu-")
        self.log_path = os.path.join(self.tmp, "worker.log")
        env = _gpu_env(self.tmp, options)
        device = "cpu" if gpu == "cpu" else "cuda:0"
        env.update(self.role_env())
        env.update(extra_env or {})  # this worker's own: its GPU's timing flag
        if gpu == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        pid = None
        if zygote is not None:
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            request = {"cwd": self.tmp, "env": env, "log": self.log_path, "device": device, "role": self.ROLE}
            pid = zygote.spawn(theirs.fileno(), request, options.start_timeout_s)
            theirs.close()
            if pid is None:
                mine.close()
            else:
                self.sock = mine
                self.pid, self.read_fd, self.write_fd = pid, mine.fileno(), mine.fileno()
        if pid is None:  # no zygote, or it failed: start the worker from scratch
            self.zygote = None
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-s", "-m", self.MODULE, self.log_path, device],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    cwd=self.tmp,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            self.pid, self.read_fd, self.write_fd = self.proc.pid, self.proc.stdout.fileno(), self.proc.stdin.fileno()
        self.frames: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.info: dict = {}

    def role_env(self) -> dict[str, str]:
        """Environment variables of this kind of process (none for a worker)."""
        return {}

    def _read(self) -> None:
        try:
            while True:
                frame = frames.receive(self.read_fd)
                if frame is None:
                    self.frames.put(("EOF", b"the worker closed its output"))
                    return
                self.frames.put(frame)
        except (frames.FrameError, OSError, ValueError) as exc:
            self.frames.put(("EOF", f"the worker sent a malformed frame ({exc})".encode()))

    def send(self, kind: str, payload: bytes = b"") -> bool:
        """Write one frame; False once the worker is gone or being killed (never a write to a stale number)."""
        with self._channel:
            if self._closed:
                return False
            try:
                frames.send(self.write_fd, kind, payload)
                return True
            except (OSError, ValueError):
                return False

    def next_frame(self, timeout: float):
        try:
            return self.frames.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.pid}/statm") as f:
                return int(f.read().split()[1]) * _PAGE / (1 << 20)
        except (OSError, ValueError, IndexError):
            return 0.0

    def wait_gone(self, timeout: float = 30.0) -> None:
        """Wait (after `kill`) until the process has exited: only then has the driver taken back its GPU memory."""
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        elif self.zygote is not None:
            self.zygote.wait_gone(self.pid, timeout)

    def death(self) -> str:
        """Why the process ended, in words."""
        if self.proc is not None:
            code = self.proc.wait()
        else:
            code = self.zygote.exit_status(self.pid) if self.zygote else None
            if code is None:
                return "the worker died before reporting a result"
        return exit_text("the worker", code)

    def log_tail(self, limit: int = 4000) -> str:
        return log_tail(self.log_path, limit)

    def kill(self) -> None:
        """Kill the process, then release the channel once nothing can read or write it any more.

        Order matters: the kill (and, for a socket, a shutdown) makes a `send` blocked on a full channel fail
        and lets the reader see end-of-file; only after the reader has returned is the descriptor closed.  A
        reader that does not return (something outside the killed group holds the other end) keeps its
        descriptor open: a leaked descriptor is harmless, a reused one is not."""
        for kill in (os.killpg, os.kill):  # a forked worker may not have its own session yet
            try:
                kill(self.pid, signal.SIGKILL)
                break
            except (ProcessLookupError, PermissionError):
                continue
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        else:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if threading.current_thread() is not self.reader:
            self.reader.join(timeout=10)
        with self._channel:
            if not self._closed:
                self._closed = True
                if not self.reader.is_alive():
                    self._close_channel()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _close_channel(self) -> None:
        if self.proc is None:
            self.sock.close()
            return
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:  # a broken pipe while flushing: the worker is gone either way
                pass


class KeeperUnavailable(Exception):
    """The reference keeper died or did not answer: nobody's fault but the infrastructure's (or, when it did
    not answer a request about the reference in time, the problem's: `timed_out`)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class _ReferenceCheck:
    """The reference's timing before a candidate (`RTIM`), as one task of a problem took it for the tasks of the
    same problem that come within `TimingOptions.shared_check_s` (`WorkerPool.reference_checks`): `done` once
    the keeper answered; `timing` its `TimingReport` as JSON (None: it failed, each task times its own)."""

    __slots__ = ("done", "timing", "at")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.timing: str | None = None
        self.at = 0.0


class _SharedHold:
    """One keeper record's share of a budget, held by every running task of the record and given back by the last:
    its host memory (`WorkerPool.host_records`, granted once `ready`) or its device part
    (`WorkerPool.device_records`); the MiB granted and how many tasks hold it."""

    __slots__ = ("granted_mb", "holders", "ready")

    def __init__(self) -> None:
        self.granted_mb = 0.0
        self.holders = 0
        self.ready = threading.Event()


class KeeperRefused(KeeperUnavailable):
    """The keeper answered `FAIL` to a request about a candidate's outputs (`HOUT`, `HDAT`, `JUDG`, `JTIM`): its
    own failure (out of GPU memory beside a large worker, for one), never the candidate's.  It used to read as
    "the worker sent a malformed frame", a crash charged to the candidate; it is retried as a dead keeper is
    (with the GPU alone when it ran out of memory)."""

    def __init__(self, kind: str, message: str) -> None:
        prefix = f"the reference keeper failed on {kind}: "  # how the keeper words it (keeper.serve)
        super().__init__(f"on {kind}: {message.removeprefix(prefix)}")


class KeeperProcess(Worker):
    """The GPU's reference keeper (`worker/keeper.py`): requests answered one at a time, `OKAY` or `FAIL`.

    Calls are serialised by a mutex, and no caller may wait for the GPU lock while holding it (a driver takes
    the lock first, then calls): a keeper busy timing the reference under the exclusive lock therefore never
    waits for a sharer that waits for the keeper."""

    MODULE = "tritongym.core.worker.keeper"
    ROLE = "keeper"

    def __init__(self, gpu: str, options: PoolOptions, zygote: Zygote | None = None, share: float = 1.0) -> None:
        self.share = share  # of the GPU's record cache (KEEPER_CACHE_SHARE): the GPU's keepers split it
        # the share is of the GPU less what processes outside the pool held when it started (`PoolOptions.outside_mb`)
        self.outside_mb = options.outside_mb.get(gpu, 0.0)
        self.host_share = share / max(len(options.gpus), 1)  # of the host's: every GPU's keepers split it
        self.extra_env = options.extra_env
        super().__init__(gpu, options, zygote)
        self.calls = threading.Lock()
        self.dead = ""

    def role_env(self) -> dict[str, str]:
        # the parent's parking threshold (worker/parking.py), when set and not the pool's: a test suite can run
        # under tiny parking
        parking = {k: os.environ[k] for k in ("TRITONGYM_PARK_BYTES",) if k in os.environ and k not in self.extra_env}
        return {
            "TRITONGYM_KEEPER_CACHE_SHARE": f"{KEEPER_CACHE_SHARE * self.share:.4f}",
            "TRITONGYM_KEEPER_OUTSIDE_MB": f"{self.outside_mb:.0f}",
            "TRITONGYM_KEEPER_HOST_CACHE_SHARE": f"{KEEPER_HOST_CACHE_SHARE * self.host_share:.4f}",
            **parking,
        }

    def start(self, timeout: float) -> None:
        """Wait for `REDY`; raises `KeeperUnavailable` with the keeper's words when it does not come."""
        frame = self.next_frame(timeout)
        if frame is not None and frame[0] == "REDY":
            self.info = json.loads(frame[1])
            return
        why = "did not start within the time limit" if frame is None else frame[1].decode("utf-8", "replace")
        self.dead = why
        tail = self.log_tail(1500).strip()
        self.kill()
        raise KeeperUnavailable(f"GPU {self.gpu}: the reference keeper: {why}" + (f"\n{tail}" if tail else ""))

    def call(self, kind: str, payload: bytes, timeout: float) -> tuple[bool, bytes]:
        """(answered OKAY, the answer's payload); raises `KeeperUnavailable` when the keeper is gone."""
        with self.calls:
            if self.dead:
                raise KeeperUnavailable(self.dead)
            if not self.send(kind, payload):
                self.dead = f"the reference keeper is gone ({self.death()})"
                raise KeeperUnavailable(self.dead)
            frame = self.next_frame(timeout)
            if frame is None or frame[0] not in ("OKAY", "FAIL"):
                self.dead = (
                    f"the reference keeper did not answer {kind} within {timeout:g} s"
                    if frame is None
                    else f"the reference keeper stopped ({self.death()})"
                )
                tail = self.log_tail(1500).strip()
                self.kill()
                raise KeeperUnavailable(self.dead + (f"\n{tail}" if tail else ""), timed_out=frame is None)
            return frame[0] == "OKAY", frame[1]


class WorkerPool:
    """Warm workers over the chosen GPUs; `run(task, timeout_s)` is safe to call from many threads."""

    def __init__(self, options: PoolOptions) -> None:
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
        self._waiting = 0
        self.workers_started = 0
        self._next_gpu = itertools.cycle(options.gpus)
        # learnt from the first tasks, so later ones skip the full reference timing and the bandwidth test
        self.bandwidth: dict[str, float] = {}
        self.references: dict[str, dict] = {}
        # per problem (TaskDriver.reference_key), the last reference timing taken before a candidate: the samples
        # of an RL batch reuse it for `shared_check_s` instead of each draining the GPU for its own (stop 35:
        # every task took an exclusive hold for it, most of an RL batch's drains)
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
        self.zygote = Zygote(options) if options.use_zygote else None
        self.keepers_per_gpu = options.keepers_per_gpu or max(1, options.workers_per_gpu // 2)
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
            for _ in range(0 if options.start_on_demand else options.workers_per_gpu + options.spare_workers_per_gpu):
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
            keeper = KeeperProcess(gpu, self.options, self.zygote, share=1.0 / self.keepers_per_gpu)
            keeper.start(self.options.start_timeout_s)
            self.keepers[(gpu, k)] = keeper
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
        from tritongym.core.worker.keeper import record_key

        return self.keeper(gpu, int(record_key(task)[:8], 16) % self.keepers_per_gpu)

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
        worker = Worker(gpu, self.options, self.zygote, env)
        with self._guard:
            self._live.add(worker)
        deadline = time.monotonic() + self.options.start_timeout_s
        held = False
        while True:  # the warm-up takes the GPU lock shared for its GPU work
            frame = worker.next_frame(deadline - time.monotonic())
            if frame is not None and frame[0] == "SHAR" and not held:
                self.locks[gpu].acquire(exclusive=False, holder="worker_start")
                held = worker.send("GRNT")
                if not held:
                    self.locks[gpu].release(exclusive=False, holder="worker_start")
                continue
            if frame is not None and frame[0] == "UNLK" and held:
                self.locks[gpu].release(exclusive=False, holder="worker_start")
                held = False
                continue
            break
        if held:
            self.locks[gpu].release(exclusive=False, holder="worker_start")
        if frame is not None and frame[0] == "REDY":
            worker.info = json.loads(frame[1])
            self.info = self.info or worker.info
            if self.closed:
                self._retire(worker, replace=False)
            else:
                self._offer(worker)
            return
        if frame is None:
            why = f"did not start within {self.options.start_timeout_s:g} s"
        elif frame[0] == "FAIL":
            failure = json.loads(frame[1])
            why = f"{failure.get('kind')}: {failure.get('message')}"
        else:
            why = frame[1].decode("utf-8", "replace")
        tail = worker.log_tail(1500).strip()
        self.failures.append(f"GPU {gpu}: {why}" + (f"\n{tail}" if tail else ""))
        self._retire(worker, replace=False)

    def _offer(self, worker: Worker) -> None:
        """A warm worker: into `ready` if its GPU has a task slot free, else on standby for the next one."""
        with self._guard:
            if self._slotted[worker.gpu] >= self.options.workers_per_gpu:
                self._standby[worker.gpu].append(worker)
                standby = True
            else:
                self._slotted[worker.gpu] += 1
                standby = False
        if standby:
            self.ready.arriving(worker.gpu, 1)
            return
        self.ready.put(worker)

    def _slot_freed(self, gpu: str) -> None:
        """A task on `gpu` ended: its slot goes to a worker on standby, if one is."""
        with self._guard:
            self._slotted[gpu] -= 1
            waiting = self._standby[gpu].pop(0) if self._standby[gpu] else None
        if waiting is not None:
            self.ready.arriving(gpu, -1)
            self._offer(waiting)

    def _retire(self, worker: Worker, replace: bool = True) -> None:
        with self._guard:
            self._live.discard(worker)
        worker.send("EXIT")
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
            worker.send("EXIT")
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
        try:
            return self._run_placed(task, timeout_s, placed)
        finally:
            self.problem_gpus.done(placed)

    def _run_placed(self, task: WorkerTask, timeout_s: float, placed: str) -> Evidence:
        evidence = Evidence()
        alone = False
        for attempt in (1, 2):
            waited = time.monotonic()
            worker = self._take(placed)
            waited = time.monotonic() - waited
            driver = TaskDriver(self, worker, task, timeout_s, alone=alone)
            healthy = False
            try:
                evidence, died = driver.drive()
                evidence.phases["wait_worker"] = round(waited, 4)
                with self._guard:
                    self._busy_s[worker.gpu] = self._busy_s.get(worker.gpu, 0.0) + (evidence.worker_s or 0.0)
                # how long the worker that ran it took to start (before this task; a replacement's, mostly)
                evidence.phases["worker_startup"] = float(worker.info.get("startup_s") or 0.0)
                for part, seconds in (worker.info.get("startup_parts") or {}).items():
                    evidence.phases[f"worker_startup_{part}"] = float(seconds)
                # a screen runs the reference alone, no candidate code: its worker is as fresh after it as before
                # (its memory given back poisoned, `GPUWorker.run`) and takes a candidate next instead of retiring;
                # every problem's screen cost a worker's start (6-8 s on two H200s) while the RL batch's first
                # candidates waited for workers (issue 40)
                worker.tasks += 0 if task.mode == "screen" else 1
                healthy = not died and evidence.error is None and worker.tasks < self.options.max_tasks
            finally:
                self._slot_freed(worker.gpu)  # a spare on standby starts the next task now
                if healthy:
                    self._offer(worker)
                else:
                    self._retire(worker)
                    worker.wait_gone()
                driver.release_worker_memory()
            if attempt == 1 and not alone and self._out_of_memory_beside_others(task, evidence):
                alone = True  # once more with the GPU alone; out of memory alone, the failure stands
                continue
            if alone:  # counted, so that a batch's summed phases say how often its work ran alone
                evidence.phases["ran_alone"] = 1.0
            if not died:
                return evidence
            if attempt == 2 and evidence.error is not None:
                evidence.error.message += " (also on a retry with a fresh worker)"
        return evidence

    def _out_of_memory_beside_others(self, task: WorkerTask, evidence: Evidence) -> bool:
        """Whether a task ran out of GPU memory where the pool's sizing, not the task, may be at fault, so that it
        runs once more with the GPU alone: a screen (its memory is not measured before it runs), the keeper
        judging a candidate's outputs beside a large worker (`KeeperRefused`, on the H100), the reference's side
        (the keeper's build, or the worker's own copy of the reference: stage `problem`; three full-size level-1
        problems started together on the H100 each ran out beside the others' 16-49 GiB), or the candidate's
        worker, sized from its reference (`TaskDriver.worker_need_mb`) and capped there, on a GPU.  Only out of
        memory alone is a problem too large for its GPU."""
        if not _out_of_memory(evidence):
            return False
        if task.mode == "screen" or evidence.error.kind == "KeeperCrashed":
            return True
        return bool(self.memory) and evidence.stage in ("problem", "init", "bind", "run")


KEEPER_MEMORY_PHASES = ("keeper_allocated_mb_", "keeper_reserved_mb_", "keeper_private_pool_mb_")


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


def _out_of_memory(evidence: Evidence) -> bool:
    error = evidence.error
    return error is not None and ("OutOfMemory" in error.kind or "out of memory" in error.message.lower())


class TaskDriver:
    """Feeds one task to one worker and the GPU's keeper, and turns their answers into `Evidence`.

    Order of one evaluation: the keeper builds (or finds) the reference's side (`PREP`, GPU shared) and times
    the reference (`RTIM`, GPU exclusive); then the candidate's worker gets the task, lends its outputs to
    the keeper (`HOUT`/`HAND`, copied by CUDA IPC, or `HDAT` on the CPU) and sends its report (`CAND`), which
    the keeper judges (`JUDG`); if every trial matched, the worker times the candidate and, still holding the GPU
    exclusively, asks for the reference's drift check (`RCHK`, answered `RCHD` once the keeper re-timed the
    reference briefly: one exclusive hold for both, so no second drain of the GPU's sharers); then it lends the
    timed calls' outputs (`TIMD`, judged by `JTIM`).  A worker that did not ask gets the check after `TIMD`,
    under an exclusive hold of its own."""

    BUDGET_PER_REFERENCE_S = 6.0
    """The candidate's time limit grows by this many times what the reference's side took (its trials, probes
    and shape sets): a problem whose reference takes 20 s gets 120 s more than the configured floor."""

    REFERENCE_LIMIT_S = 1800.0
    """The reference's side (outputs, gold, probes, its timing) is the problem's cost, not the candidate's: it
    has this long, and a reference that takes longer is the problem's error, named so."""

    def __init__(self, pool: WorkerPool, worker: Worker, task: WorkerTask, timeout_s: float, alone=False) -> None:
        self.pool, self.worker, self.task = pool, worker, task
        self.alone = alone  # run again after running out of memory: the whole GPU's memory reserved, from the build on
        self.timeout_s = timeout_s
        self.budget_s = timeout_s
        self.lock = pool.locks[worker.gpu]
        self.holding: str | None = None
        # what this task's shared holds are for (`GPULock.HOLDERS`): the reference's side until the candidate's
        # worker gets the task, a screen's controls, then the candidate
        self.holder = "screen" if task.mode == "screen" else "reference"
        self.holding_for = self.holder
        self.task_id = os.urandom(8).hex()
        self.keeper: KeeperProcess | None = None
        self.prep: dict = {}
        self.reference_phases: dict[str, float] = {}  # the keeper's reference timing (and torch.compile's)
        self.planned: list[TrialEvidence] = []
        self.reference_before = None
        self.timing: TimingReport | None = None
        self.candidate_seen = False
        self.told_time = False  # the candidate was judged correct and told TIME
        self.rechecked = False  # the reference's drift check was asked of the keeper (at most once per task)
        self.reference_after: TimingStats | None = None  # its answer, until TIMD
        self.report: dict | None = None
        self.trials: list[TrialEvidence] = []
        self.timed_trials: list[TrialEvidence] = []
        self.judged: dict = {}
        self.pr: float | None = None
        self.profile: list[ProfileEntry] = []
        self.compare_s = 0.0
        self.lock_wait_s = 0.0
        # the keeper's requests: its own work, and the rest (waiting for it to finish others' requests, frames)
        self.keeper_work_s = 0.0
        self.keeper_queue_s = 0.0
        self.phase = "the reference's side"
        self.granted_mb: float | None = None
        self.capped_here = False  # the worker's allocator cap is the pool's (`_admit`), not the configuration's
        self.reference_granted_mb: float | None = None  # the keeper's build's reservation, until it is done
        self.host_record: str | None = None  # the record whose host reservation this task holds, until it ends
        # the keeper's GPU memory for this task, counted until its FREE (`_count_keeper_memory`); None: not counted
        self.keeper_mb: float | None = None
        self.device_record: tuple | None = None  # (gpu, record key) whose device memory this task counts with others
        self.answer_host_mb = 0.0  # host memory of this task's own `precomputed` answer, parked by the keeper
        self.memory_wait_s = 0.0
        self.reference_key = reference_key(task)

    def _with_known_timings(self) -> None:
        updates: dict = {}
        if self.task.bandwidth_gbps is None and self.worker.gpu in self.pool.bandwidth:
            updates["bandwidth_gbps"] = self.pool.bandwidth[self.worker.gpu]
        if self.task.cached_reference is None and self.reference_key in self.pool.references:
            updates["cached_reference"] = self.pool.references[self.reference_key]
        compiled_key = self.reference_key + "/compile"
        if self.task.compile_reference and self.task.cached_compile_reference is None:
            if compiled_key in self.pool.references:
                updates["cached_compile_reference"] = self.pool.references[compiled_key]
        if updates:
            self.task = self.task.model_copy(update=updates)

    # --- the keeper ----------------------------------------------------------------------------------------

    def _ask(self, kind: str, data, exclusive: bool | None = False) -> tuple[bool, dict]:
        """One keeper request under the GPU lock it needs (`exclusive`: None = whatever the worker holds now,
        shared if nothing); tensors travel as `torch.save` bytes, everything else as JSON."""
        tensors = kind in ("HDAT", "JUDG", "JTIM")
        payload = frames.tensors_to_bytes(data) if tensors else json.dumps(data).encode()
        had = self.holding
        if exclusive is not None or had is None:
            self._acquire(exclusive=bool(exclusive))
        limit = self.REFERENCE_LIMIT_S if kind in ("PREP", "RTIM") else max(self.deadline - time.monotonic(), 1.0)
        began = time.monotonic()
        try:
            ok, answer = self.keeper.call(kind, payload, limit)
        except KeeperUnavailable as exc:
            if not (exc.timed_out and kind in ("PREP", "RTIM")):
                raise
            what = "build its outputs, gold and probes" if kind == "PREP" else "be timed"
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
        return ok, answer

    def drive(self) -> tuple[Evidence, bool]:
        """(evidence, whether the worker or the keeper died without finishing)."""
        started = time.monotonic()
        self._with_known_timings()
        self.deadline = started + self.timeout_s
        try:
            self.keeper = self.pool.keeper_for(self.worker.gpu, self.task)
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
                if failed is not None:
                    return self._problem(failed, started), False
                if not self.alone:
                    self._admit()
                self._count_keeper_memory()
                self._widen_alone_cap()
                self.phase = "import and correctness trials"
                self.holder = "candidate"
            if not self.worker.send("TASK", self.task.model_dump_json().encode()):
                return self._crash("WorkerCrashed", self.worker.death(), started), True
            while True:
                remaining = self.deadline - time.monotonic()
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
                        + ") and was killed"
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
                if kind == "EOF":
                    self.worker.kill()
                    return self._crash("WorkerCrashed", self.worker.death(), started), True
                if kind in ("LOCK", "SHAR", "RSHR"):
                    waited = self._acquire(exclusive=kind == "LOCK", resume=kind == "RSHR")
                    self.deadline += waited
                    self.worker.send("GRNT")
                elif kind == "UNLK":
                    self._release()
                elif kind == "YILD" and self.holding == "shared":
                    began = time.monotonic()
                    self.lock.step_aside(self.holding_for)
                    waited = time.monotonic() - began
                    self.lock_wait_s += waited
                    self.deadline += waited
                    self.worker.send("GRNT")
                elif kind == "DONE":
                    return self._finish(payload, started), False
                else:
                    try:
                        self._handle(kind, payload)
                    except KeeperUnavailable:
                        raise
                    except Exception as exc:  # noqa: BLE001 - any malformed payload is the worker's crash
                        self.worker.kill()
                        why = f"the worker sent a malformed {kind} frame ({type(exc).__name__}: {exc})"
                        return self._crash("WorkerCrashed", why, started), False
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

    def _free_in_keeper(self, keeper: KeeperProcess, keeper_mb: float | None = None, device_record=None) -> None:
        """The keeper's `FREE` for this task, under a shared hold like any GPU work: the keeper poisons what it
        frees (`scrub.py`), GiBs of fills for a large record, and sent with no hold those fills ran beside other
        tasks' timings (two honest level-2 references 2.2x slower in their drift checks, H100, stop 35).  The
        keeper's memory for the task (`_count_keeper_memory`) is counted until the answer comes."""
        self.lock.acquire(exclusive=False, holder="keeper_free")
        try:
            keeper.call("FREE", json.dumps({"task_id": self.task_id}).encode(), 60.0)
        except KeeperUnavailable:
            pass
        finally:
            self.lock.release(exclusive=False, holder="keeper_free")
            self._uncount_keeper_memory(keeper_mb, device_record)

    def _count_keeper_memory(self) -> None:
        """Count what the keeper holds for this task on the GPU, from `PREP` to its `FREE`: the record's device
        part (a large one is over the keepers' cache share, so that share does not stand for it) and one call's
        handouts.  Uncounted, the next large problem was admitted beside them and ran out of memory: in the
        KernelBench sweep on an H100 (stop 36), with one problem at a time, a screen found 2 GiB free after a
        loss problem's 40 GiB record, and a keeper held 49 GiB beside a task run "alone".  Taken without
        waiting (the task's own worker is admitted already); released once the keeper has freed it."""
        from tritongym.core.worker.keeper import record_key

        budget = self.pool.memory.get(self.worker.gpu)
        if budget is None:
            return
        self.keeper_mb = budget.take(float(self.prep.get("lent_mb") or 0.0))
        # the record once for all the tasks that hold it (an RL batch's samples share one), like its host memory
        key = (self.worker.gpu, record_key(self.task))
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
        budget = self.pool.memory.get(self.worker.gpu)
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
            self.pool.memory[self.worker.gpu].release(self.granted_mb)
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
    runs (`scrub.poison_free_memory`: a copy of each, briefly), fragmentation.  Without it the smallest
    problems' workers were capped at 1 GiB, ran out of memory on the H100 (stop 35) and were each run again
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
        budget = self.pool.memory.get(self.worker.gpu)
        if budget is None:
            return
        peak = self.pool.peaks.get(self.reference_key, self.task.reference_peak_mb)  # this pool's, or the registry's
        parked = self.pool.host_peaks.get(self.reference_key) if parking else 0.0
        if peak is None or (parked is None and self.pool.host_memory is not None):
            payload = json.dumps({"task": self.task.model_dump(mode="json")}).encode()
            ok, answer = self.keeper.call("SIZE", payload, 120.0)
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
        self.reference_granted_mb = budget.reserve(max(1024.0, peak or 0.0))  # contexts: the budget's already
        waited = time.monotonic() - began
        self.deadline += waited
        self.memory_wait_s += waited

    def _hold_host(self, parked_mb: float) -> None:
        """Hold the host memory of this task's record: reserved by the first task of the record, shared by the
        ones that come while it is held (an RL batch of a full-size problem: one record of 54-66 GiB parked for
        all its samples, where each task reserving its own copy ran them one at a time)."""
        from tritongym.core.worker.keeper import record_key

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
        trial, shape set, late trial and probe (an over-estimate: mode probes share their trial's copy)."""
        outputs, park = size.get("outputs_mb"), size.get("park_mb")
        if outputs is None or park is None or outputs < park:
            return 0.0
        copies = len(self.task.seeds) + len(self.task.extra_sizes) + 1 + len(self.task.probes or [])
        return copies * float(outputs)

    def _release_reference(self) -> None:
        """The build's reservation back (the keeper's record stays within its cache share); its peak kept."""
        if self.reference_granted_mb is not None:
            self.pool.memory[self.worker.gpu].release(self.reference_granted_mb)
            self.reference_granted_mb = None
        if self.prep.get("peak_mb") is not None:
            self.pool.peaks[self.reference_key] = float(self.prep["peak_mb"])
        if self.prep.get("record_host_mb") is not None:
            self.pool.host_peaks[self.reference_key] = float(self.prep["record_host_mb"])

    def _admit(self, alone: bool = False) -> None:
        """Reserve the worker's measured need on its GPU (waiting is not the candidate's time), and cap its
        caching allocator there unless the configuration set a cap; `alone`: the whole GPU."""
        budget = self.pool.memory.get(self.worker.gpu)
        if budget is None:
            return
        began = time.monotonic()
        self.granted_mb = budget.reserve(budget.capacity_mb if alone else self.worker_need_mb())
        waited = time.monotonic() - began
        self.deadline += waited
        self.memory_wait_s += waited
        if self.task.gpu_memory_fraction is None:
            self.capped_here = True
            fraction = min(1.0, self.granted_mb / self.pool.total_mb[self.worker.gpu])
            self.task = self.task.model_copy(update={"gpu_memory_fraction": round(fraction, 4)})

    def _widen_alone_cap(self) -> None:
        """A worker that has the GPU alone (run again alone, or a need over the budget) is capped at what the GPU
        has beside every process's context and what the keeper holds for this task, not at the budget: the budget
        also leaves out the keepers' cache share, and capped there a full-size level-1 average pooling (16 GiB
        input) ran out at 46 GiB with 36 GiB of the GPU free (H100, stop 36).  Known only after `PREP`: the
        keeper's record and handouts for the task."""
        budget = self.pool.memory.get(self.worker.gpu)
        if budget is None or not self.capped_here or self.granted_mb is None:
            return
        if not (self.alone or self.granted_mb >= budget.capacity_mb):
            return
        total = self.pool.total_mb[self.worker.gpu]
        workers = self.pool.options.workers_per_gpu + self.pool.options.spare_workers_per_gpu
        keeper = float(self.prep.get("record_device_mb") or 0.0) + float(self.prep.get("lent_mb") or 0.0)
        outside = self.pool.outside_mb.get(self.worker.gpu, 0.0)
        room = alone_room_mb(total, self.pool.keepers_per_gpu, workers, outside) - keeper
        fraction = min(1.0, max(room, self.granted_mb) / total)
        self.task = self.task.model_copy(update={"gpu_memory_fraction": round(fraction, 4)})

    def _prepare(self) -> dict | None:
        """The keeper's `PREP` and `RTIM`; the keeper's `FAIL` answer (the problem's error), or None."""
        ok, prep = self._ask("PREP", {"task": self.task.model_dump(mode="json"), "task_id": self.task_id})
        if not ok:
            return prep
        self.prep = prep
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
        if self.worker.gpu != "cpu" and self.task.timing.enabled:
            self.phase = "timing the reference"
            if not self._shared_reference_check():
                failed = self._time_reference()
                if failed is not None:
                    return failed
        self.deadline = time.monotonic() + self.budget_s  # the candidate's budget starts when its work does
        return None

    def _time_reference(self) -> dict | None:
        """The keeper's `RTIM` under an exclusive hold of its own; the keeper's `FAIL` answer, or None.  Under the
        lock, look again: a task of the same problem that started beside this one may have timed the reference
        while this one waited, and then a short check does instead of a full timing."""
        check = self._claim_reference_check()
        self._acquire(exclusive=True)
        try:
            self._with_known_timings()
            known = {
                "task_id": self.task_id,
                "known": self.task.cached_reference is not None,
                "compile_known": self.task.cached_compile_reference is not None,
            }
            ok, answer = self._ask("RTIM", known, exclusive=None)
            if not ok:
                return answer
            self._reference_timing(TimingReport.model_validate_json(answer["timing"]))
            self.reference_phases = {k: float(v) for k, v in answer.get("phases", {}).items()}
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
        self._reference_timing(timing)
        self.reference_phases = {"reference_check_shared": 1.0}
        return True

    def _reference_timing(self, timing: TimingReport) -> None:
        """The keeper's reference timing, reconciled with the one the pool or the registry already knew."""
        self.timing = timing
        self.reference_before = timing.reference_before
        if self.task.cached_reference is not None:
            cached = timing.reference_cached = TimingStats.model_validate(self.task.cached_reference)
            before = self.reference_before
            if (
                before is not None
                and abs(before.median_ms / cached.median_ms - 1) > self.task.timing.reconcile_tolerance
            ):
                # the Evaluator drops the registry's copies on this same test (`_reconcile_timing`); the
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
            self.pool.bandwidth.setdefault(self.worker.gpu, timing.bandwidth_gbps)

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

    def _handle(self, kind: str, payload: bytes) -> None:
        if kind == "HOUT":
            asked = json.loads(payload)["outputs"]
            ok, answer = self._ask("HOUT", {"task_id": self.task_id, "outputs": asked}, exclusive=None)
            if not ok:
                raise KeeperRefused("HOUT", answer["error"]["message"])
            self.worker.send("HAND", json.dumps(answer).encode())
        elif kind == "HDAT":
            data = frames.tensors_from_bytes(payload)
            ok, answer = self._ask(
                "HDAT", {"task_id": self.task_id, "ids": data["ids"], "values": data["values"]}, None
            )
            if not ok:
                raise KeeperRefused("HDAT", answer["error"]["message"])
            self.worker.send("HDOK")
        elif kind == "CAND" and not self.candidate_seen:
            self.candidate_seen = True
            began = time.monotonic()
            self.report = frames.tensors_from_bytes(payload)
            if len(self.report["trials"]) > len(self.planned):
                raise ValueError("CAND reports more trials than were planned")
            ok, judged = self._ask("JUDG", {"task_id": self.task_id, "report": self.report}, exclusive=None)
            if not ok:
                raise KeeperRefused("JUDG", judged["error"]["message"])
            self.judged = judged
            self.trials = [
                self._trial(t, sent, comparisons)
                for t, (sent, comparisons) in enumerate(zip(self.report["trials"], judged["trials"]))
            ]
            self.compare_s = time.monotonic() - began
            if self.report.get("error") is None:
                from tritongym.core.verdict import judge_trials

                correct = judge_trials(self.trials).correct and len(self.trials) == len(self.planned)
                if correct:
                    self.phase = "timing"
                    self.told_time = True
                self.worker.send("TIME" if correct else "STOP")
        elif kind == "RCHK":
            self._recheck_in_hold(payload)
        elif kind == "TIMD" and self.candidate_seen:
            data = frames.tensors_from_bytes(payload)
            timing = TimingReport.model_validate_json(data["timing"])
            if self.timing is not None:  # the keeper's, measured before the candidate existed
                timing.reference_before = self.reference_before
                timing.reference_cached = self.timing.reference_cached
                timing.bytes_moved, timing.bandwidth_gbps = self.timing.bytes_moved, self.timing.bandwidth_gbps
                timing.compile_reference = self.timing.compile_reference
                timing.compile_reference_source = self.timing.compile_reference_source
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
            ok, judged = self._ask("JTIM", {"task_id": self.task_id, "timed": timed}, exclusive=None)
            if not ok:
                raise KeeperRefused("JTIM", judged["error"]["message"])
            for trial, n_outputs, comparisons in judged["timed"]:
                sent = {"n_outputs": n_outputs, "launches": [], "mutated": []}
                self.timed_trials.append(self._trial(trial, sent, comparisons))
            timing.timed_outputs_checked = len(self.timed_trials)
            if not self.rechecked:  # a worker that did not ask inside its timing hold: a hold of the check's own
                self.rechecked = True
                self.phase = "the reference's drift check"
                self.reference_after = self._recheck(exclusive=True)
            timing.reference_after = self.reference_after
            self.timing = timing
        else:
            raise ValueError(f"unexpected frame {kind}")

    def _recheck_in_hold(self, payload: bytes) -> None:
        """The worker's `RCHK`: the reference's drift check inside the worker's exclusive timing hold, answered
        `RCHD` (empty: the worker never sees the reference's numbers).  Only a correct candidate told `TIME` may
        ask, once, while it holds the GPU exclusively; anything else is a malformed frame (the worker is killed)."""
        if payload:
            raise ValueError("RCHK carries no payload")
        if not self.told_time:
            raise ValueError("RCHK before the candidate was told TIME")
        if self.rechecked:
            raise ValueError("RCHK after the reference's drift check was already done for this task")
        if self.holding != "exclusive":
            raise ValueError("RCHK without holding the GPU exclusively (it belongs inside the timing hold)")
        self.rechecked = True
        self.phase = "the reference's drift check"
        self.reference_after = self._recheck(exclusive=None)  # the worker's exclusive hold
        self.phase = "timing"
        self.worker.send("RCHD")

    RECHECK_ABOVE = 1.1
    """A drift check that finds the reference this much slower than before the candidate is taken once more,
    settled (`Keeper.check_reference`'s `settle`), and the faster of the two kept: the H100 sweep accused three
    honest kernels (2.5-3.5x) while the GPU's memory was nearly full; work a candidate leaves running is still
    running for the second look."""

    def _recheck(self, exclusive: bool | None) -> TimingStats | None:
        """The keeper's `RCHK` (`Keeper.check_reference`): the reference re-timed briefly; None if it failed."""
        ok, after = self._ask("RCHK", {"task_id": self.task_id}, exclusive=exclusive)
        if not ok:
            return None
        stats = TimingStats.model_validate_json(after["reference_after"])
        before = self.reference_before
        if before is not None and before.median_ms > 0 and stats.median_ms > self.RECHECK_ABOVE * before.median_ms:
            ok, again = self._ask("RCHK", {"task_id": self.task_id, "settle": True}, exclusive=exclusive)
            if ok:
                second = TimingStats.model_validate_json(again["reference_after"])
                stats = min(stats, second, key=lambda s: s.median_ms)
        return stats

    def _trial(self, trial: int, sent: dict, comparisons: list) -> TrialEvidence:
        """One trial's evidence: the keeper's comparisons (trusted), the worker's account of the call."""
        planned = self.planned[trial]
        mutated = [int(i) for i in sent.get("mutated", [])]
        return TrialEvidence(
            seed=planned.seed,
            sizes=planned.sizes,
            late=planned.late,
            input_shapes=planned.input_shapes,
            distribution=planned.distribution,
            outputs=[OutputComparison.model_validate(c) for c in comparisons],
            n_outputs=int(sent["n_outputs"]),
            ref_n_outputs=self._ref_count(trial),
            inputs_unchanged=not mutated,
            mutated_inputs=mutated,
            launches=[LaunchRecord.model_validate(r) for r in sent.get("launches", [])],
            candidate_s=sent.get("candidate_s"),
        )

    def _ref_count(self, trial: int) -> int:
        counts = self.prep.get("output_counts") or []
        return int(counts[trial]) if trial < len(counts) else 0

    def _finish(self, payload: bytes, started: float) -> Evidence:
        evidence = Evidence.model_validate_json(payload)
        evidence.trials = self.trials
        evidence.timed_trials = self.timed_trials
        evidence.reference_torch_ops = self.prep.get("reference_torch_ops") or {}
        evidence.reference_torch_work = self.prep.get("reference_torch_work") or {}
        if self.judged:
            from tritongym.core.models import ProbeCall

            evidence.probes = [ProbeCall.model_validate(p) for p in self.judged["probes"]]
            evidence.prior_answers = list(self.judged["prior_answers"])
        if self.report is not None:
            evidence.weights = WeightBinding.model_validate(self.report.get("weights") or {})
            if self.report.get("error") is not None and evidence.error is None:
                evidence.stage = self.report["stage"]
                evidence.error = ErrorInfo.model_validate(self.report["error"])
        if self.timing is not None:
            evidence.timing = self.timing
            if self.timing.candidate is not None:
                evidence.runtime_ms = self.timing.candidate.median_ms
            evidence.pr, evidence.profile = self.pr, self.profile
        self._phases(evidence)
        evidence.stdout_tail = self.worker.log_tail()
        evidence.worker_s = time.monotonic() - started
        evidence.phases["pool_compare"] = round(self.compare_s, 4)
        evidence.phases["gpu_lock_wait"] = round(self.lock_wait_s, 4)
        evidence.phases["gpu_memory_wait"] = round(self.memory_wait_s, 4)
        evidence.phases["keeper_work"] = round(self.keeper_work_s, 4)
        evidence.phases["keeper_queue"] = round(self.keeper_queue_s, 4)
        return evidence

    def _phases(self, evidence: Evidence) -> None:
        """What the keeper reported about the reference's side."""
        if self.prep:
            evidence.phases["reference"] = 0.0 if self.prep.get("cached") else float(self.prep.get("compute_s", 0.0))
            evidence.phases["reference_cached"] = 1.0 if self.prep.get("cached") else 0.0
            evidence.phases["reference_host_mb"] = float(self.prep.get("record_host_mb") or 0.0)  # parked outputs
            evidence.reference_peak_mb = self.prep.get("peak_mb")
            if evidence.reference_peak_mb is not None:
                evidence.phases["reference_peak_mb"] = float(evidence.reference_peak_mb)
            for key, mb in self.prep.items():
                if key.startswith(KEEPER_MEMORY_PHASES):  # the keeper's own memory
                    evidence.phases[key] = float(mb)
        evidence.phases.update(self.reference_phases)

    def _problem(self, failed: dict, started: float) -> Evidence:
        """The reference's side failed in the keeper: the problem's error (or the keeper's), not the candidate's."""
        stage = failed.get("stage") if failed.get("stage") in ("problem", "setup") else "problem"
        evidence = Evidence(stage=stage, error=ErrorInfo.model_validate(failed["error"]))
        evidence.worker_s = time.monotonic() - started
        self._phases(evidence)
        return evidence

    def _crash(self, kind: str, message: str, started: float) -> Evidence:
        evidence = Evidence(stage="run", error=ErrorInfo(kind=kind, message=message))
        if self.report is not None:
            evidence.trials = self.trials
        self._phases(evidence)
        evidence.stdout_tail = self.worker.log_tail()
        evidence.worker_s = time.monotonic() - started
        return evidence
