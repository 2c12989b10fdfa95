"""The sandbox's fork server: one-task workers forked from a process that has imported torch and Triton once.

A fresh worker interpreter spends about 2.4 s of CPU importing torch and Triton before it reads its task, most of a
small CPU evaluation.  `TaskZygote` starts `python -m tritongym.core.worker.zygote FD task` (in the stripped
environment the worker would get, `TRITON_INTERPRET=1` included, so Triton is imported as the interpreter wants)
and asks it to fork a worker per task instead.  The child is what `run_in_sandbox` would have started: its own
session (the timeout kills the whole group), its own private directory as working directory, HOME and TMPDIR,
the task's environment, the task on its stdin and the result on its stdout; `task_runner.main` then sets the
task's limits (address space, CPU time, file size, no core dumps) as it does in a fresh interpreter.  A child
holds nothing of the zygote's but the imported modules (the control socket and every other descriptor are
closed, the import path's working-directory entry is its own), and a candidate runs, as before, in a process
forked from that worker, so no candidate can leave anything for the next.

Only the zygote can reap its children, so it reports each exit status; `ForkedWorker` is the child as the sandbox
holds a `subprocess.Popen` (pid, communicate with a timeout, returncode, wait).  One zygote per process and
environment (`shared`), started on first use or by a backend's `warm_up`, gone with the process (the zygote exits
when its control socket closes).  When the zygote cannot serve (it failed to start, e.g. a Triton that does not
import, or died), `fork` returns None and the caller starts a fresh interpreter, which reports the failure as before.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable

from tritongym.core.sandbox.fork_server import ForkServer

START_TIMEOUT_S = 120.0  # imports torch and Triton: seconds on an idle machine, far more on a loaded one
EXIT_REPORT_S = 30.0  # the zygote reaps a child within its poll interval; this bounds a zygote gone silent


class TaskZygote(ForkServer):
    """A handle on one fork server: spawn requests, and the exit statuses of the children still waited for."""

    def __init__(self, make_env: Callable[[str], dict[str, str]]) -> None:
        """Start the zygote in a private folder of its own (its working directory, HOME and TMPDIR) with the
        environment `make_env(folder)`; it and every child it forks hold this process's lifeline (`owned.py`)."""
        self.waited: set[int] = set()  # children whose exit status someone may still ask for
        super().__init__(make_env, role=("task",), name="task-zygote")

    def _exited(self, pid: int, status: int) -> None:
        if pid in self.waited:
            self.exits[pid] = status

    def fork(self, request: dict, timeout: float = START_TIMEOUT_S) -> ForkedWorker | None:
        """A worker forked for `request` (cwd, env, log), its stdin and stdout pipes to this process; None when the
        zygote is not (or no longer) there."""
        if not self.serving(timeout):
            return None
        ident = next(self._ids)
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        try:
            with self._send_lock:
                message = json.dumps({**request, "role": "task", "id": ident, "keep_fds": self.pass_fds}).encode()
                socket.send_fds(self.sock, [message], [stdin_r, stdout_w])
        except OSError:
            pid = None
        else:
            with self.cond:
                self.cond.wait_for(lambda: ident in self.pids or self.dead, timeout)
                pid = self.pids.pop(ident, None)
                if pid is not None:
                    self.waited.add(pid)
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        if pid is None:
            os.close(stdin_w)
            os.close(stdout_r)
            return None
        return ForkedWorker(self, pid, stdin_w, stdout_r)

    def exit_status(self, pid: int, timeout: float | None) -> int | None:
        """How the child `pid` ended (a `Popen.returncode`), or None when the zygote did not say within `timeout`."""
        with self.cond:
            self.cond.wait_for(lambda: pid in self.exits or self.dead, timeout)
            return self.exits.get(pid)

    def forget(self, pid: int) -> None:
        """Nobody will ask for `pid`'s exit status any more (a later child given the same pid is another)."""
        with self.cond:
            self.waited.discard(pid)
            self.exits.pop(pid, None)


class ForkedWorker:
    """A worker the zygote forked, as the sandbox holds a `subprocess.Popen`: `pid`, `communicate(input, timeout)`
    (raises `subprocess.TimeoutExpired`; then kill the group and `wait`), `returncode` and `wait` (from the
    zygote's report).  A zygote that dies before reporting leaves the status unknown: it reads as SIGKILL, a
    death from outside, as the zygote's own was."""

    def __init__(self, zygote: TaskZygote, pid: int, stdin_fd: int, stdout_fd: int) -> None:
        self.zygote, self.pid = zygote, pid
        self._stdin, self._stdout = stdin_fd, stdout_fd
        self._chunks: list[bytes] = []
        self._view: memoryview | None = None
        self._returncode: int | None = None

    def communicate(self, input: bytes = b"", timeout: float | None = None) -> tuple[bytes, None]:
        """Write `input` to the worker's stdin (then close it) while reading its stdout to the end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._view is None:
            self._view = memoryview(input)
            os.set_blocking(self._stdin, False)
        with selectors.DefaultSelector() as selector:
            if self._stdout >= 0:
                selector.register(self._stdout, selectors.EVENT_READ)
            if self._stdin >= 0:
                selector.register(self._stdin, selectors.EVENT_WRITE)
            while self._stdout >= 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise subprocess.TimeoutExpired("forked worker", timeout)
                for key, _ in selector.select(remaining):
                    if key.fd == self._stdout:
                        data = os.read(self._stdout, 1 << 16)
                        if data:
                            self._chunks.append(data)
                        else:
                            selector.unregister(self._stdout)
                            os.close(self._stdout)
                            self._stdout = -1
                        continue
                    try:
                        self._view = self._view[os.write(self._stdin, self._view[: 1 << 16]) :]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:  # gone before reading its task: its exit status says why
                        self._view = self._view[:0]
                    if not self._view:
                        self._close_stdin(selector)
        self._close_stdin(None)
        return b"".join(self._chunks), None

    def _close_stdin(self, selector) -> None:
        if self._stdin >= 0:
            if selector is not None:
                selector.unregister(self._stdin)
            os.close(self._stdin)
            self._stdin = -1

    def wait(self, timeout: float | None = None) -> int:
        return self.returncode

    @property
    def returncode(self) -> int:
        if self._returncode is None:
            code = self.zygote.exit_status(self.pid, EXIT_REPORT_S)
            self._returncode = -signal.SIGKILL if code is None else code
            self.zygote.forget(self.pid)
        return self._returncode

    def __del__(self) -> None:
        for fd in (self._stdin, self._stdout):
            if fd >= 0:
                os.close(fd)


_zygotes: dict[tuple, TaskZygote] = {}
_lock = threading.Lock()
_owner = os.getpid()


def shared(key: tuple, make_env: Callable[[str], dict[str, str]]) -> TaskZygote:
    """This process's zygote for the worker environment `key`, started with `make_env` when there is none (or the
    last one died).  A process forked from this one starts its own: the socket is the parent's."""
    global _owner
    with _lock:
        if _owner != os.getpid():
            _zygotes.clear()  # the parent's: never closed here, never used here
            _owner = os.getpid()
        zygote = _zygotes.get(key)
        if zygote is None or zygote.dead:
            if zygote is not None:
                zygote.close()
            zygote = _zygotes[key] = TaskZygote(make_env)
        return zygote


@atexit.register
def close_all() -> None:
    """End every zygote this process started (they would also exit on their own once the process is gone)."""
    with _lock:
        if _owner == os.getpid():
            for zygote in _zygotes.values():
                zygote.close()
        _zygotes.clear()
