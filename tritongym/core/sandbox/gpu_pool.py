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

The verdict inputs that matter are computed here, from frames the worker sent *before* the candidate was
imported (reference outputs, first reference timing); see `gpu_worker`.
"""

from __future__ import annotations

import hashlib
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
)
from tritongym.core.sandbox.sandbox import _worker_env, log_tail
from tritongym.core.worker import frames
from tritongym.core.worker.stages import exit_text
from tritongym.core.worker_task import WorkerTask

_CUDA_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "NVIDIA_DRIVER_CAPABILITIES", "CC", "TRITON_PTXAS_PATH")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class PoolOptions:
    gpus: list[str]  # CUDA device indices as strings, or ["cpu"] (the interpreter, for tests)
    workers_per_gpu: int = 2
    max_tasks: int = 1
    memory_mb: int | None = 16384
    start_timeout_s: float = 180.0
    use_zygote: bool = True  # fork warm workers from a process that has imported torch and Triton once
    extra_env: dict[str, str] = field(default_factory=dict)


def _gpu_env(tmp: str, options: PoolOptions) -> dict[str, str]:
    """The sandbox's stripped environment, plus what the CUDA driver and Triton's compiler may need."""
    env = _worker_env(tmp, options.extra_env)
    env.update({k: os.environ[k] for k in _CUDA_ENV if k in os.environ})
    return env


class GPULock:
    """Per-GPU readers-writer lock, writer first: correctness work of many workers shares the GPU, timing
    has it alone (no other worker's kernels run while a sample is taken), and a waiting timer stops new
    sharers from starting so it waits at most for the ones already running."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.readers = 0
        self.writer = False
        self.waiting_writers = 0

    def acquire(self, exclusive: bool, resume: bool = False) -> None:
        """`resume`: a sharer taking back the hold it gave up while compiling goes ahead of waiting timers
        (they were already waiting for it); it only waits for a timing that started meanwhile."""
        with self.cond:
            if exclusive:
                self.waiting_writers += 1
                self.cond.wait_for(lambda: not self.writer and not self.readers)
                self.waiting_writers -= 1
                self.writer = True
            else:
                self.cond.wait_for(lambda: not self.writer and (resume or not self.waiting_writers))
                self.readers += 1

    def release(self, exclusive: bool) -> None:
        with self.cond:
            if exclusive:
                self.writer = False
            else:
                self.readers -= 1
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
            return self.exits.pop(pid, None)

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

    def __init__(self, gpu: str, options: PoolOptions, zygote: Zygote | None = None) -> None:
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
        if gpu == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        pid = None
        if zygote is not None:
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            request = {"cwd": self.tmp, "env": env, "log": self.log_path, "device": device}
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
                    [sys.executable, "-s", "-m", "tritongym.core.worker.gpu_worker", self.log_path, device],
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


class WorkerPool:
    """Warm workers over the chosen GPUs; `run(task, timeout_s)` is safe to call from many threads."""

    def __init__(self, options: PoolOptions) -> None:
        self.options = options
        self.locks = {gpu: GPULock() for gpu in options.gpus}
        self.ready: queue.Queue[Worker] = queue.Queue()
        self.failures: list[str] = []
        self.closed = False
        self.info: dict = {}
        self._live: set[Worker] = set()
        self._guard = threading.Lock()
        # learnt from the first tasks, so later ones skip the full reference timing and the bandwidth test
        self.bandwidth: dict[str, float] = {}
        self.references: dict[str, dict] = {}
        self._busy_s = {gpu: 0.0 for gpu in options.gpus}  # seconds workers of each GPU spent on tasks
        self.zygote = Zygote(options) if options.use_zygote else None
        for gpu in options.gpus:
            for _ in range(options.workers_per_gpu):
                self._spawn(gpu)

    # --- worker lifecycle ------------------------------------------------------------------------------

    def _spawn(self, gpu: str) -> None:
        threading.Thread(target=self._start_worker, args=(gpu,), daemon=True).start()

    def _start_worker(self, gpu: str) -> None:
        if self.closed:
            return
        worker = Worker(gpu, self.options, self.zygote)
        with self._guard:
            self._live.add(worker)
        deadline = time.monotonic() + self.options.start_timeout_s
        held = False
        while True:  # the warm-up takes the GPU lock shared for its GPU work
            frame = worker.next_frame(deadline - time.monotonic())
            if frame is not None and frame[0] == "SHAR" and not held:
                self.locks[gpu].acquire(exclusive=False)
                held = worker.send("GRNT")
                if not held:
                    self.locks[gpu].release(exclusive=False)
                continue
            if frame is not None and frame[0] == "UNLK" and held:
                self.locks[gpu].release(exclusive=False)
                held = False
                continue
            break
        if held:
            self.locks[gpu].release(exclusive=False)
        if frame is not None and frame[0] == "REDY":
            worker.info = json.loads(frame[1])
            self.info = self.info or worker.info
            if self.closed:
                self._retire(worker, replace=False)
            else:
                self.ready.put(worker)
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

    def _retire(self, worker: Worker, replace: bool = True) -> None:
        with self._guard:
            self._live.discard(worker)
        worker.send("EXIT")
        worker.kill()
        if replace and not self.closed:
            self._spawn(worker.gpu)

    def _take(self) -> Worker:
        waited = 0.0
        while True:
            try:
                return self.ready.get(timeout=1.0)
            except queue.Empty:
                waited += 1.0
            with self._guard:
                alive = bool(self._live)
            if self.failures and not alive:
                raise BackendUnavailable("no GPU worker could start: " + self.failures[-1])
            if waited > self.options.start_timeout_s * 2:
                raise BackendUnavailable(f"no GPU worker became ready in {waited:g} s")

    def busy_seconds(self) -> dict[str, float]:
        """Seconds the workers of each GPU (by its index) have spent on tasks, summed over its workers."""
        with self._guard:
            return dict(self._busy_s)

    def close(self) -> None:
        self.closed = True
        with self._guard:
            workers = list(self._live)
            self._live.clear()
        for worker in workers:
            worker.send("EXIT")
            worker.kill()
        if self.zygote is not None:
            self.zygote.close()

    # --- one task --------------------------------------------------------------------------------------

    def run(self, task: WorkerTask, timeout_s: float) -> Evidence:
        """Evidence for one task; a worker death is retried once on a fresh worker."""
        evidence = Evidence()
        for attempt in (1, 2):
            waited = time.monotonic()
            worker = self._take()
            waited = time.monotonic() - waited
            evidence, died = TaskDriver(self, worker, task, timeout_s).drive()
            evidence.phases["wait_worker"] = round(waited, 4)
            with self._guard:
                self._busy_s[worker.gpu] = self._busy_s.get(worker.gpu, 0.0) + (evidence.worker_s or 0.0)
            worker.tasks += 1
            healthy = not died and evidence.error is None and worker.tasks < self.options.max_tasks
            if healthy:
                self.ready.put(worker)
            else:
                self._retire(worker)
            if not died:
                return evidence
            if attempt == 2 and evidence.error is not None:
                evidence.error.message += " (also on a retry with a fresh worker)"
        return evidence


class TaskDriver:
    """Feeds one task to one worker and turns its frames into `Evidence`, judging outputs here."""

    def __init__(self, pool: WorkerPool, worker: Worker, task: WorkerTask, timeout_s: float) -> None:
        self.pool, self.worker, self.task = pool, worker, task
        self.timeout_s = timeout_s
        self.lock = pool.locks[worker.gpu]
        self.holding: str | None = None
        self.ref_outputs: list | None = None
        self.planned: list[TrialEvidence] = []
        self.reference_before = None
        self.timing: TimingReport | None = None
        self.candidate_seen = False
        self.report: dict | None = None
        self.trials: list[TrialEvidence] = []
        self.timed_trials: list[TrialEvidence] = []
        self.pr: float | None = None
        self.profile: list[ProfileEntry] = []
        self.compare_s = 0.0
        self.lock_wait_s = 0.0
        identity = json.dumps([task.problem_source, task.sizes, task.precision], sort_keys=True, default=str)
        self.reference_key = hashlib.sha256(identity.encode()).hexdigest()

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

    def drive(self) -> tuple[Evidence, bool]:
        """(evidence, whether the worker died without finishing)."""
        started = time.monotonic()
        self._with_known_timings()
        deadline = started + self.timeout_s
        try:
            if not self.worker.send("TASK", self.task.model_dump_json().encode()):
                return self._crash("WorkerCrashed", self.worker.death(), started), True
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.worker.kill()
                    why = f"the candidate did not finish within the time limit of {self.timeout_s:g} s and was killed"
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
                    deadline += waited
                    self.worker.send("GRNT")
                elif kind == "UNLK":
                    self._release()
                elif kind == "DONE":
                    return self._finish(payload, started), False
                else:
                    try:
                        self._handle(kind, payload)
                    except Exception as exc:  # noqa: BLE001 - any malformed payload is the worker's crash
                        self.worker.kill()
                        why = f"the worker sent a malformed {kind} frame ({type(exc).__name__}: {exc})"
                        return self._crash("WorkerCrashed", why, started), False
        finally:
            self._release()

    def _acquire(self, exclusive: bool, resume: bool = False) -> float:
        began = time.monotonic()
        self._release()  # one hold at a time: a second request replaces the first
        self.lock.acquire(exclusive, resume)
        self.holding = "exclusive" if exclusive else "shared"
        waited = time.monotonic() - began
        self.lock_wait_s += waited
        return waited

    def _release(self) -> None:
        if self.holding:
            self.lock.release(self.holding == "exclusive")
            self.holding = None

    def _handle(self, kind: str, payload: bytes) -> None:
        if kind == "REFO" and self.ref_outputs is None:
            sent = frames.tensors_from_bytes(payload)
            self.ref_outputs = list(sent["samples"])
            # which call each trial is (main, shape set, late): sent before the import, so trusted like the samples
            self.planned = [TrialEvidence.model_validate({**p, "outputs": []}) for p in sent["trials"]]
            if len(self.planned) != len(self.ref_outputs):
                raise ValueError("REFO names a different number of trials than it has samples for")
        elif kind == "REFT" and self.reference_before is None and not self.candidate_seen:
            self.timing = TimingReport.model_validate_json(payload)
            self.reference_before = self.timing.reference_before
            if self.task.cached_reference is not None:
                cached = self.timing.reference_cached = TimingStats.model_validate(self.task.cached_reference)
                before = self.reference_before
                if (
                    before is not None
                    and abs(before.median_ms / cached.median_ms - 1) > self.task.timing.reconcile_tolerance
                ):
                    # the Evaluator drops the registry's copies on this same test (`_reconcile_timing`); the
                    # pool's must go too, or the next task would be handed the stale timing again and the
                    # registry would never be refilled
                    self.pool.references.pop(self.reference_key, None)
                    measured = self.timing.compile_reference is not None and not self.task.cached_compile_reference
                    if not measured:  # a compiled timing measured in this task is as fresh as the paired one
                        self.pool.references.pop(self.reference_key + "/compile", None)
            elif self.reference_before is not None:
                self.pool.references.setdefault(self.reference_key, self.reference_before.model_dump())
            if self.task.compile_reference and self.task.cached_compile_reference is not None:
                cached = TimingStats.model_validate(self.task.cached_compile_reference)
                self.timing.compile_reference, self.timing.compile_reference_source = cached, "cached"
            elif self.timing.compile_reference is not None:
                self.timing.compile_reference_source = "measured"
                self.pool.references.setdefault(
                    self.reference_key + "/compile", self.timing.compile_reference.model_dump()
                )
            else:
                self.timing.compile_reference_source = None
            if self.timing.bandwidth_gbps:
                self.pool.bandwidth.setdefault(self.worker.gpu, self.timing.bandwidth_gbps)
        elif kind == "CAND" and not self.candidate_seen:
            self.candidate_seen = True
            began = time.monotonic()
            self.report = frames.tensors_from_bytes(payload)
            self.trials = self._compare_trials(self.report["trials"])
            self.compare_s = time.monotonic() - began
            if self.report.get("error") is None:
                from tritongym.core.verdict import judge_trials

                correct = judge_trials(self.trials).correct and len(self.trials) == len(self.planned)
                self.worker.send("TIME" if correct else "STOP")
        elif kind == "TIMD" and self.candidate_seen:
            data = frames.tensors_from_bytes(payload)
            timing = TimingReport.model_validate_json(data["timing"])
            timing.reference_before = self.reference_before  # the trusted one, sent before the import
            if self.timing is not None:  # the trusted values, sent before the import
                timing.reference_cached = self.timing.reference_cached
                timing.bytes_moved, timing.bandwidth_gbps = self.timing.bytes_moved, self.timing.bandwidth_gbps
                timing.compile_reference = self.timing.compile_reference
                timing.compile_reference_source = self.timing.compile_reference_source
            self.timing = timing
            self.pr = data["pr"]
            self.profile = [ProfileEntry.model_validate(p) for p in json.loads(data["profile"])]
            for trial, n_outputs, outputs in data["timed"]:
                self.timed_trials.append(self._compare(int(trial), outputs, int(n_outputs), launches=[], mutated=[]))
            timing.timed_outputs_checked = len(self.timed_trials)
        else:
            raise ValueError(f"unexpected frame {kind}")

    def _compare(self, trial: int, sent: list, n_outputs: int, launches: list, mutated: list) -> TrialEvidence:
        """The worker's comparisons, re-checked at the secret sample positions against the parent's copy."""
        from tritongym.core.worker.compare import compare_output

        refs = self.ref_outputs[trial]
        comparisons = []
        for i, item in enumerate(sent[: len(refs)]):
            result = OutputComparison.model_validate_json(item["comparison"])
            ref, sample = refs[i], item["sample"]
            claims_match = result.exact_type and result.shape == result.ref_shape and result.dtype == result.ref_dtype
            if sample is not None and ref["values"] is not None:
                check = compare_output(i, sample, ref["values"], self.task.tolerances)
                if check.mismatched > 0 or check.shape != check.ref_shape:
                    result.mismatched = max(result.mismatched, check.mismatched, 1)
                    said = (
                        f"{check.mismatched} of {check.numel} sampled elements differ from the reference's, "
                        "whatever the worker's comparison said"
                    )
                    result.note = f"{result.note}; {said}" if result.note else said  # the worker's note stays
            elif claims_match and result.device == result.ref_device and ref["values"] is not None:
                result.mismatched = max(result.mismatched, 1)
                result.note = "no sample of this output came back to check the comparison against"
            comparisons.append(result)
        planned = self.planned[trial]
        return TrialEvidence(
            seed=planned.seed,
            sizes=planned.sizes,
            late=planned.late,
            input_shapes=planned.input_shapes,
            outputs=comparisons,
            n_outputs=n_outputs,
            ref_n_outputs=len(refs),
            inputs_unchanged=not mutated,
            mutated_inputs=list(mutated),
            launches=[LaunchRecord.model_validate(r) for r in launches],
        )

    def _compare_trials(self, sent: list) -> list[TrialEvidence]:
        if self.ref_outputs is None:
            raise ValueError("candidate outputs arrived before the reference's")
        trials = []
        for t, trial in enumerate(sent[: len(self.ref_outputs)]):
            evidence = self._compare(t, trial["outputs"], trial["n_outputs"], trial["launches"], trial["mutated"])
            evidence.candidate_s = trial.get("candidate_s")
            trials.append(evidence)
        return trials

    def _finish(self, payload: bytes, started: float) -> Evidence:
        evidence = Evidence.model_validate_json(payload)
        evidence.trials = self.trials
        evidence.timed_trials = self.timed_trials
        if self.report is not None:
            evidence.bound_weights = list(self.report["bound"])
            evidence.unbound_weights = list(self.report["unbound"])
            if self.report.get("error") is not None and evidence.error is None:
                evidence.stage = self.report["stage"]
                evidence.error = ErrorInfo.model_validate(self.report["error"])
        if self.timing is not None:
            evidence.timing = self.timing
            if self.timing.candidate is not None:
                evidence.runtime_ms = self.timing.candidate.median_ms
            evidence.pr, evidence.profile = self.pr, self.profile
        evidence.stdout_tail = self.worker.log_tail()
        evidence.worker_s = time.monotonic() - started
        evidence.phases["pool_compare"] = round(self.compare_s, 4)
        evidence.phases["gpu_lock_wait"] = round(self.lock_wait_s, 4)
        return evidence

    def _crash(self, kind: str, message: str, started: float) -> Evidence:
        evidence = Evidence(stage="run", error=ErrorInfo(kind=kind, message=message))
        if self.report is not None:
            evidence.trials = self.trials
        evidence.stdout_tail = self.worker.log_tail()
        evidence.worker_s = time.monotonic() - started
        return evidence
