"""The sandbox processes a service leaves behind when it stops under a running task, and their end.

Each evaluation runs in a sandbox process of its own session (`tritongym.core.sandbox.sandbox`, or a warm worker
of the GPU pool), so a signal to the service does not reach it.  Two ways one could outlive the service:

- the drain at SIGTERM ran out (`--drain`) with tasks still running: those tasks stay `running` in the
  registry, to run again at the next start, and `abandon` kills their sandboxes as the process exits;
- the service was killed (`kill -9`, the OOM killer): its sandboxes are orphans, reparented to init, whose
  verdicts nobody will read.  `kill_orphans`, at the next start, kills them before the resumed tasks run, so
  a task never runs twice at once.  Until a next start they run on until their own end (the task's time
  limit bounds it).

A sandbox is recognised by its command line (`-m tritongym.core.worker...`), read from /proc; elsewhere
than Linux both are no-ops.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

log = logging.getLogger("tritongym.service")

PROC = Path("/proc")
WORKER_MODULE = b"tritongym.core.worker"


def _is_worker_module(part: bytes) -> bool:
    """The worker package or one of its modules, never a namesake such as `tritongym.core.worker_task`."""
    return part == WORKER_MODULE or part.startswith(WORKER_MODULE + b".")


def _cmdline(pid: int) -> list[bytes]:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _parent(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces and parentheses


def sandbox_processes() -> dict[int, int]:
    """Every sandbox process this user can see: pid -> parent pid."""
    if not PROC.is_dir():
        return {}
    found = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and any(_is_worker_module(part) for part in _cmdline(int(entry.name))):
            parent = _parent(int(entry.name))
            if parent is not None:
                found[int(entry.name)] = parent
    return found


def _is_python(pid: int) -> bool:
    argv = _cmdline(pid)
    return bool(argv) and b"python" in os.path.basename(argv[0])


def _kill(pid: int) -> None:
    """SIGKILL the sandbox and what the candidate started in its session (a sandbox leads its own group)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue


def kill_orphans() -> list[int]:
    """Kill the sandboxes whose parent is gone: reparented to init (pid 1) or to a process that is not
    Python (a subreaper).  A live evaluator, of this service or another, is always a Python process."""
    killed = []
    for pid, parent in sandbox_processes().items():
        if parent != os.getpid() and (parent <= 1 or not _is_python(parent)):
            _kill(pid)
            killed.append(pid)
    return killed


def abandon(sig: int | None) -> None:
    """End this process now, with the sandboxes it started: for a service whose drain ran out under running
    tasks.  Kills them, then itself by `sig` (as uvicorn would re-raise it; exit status 1 without one).

    Between the first kill and the last nothing here gives up the interpreter lock (the switch interval is
    raised and no call blocks), so a lane woken by its sandbox's death cannot record the false "crashed"
    verdict it would read from it: the process is gone first.  The task stays `running` in the registry and
    runs again at the next start."""
    mine = [pid for pid, parent in sandbox_processes().items() if parent == os.getpid()]
    log.warning("killing %d sandbox(es) of tasks left running: %s", len(mine), mine)
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.setswitchinterval(1e6)
    for pid in mine:
        _kill(pid)
    if sig is not None:
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(1)
