"""The sandbox processes a service leaves behind when it stops under a running task, and their end.

Each evaluation runs in a sandbox process of its own session (`tritongym.core.sandbox.sandbox`, or a warm worker
of the GPU pool), so a signal to the service does not reach it.  Two ways one could outlive the service:

- the drain at SIGTERM ran out (`--drain`) with tasks still running: those tasks stay `running` in the
  registry, to run again at the next start, and `abandon` kills their sandboxes as the process exits;
- the service was killed (`kill -9`, the OOM killer): its sandboxes die with it, each watching the service's
  lifeline (`core/worker/lifeline.py`); what the lifeline cannot reach (a temporary folder, a process that
  could not read its end) is recorded with the service's pid and start (`core/sandbox/owned.py`), and
  `kill_orphans`, at the next start, kills and removes what a dead owner left, before the resumed tasks run.

Only what a dead tritongym process of this user recorded is touched: a sandbox of a live process (another
service, an `eval`, a Ray actor that renamed itself `ray::BackendActor.measure`) is never this service's to
kill.  `sandbox_processes` finds sandboxes by their command line (`-m tritongym.core.worker...`), read from
/proc, for a look at what runs; elsewhere than Linux it is empty.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

from tritongym.core.sandbox import owned

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


def _kill(pid: int) -> None:
    owned.kill(pid)


def kill_orphans() -> list[int]:
    """Kill what dead tritongym processes of this user recorded as started, and remove their folders; the pids
    killed.  A process whose owner lives is left alone whatever it or its owner is called."""
    swept = owned.sweep()
    if swept.removed:
        log.info("removed %d folder(s) a dead tritongym process left: %s", len(swept.removed), swept.removed)
    return swept.killed


def abandon(sig: int | None) -> None:
    """End this process now, with the sandboxes it started: for a service whose drain ran out under running
    tasks.  Kills them, then itself by `sig` (as uvicorn would re-raise it; exit status 1 without one).

    Between the first kill and the last nothing here gives up the interpreter lock (the switch interval is
    raised and no call blocks), so a lane woken by its sandbox's death cannot record the false "crashed"
    verdict it would read from it: the process is gone first.  The task stays `running` in the registry and
    runs again at the next start."""
    mine = owned.mine()
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
