"""The pool's processes: the zygote that forks them, a candidate's worker, a GPU's reference keeper.

Process management only: starting, reading frames, sending, killing.  What a task does with them is
`task_driver.py`'s, which worker gets which task `gpu_pool.py`'s.

Every process here is this process's (`owned.py`): recorded with its pid and start and this process's, from its
start (a forked worker's pid comes back in the zygote's answer) until it is killed here, and holding this
process's lifeline (`worker/lifeline.py`: the zygote passed it on start, its forks inheriting it), so that a pool
whose process is killed with `kill -9` (a service, an `eval`, a Ray actor) leaves nothing running, and a clean-up
in another process touches none of them while this one lives.  Their folders are made by `owned.make_folder`
(named after this process and recorded), so the next tritongym process to start removes those a killed pool left.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

from tritongym.core import timeline
from tritongym.core.sandbox import owned
from tritongym.core.sandbox.fork_server import Zygote, gpu_env
from tritongym.core.sandbox.keeper_turns import KeeperTurns
from tritongym.core.sandbox.pool_options import KEEPER_CACHE_SHARE, KEEPER_HOST_CACHE_SHARE, PoolOptions
from tritongym.core.sandbox.sandbox import log_tail
from tritongym.core.worker import cuda_schedule, frames
from tritongym.core.worker.protocol import KeeperAnswer, KeeperRequest, Lifecycle
from tritongym.core.worker.stages import exit_text

END_OF_STREAM = "EOF"  # not a frame: what a process's reader thread queues once its channel ends or breaks
CLOSED = b"the worker closed its output"  # END_OF_STREAM's payload when the channel ended (not a malformed frame)
_PAGE = os.sysconf("SC_PAGE_SIZE")


class Worker:
    """One worker process (forked by the zygote, or spawned directly) and the thread reading its frames.

    The channel is a raw descriptor number (frames are read and written with `os.read`/`os.write`), and a
    descriptor number is reused by the very next file the process opens once it is closed.  So the number
    is released only after the reader thread has finished with it, and `send` refuses once `kill` began:
    a late `EXIT` to a retired worker once landed in the WAL file of a registry opened meanwhile, which
    then read as an empty database ("no such table: evaluations").
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
        self.tmp = owned.make_folder(self.ROLE)
        self.log_path = os.path.join(self.tmp, "worker.log")
        env = process_env(gpu, options, self.tmp, {**self.role_env(), **(extra_env or {})})
        device = "cpu" if gpu == "cpu" else "cuda:0"
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
                    pass_fds=(owned.lifeline_fd(),),
                )
            self.pid, self.read_fd, self.write_fd = self.proc.pid, self.proc.stdout.fileno(), self.proc.stdin.fileno()
        owned.started(self.pid, self.ROLE)
        self._code: int | None = None  # its exit status, once read (`ended`)
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
                    self.frames.put((END_OF_STREAM, CLOSED))
                    return
                self.frames.put(frame)
        except (frames.FrameError, OSError, ValueError) as exc:
            self.frames.put((END_OF_STREAM, f"the worker sent a malformed frame ({exc})".encode()))

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

    def ended(self, timeout: float | None) -> int | None:
        """The process's exit status (a `Popen.returncode`) once it has ended, waiting up to `timeout` for it to end
        by itself (None: forever, for a spawned worker); None while it runs, or where a dead zygote cannot say.
        Read once and kept: the zygote reports a child's status once.

        A task's driver asks this before it kills a worker whose channel ended: killed first, every worker that
        died of its own would read as killed by SIGKILL, a death from outside (`stages.killed_from_outside`)."""
        if self._code is None:
            if self.proc is not None:
                try:
                    self._code = self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    pass
            elif self.zygote is not None:
                self._code = self.zygote.exit_status(self.pid, 5.0 if timeout is None else timeout)
        return self._code

    def death(self) -> str:
        """Why the process ended, in words."""
        code = self.ended(None)
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
        owned.ended(self.pid)
        owned.remove_folder(self.tmp)

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


class KeeperRefused(KeeperUnavailable):
    """The keeper answered `DENY` to a request about a candidate's outputs (`LEND`, `FILL`, `CMPR`, `CMPT`): its
    own failure (out of GPU memory beside a large worker, for one), never the candidate's.  It used to read as
    "the worker sent a malformed frame", a crash charged to the candidate; it is retried as a dead keeper is
    (with the GPU alone when it ran out of memory)."""

    def __init__(self, kind: str, message: str) -> None:
        prefix = f"the reference keeper failed on {kind}: "  # how the keeper words it (keeper.serve)
        super().__init__(f"on {kind}: {message.removeprefix(prefix)}")


