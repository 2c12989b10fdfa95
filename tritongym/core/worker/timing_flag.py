"""One byte of memory the pool shares with its workers: "a timing on this GPU waits for the sharers".

Why: a timing waits for every worker that holds the GPU shared to give its hold back, and a worker's shared
hold spans its whole correctness phase (dozens of calls, probes and handouts): in an RL batch on an H100 the
GPU lock was "draining" 69 of 120 s.  Giving the hold back after every call (`yield_between_calls`)
bounds a drain by one call, but costs two round trips to the pool per call, timing or not, and lost its A/B
on an H100.  With this flag a worker looks at one byte after each call and gives its hold back only when a
timing actually waits (`TimingOptions.yield_to_waiting_timings`): no round trip otherwise.

The pool's side (`TimingFlag`) is an anonymous file (unlinked at once, so a killed pool leaves nothing on
disk) mapped read-write; the workers, forked by the zygote rather than by the pool, open it read-only by the
pool's `/proc/PID/fd/N` path (`TRITONGYM_TIMING_WAITS`).  A candidate runs in the worker and could open the
file for writing itself: all it could do is make its own worker (and its neighbours) give their holds back
more or less often, a matter of throughput only; the lock, not the flag, keeps a timing alone on the GPU.
"""

from __future__ import annotations

import mmap
import os
import tempfile

ENV = "TRITONGYM_TIMING_WAITS"


class TimingFlag:
    """The pool's side: `set(True)` while a timing holds new sharers back on this GPU."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._file.write(b"\0")
        self._file.flush()
        self._map = mmap.mmap(self._file.fileno(), 1)
        self.path = f"/proc/{os.getpid()}/fd/{self._file.fileno()}"

    def set(self, waiting: bool) -> None:
        self._map[0] = 1 if waiting else 0

    def close(self) -> None:
        self._map.close()
        self._file.close()


class TimingWaits:
    """The worker's side: `bool(flag)` says whether a timing waits; always False where no flag could be opened
    (a worker started without the pool's variable, or a /proc this process may not read), i.e. the worker then
    behaves as it did before the flag existed."""

    def __init__(self, path: str | None) -> None:
        self._map = None
        if not path:
            return
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return
        try:
            self._map = mmap.mmap(fd, 1, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            self._map = None
        finally:
            os.close(fd)

    def __bool__(self) -> bool:
        return self._map is not None and self._map[0] != 0
