"""A sandboxed process dies with the tritongym process that started it (the worker's side).

The process that starts sandboxes keeps the write end of one pipe open for its whole life
(`tritongym.core.sandbox.owned.lifeline_fd`); every process it starts gets the read end, its number in
`$TRITONGYM_LIFELINE`, and the GPU zygote's forks inherit it.  `hold` starts a thread blocked reading it.  The
write end closes when its process ends, however it ends (`kill -9` and the OOM killer included: the kernel
closes every descriptor of a dead process), so the read returns end-of-file and the thread SIGKILLs the
sandbox's process group, the candidate's own children with it.  A service killed under a running task so
leaves no sandbox running under init.

Why a pipe and not `PR_SET_PDEATHSIG`: on Linux the "parent" a parent-death signal watches is the *thread*
that forked, not the process, and the GPU pool starts its replacement workers from threads that end right
after; a parent-death signal would kill every replacement as its starting thread returned.
"""

from __future__ import annotations

import os
import signal
import stat
import threading

ENV = "TRITONGYM_LIFELINE"


def _watch(fd: int) -> None:
    while True:
        try:
            if os.read(fd, 1):
                continue  # nobody writes to it; read on until end-of-file
        except InterruptedError:
            continue
        except OSError:
            return  # not a pipe of ours (the number was never passed): nothing to watch
        break
    # the process that started this one is gone: the whole group goes with it (a sandbox leads its own group;
    # a zygote's fork that has not yet made its own session kills only itself)
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def hold(environ: dict[str, str] | None = None) -> bool:
    """Die with the starting process: watch the lifeline named in `environ` (default `os.environ`).  False where
    none was given (a worker started by hand)."""
    value = (os.environ if environ is None else environ).get(ENV, "")
    if not value.isdigit():
        return False
    try:
        if not stat.S_ISFIFO(os.fstat(int(value)).st_mode):
            return False  # the number names something else here (it was not passed on): never read from that
    except OSError:
        return False
    threading.Thread(target=_watch, args=(int(value),), name="tritongym-lifeline", daemon=True).start()
    return True
