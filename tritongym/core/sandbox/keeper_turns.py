"""Whose request a GPU's keeper serves next: a request made under an exclusive GPU hold goes before the rest.

A keeper answers one request at a time, and the pool's task threads queue for it.  Most requests (`LEND`, `CMPR`,
`PREP`) are made while their task holds the GPU shared or not at all: while they wait, the GPU keeps serving
everyone else.  A few are made while their task holds the GPU *exclusively*: the reference's timing (`RTIM`) and
the drift check inside a candidate's timing hold (`DRFT`).  While such a request waits behind other tasks' lends,
every other worker on the GPU waits too: the GPU idles, held.  On two H200s a drift check's wait grew from 48 to
65 ms per candidate (`gpu_scaling-h200x2-stop61-standby.json`: the keepers' queues doubled), about 1.4 s of held,
idle GPU per 128-candidate batch.

So the keeper's mutex is a turn-taking one: when it comes free, a waiting exclusive-hold request takes it before any
other.  Nothing is preempted (a request under way finishes), and no request starves: exclusive holds are granted one
at a time per GPU (`GPULock`), so at most one such request per GPU is ever waiting.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class KeeperTurns:
    """A mutex whose waiting `urgent` callers go first (`take(urgent=True)`), then the others in any order."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._urgent_waiting = 0

    def take(self, urgent: bool = False) -> None:
        with self._cond:
            if urgent:
                self._urgent_waiting += 1
            try:
                self._cond.wait_for(lambda: not self._busy and (urgent or self._urgent_waiting == 0))
            finally:
                if urgent:
                    self._urgent_waiting -= 1
            self._busy = True

    def give_back(self) -> None:
        with self._cond:
            self._busy = False
            self._cond.notify_all()

    def __enter__(self) -> None:  # `with turns:` as with a plain lock: a request that is not urgent
        self.take()

    def __exit__(self, *exc) -> None:
        self.give_back()

    @contextlib.contextmanager
    def turn(self, urgent: bool = False) -> Iterator[None]:
        """`with turns.turn(urgent):` holds the mutex for the block."""
        self.take(urgent)
        try:
            yield
        finally:
            self.give_back()
