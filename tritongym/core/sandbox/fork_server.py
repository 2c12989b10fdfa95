"""The fork servers (`worker.zygote`) seen from the parent (`ForkServer`: the pool's `Zygote` here, the CPU
sandbox's `TaskZygote` in `task_zygote.py`), and the stripped environments of the sandbox's processes: a module
that imports no pydantic and no torch, so that `tritongym eval` can start the pool's fork server before its own
imports are done.

Why: a cold `eval` on an H200 started its pool 1.2 s after the CLI did (`eval_latency-h200-stop49.json`: the CLI's
imports, the evaluator, the problem), and every process of the pool waits for the fork server's ~3 s of imports
(torch, Triton).  `start_early` runs that beside the CLI's start; the first pool made with the same environment
adopts it (`adopt_early`), and one nobody adopts is closed at exit.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from tritongym.core.sandbox import owned
from tritongym.core.timeline import mark

PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")
_CUDA_ENV = ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "NVIDIA_DRIVER_CAPABILITIES", "CC", "TRITON_PTXAS_PATH")


def worker_env(tmp: str, extra_env: dict[str, str]) -> dict[str, str]:
    """A sandboxed process's environment: only what Python and the locale need from ours, its own HOME and
    temporary folder, this package importable, one thread per process, and this process's lifeline."""
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    env.update(
        HOME=tmp,
        TMPDIR=tmp,
        # the parent's own import path too: the worker runs the same environment (wheels on PYTHONPATH included)
        PYTHONPATH=os.pathsep.join(p for p in (PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")) if p),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        PYTHONUNBUFFERED="1",
        # one intra-op thread: workers run side by side, and the worker forks (an OpenMP pool breaks on fork)
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TRITON_CACHE_DIR=os.path.join(tmp, "triton-cache"),
    )
    env.update(owned.lifeline_env())
    env.update(extra_env)
    return env


def gpu_env(tmp: str, extra_env: dict[str, str]) -> dict[str, str]:
    """The sandbox's stripped environment, plus what the CUDA driver and Triton's compiler may need."""
    env = worker_env(tmp, extra_env)
    env.update({k: os.environ[k] for k in _CUDA_ENV if k in os.environ})
    # torch's host allocations of 2 MiB and up on huge pages: the keeper parks GiBs of reference outputs in
    # host memory, and faulting them in 4 KiB at a time was most of a full-size record's build (parking.py)
    env.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    return env


class ForkServer:
    """A handle on one `worker.zygote` process: started in a private folder of its own (its working directory,
    HOME and TMPDIR) with the environment `make_env(folder)`, holding this process's lifeline (`owned.py`) as
    every child it forks does; its messages (ready, a forked child's pid, a child's exit status) read on a thread
    of their own.  The pool's `Zygote` and the CPU sandbox's `TaskZygote` are both one."""

    def __init__(self, make_env: Callable[[str], dict[str, str]], role: tuple[str, ...] = (), name: str = "zygote"):
        self.tmp = owned.make_folder("zygote")
        self.pass_fds = (owned.lifeline_fd(),)
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(os.path.join(self.tmp, "zygote.log"), "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-m", "tritongym.core.worker.zygote", str(child.fileno()), *role],
                pass_fds=[child.fileno(), *self.pass_fds],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.tmp,
                env=make_env(self.tmp),
                start_new_session=True,
            )
        owned.started(self.proc.pid, "zygote")
        child.close()
        self.cond = threading.Condition()
        self.ready = False
        self.dead = False
        self.pids: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self._ids = itertools.count()
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, name=name, daemon=True).start()

    def _exited(self, pid: int, status: int) -> None:
        """A child's exit status, as the zygote reported it (called holding `cond`)."""
        self.exits[pid] = status

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
                        self._exited(data["exited"], data["status"])
                    else:
                        self.pids[data["id"]] = data["pid"]
                self.cond.notify_all()
            if not message:
                return

    def serving(self, timeout: float | None) -> bool:
        """Whether the zygote is ready for requests within `timeout` (False: it failed to start, or died)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.ready or self.dead, timeout) and not self.dead

    def close(self) -> None:
        self.sock.close()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        owned.ended(self.proc.pid)
        owned.remove_folder(self.tmp)


class Zygote(ForkServer):
    """The pool's fork server (GPU workers and keepers): spawn requests and exit statuses."""

    def __init__(self, extra_env: dict[str, str] | None = None) -> None:
        self.extra_env = dict(extra_env or {})
        self.gone: set[int] = set()  # children whose exit status was read (`exit_status`)
        # the environment names the lifeline (`owned.lifeline_env`), passed on by the zygote
        super().__init__(lambda folder: gpu_env(folder, self.extra_env))

    def spawn(self, fd: int, request: dict, timeout: float) -> int | None:
        """Fork a worker serving on `fd`; its pid, or None when the zygote is not (or no longer) there."""
        if not self.serving(timeout):
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

    def build_launchers(self, signatures: list[list[str]]) -> None:
        """Ask the zygote to build the Triton launchers of `signatures` (what a worker reported launching) for the
        workers it forks after this request (`worker/triton_cache.py`).  Not answered; nothing when it is gone."""
        if self.dead or not signatures:
            return
        try:
            with self._send_lock:
                self.sock.send(json.dumps({"role": "launchers", "signatures": signatures}).encode())
        except OSError:
            pass

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


def build_launchers(zygote: Zygote | None, signatures: list[list[str]]) -> None:
    """`Zygote.build_launchers`, for a pool that may run without a zygote."""
    if zygote is not None:
        zygote.build_launchers(signatures)


_early: Zygote | None = None
_early_lock = threading.Lock()


def start_early() -> None:
    """Start a fork server now, with no extra environment, for the pool this process is about to make; a second
    call does nothing.  Closed at exit unless a pool adopted it."""
    global _early
    with _early_lock:
        if _early is None:
            _early = Zygote()
            mark("zygote_start_early")
            atexit.register(_close_early)


def adopt_early(extra_env: dict[str, str]) -> Zygote | None:
    """The fork server `start_early` started, handed over once, when it would be the one a pool with `extra_env`
    starts (same environment) and is still there; else None (and an unwanted one is closed)."""
    global _early
    with _early_lock:
        zygote, _early = _early, None
    if zygote is None:
        return None
    if zygote.extra_env != dict(extra_env) or zygote.dead or zygote.proc.poll() is not None:
        zygote.close()
        return None
    mark("zygote_adopted")
    return zygote


def _close_early() -> None:
    global _early
    with _early_lock:
        zygote, _early = _early, None
    if zygote is not None:
        zygote.close()
