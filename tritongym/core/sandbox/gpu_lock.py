"""The GPU lock: one per GPU, shared by correctness work, exclusive for timing (`WorkerPool.locks`)."""

from __future__ import annotations

import collections
import threading
import time

from tritongym.core.worker.timing_flag import TimingFlag


class GPULock:
    """Per-GPU readers-writer lock, writer first: correctness work of many workers shares the GPU, timing
    has it alone (no other worker's kernels run while a sample is taken), and a waiting timer stops new
    sharers from starting so it waits at most for the ones already running.

    Each timer that stops new sharers costs a *drain*: the GPU runs only the sharers still finishing (113 of
    222 s of an RL batch on an H100).  A timer may instead first wait up to its `window_s` with
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
        # lock's "draining" waits for, measured rather than guessed
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