def process_env(gpu: str, options: PoolOptions, tmp: str, own: dict[str, str]) -> dict[str, str]:
    """A pool process's environment: the sandbox's stripped one (`fork_server.gpu_env`), its role's and its own
    variables (`own`: a worker's timing flag, a keeper's cache shares), and its device: the interpreter on the
    CPU, else its GPU alone, with `PoolOptions.device_connections` hardware queues (read when its context is made)."""
    env = gpu_env(tmp, options.extra_env)
    env.update(own)
    if gpu == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if options.device_connections:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = str(options.device_connections)
    if options.device_schedule != "auto":
        env[cuda_schedule.ENV] = options.device_schedule
    return env


class KeeperProcess(Worker):
    """The GPU's reference keeper (`keeper/keeper.py`): requests answered one at a time, `OKAY` or `DENY`.

    Calls are serialised by a mutex, and no caller may wait for the GPU lock while holding it (a driver takes
    the lock first, then calls): a keeper busy timing the reference under the exclusive lock therefore never
    waits for a sharer that waits for the keeper."""

    MODULE = "tritongym.core.keeper.keeper"
    ROLE = "keeper"

    def __init__(self, gpu: str, options: PoolOptions, zygote: Zygote | None = None, share: float = 1.0) -> None:
        self.share = share  # of the GPU's record cache (KEEPER_CACHE_SHARE): the GPU's keepers split it
        # the share is of the GPU less what processes outside the pool held when it started (`PoolOptions.outside_mb`)
        self.outside_mb = options.outside_mb.get(gpu, 0.0)
        self.host_share = share / max(len(options.gpus), 1)  # of the host's: every GPU's keepers split it
        self.extra_env = options.extra_env
        super().__init__(gpu, options, zygote)
        self.calls = KeeperTurns()  # requests made under an exclusive GPU hold are served first
        # per calling thread, how long its last `call` waited for another task's request to this keeper to end:
        # the part of a task's `keeper_queue` that is this keeper's queue, not the relay through the pool
        self._waited = threading.local()
        self.dead = ""

    def role_env(self) -> dict[str, str]:
        # the parent's parking threshold (worker/parking.py), when set and not the pool's: a test suite can run
        # under tiny parking
        parking = {k: os.environ[k] for k in ("TRITONGYM_PARK_BYTES",) if k in os.environ and k not in self.extra_env}
        # the keeper runs no candidate code, so it may mark the timeline (`timeline.py`: trusted processes only);
        # without it the screen's parts (`keeper/screen.py`) never reached `eval_latency.py`'s timeline
        marks = {timeline.ENV: os.environ[timeline.ENV]} if timeline.ENV in os.environ else {}
        return {
            "TRITONGYM_KEEPER_CACHE_SHARE": f"{KEEPER_CACHE_SHARE * self.share:.4f}",
            "TRITONGYM_KEEPER_OUTSIDE_MB": f"{self.outside_mb:.0f}",
            "TRITONGYM_KEEPER_HOST_CACHE_SHARE": f"{KEEPER_HOST_CACHE_SHARE * self.host_share:.4f}",
            **parking,
            **marks,
        }

    def start(self, timeout: float) -> None:
        """Wait for `REDY` (`Lifecycle.READY`); raises `KeeperUnavailable` with the keeper's words when it does not
        come."""
        frame = self.next_frame(timeout)
        if frame is not None and frame[0] == Lifecycle.READY:
            self.info = json.loads(frame[1])
            return
        why = "did not start within the time limit" if frame is None else frame[1].decode("utf-8", "replace")
        self.dead = why
        tail = self.log_tail(1500).strip()
        self.kill()
        raise KeeperUnavailable(f"GPU {self.gpu}: the reference keeper: {why}" + (f"\n{tail}" if tail else ""))

    def call(self, kind: KeeperRequest, payload: bytes, timeout: float, urgent: bool = False) -> tuple[bool, bytes]:
        """(answered `OKAY`, the answer's payload); raises `KeeperUnavailable` when the keeper is gone.  `urgent`:
        the caller holds its GPU exclusively, so it goes before other waiting requests (`keeper_turns.py`)."""
        began = time.monotonic()
        with self.calls.turn(urgent):
            self._waited.s = time.monotonic() - began
            if self.dead:
                raise KeeperUnavailable(self.dead)
            if not self.send(kind, payload):
                self.dead = f"the reference keeper is gone ({self.death()})"
                raise KeeperUnavailable(self.dead)
            frame = self.next_frame(timeout)
            if frame is None or frame[0] not in (KeeperAnswer.OKAY, KeeperAnswer.DENY):
                self.dead = (
                    f"the reference keeper did not answer {kind} within {timeout:g} s"
                    if frame is None
                    else f"the reference keeper stopped ({self.death()})"
                )
                tail = self.log_tail(1500).strip()
                self.kill()
                raise KeeperUnavailable(self.dead + (f"\n{tail}" if tail else ""), timed_out=frame is None)
            return frame[0] == KeeperAnswer.OKAY, frame[1]

    def waited_s(self) -> float:
        """Seconds this thread's last `call` waited for the keeper to finish other tasks' requests."""
        return getattr(self._waited, "s", 0.0)
