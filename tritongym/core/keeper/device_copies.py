"""Parked reference outputs kept on the keeper's device as well, while the keeper's cache share has room for them.

A reference output of `parking.PARK_BYTES` or more lives in host memory (`parking.py`), and every comparison with
it used to bring it back a chunk at a time from pageable memory: on an H200 each `LEND` of a warm relu task spent
10-17 ms there (the `compare` part on the timeline), for a one-pass comparison that takes 0.2-0.45 ms on the
device (`benchmarks/compare_cost.py`), thirteen lends a task.  The candidates of one problem (an RL batch's
samples, a user's evaluations one after another) compare with the same parked outputs again and again, so the
first comparison's copy is kept here and the later ones compare on the device.

Bounded three ways, least recently used first out: all copies together by a quarter of the keeper's cache share
(`cache_mb`, which the pool's admission reserves for the keeper) and by the room the records it keeps leave in
that share; each copy by `LARGEST_COPY`, so a full-size output of several GiB is still compared a chunk at a time
(a task that has the GPU alone may use the cache share too: it finds at most small copies there, and none when it
is the first of its problem, since a new record's build drops them all).  A copy goes with its record
(`keep_only`), and all go before the keeper retries a handout or a build the GPU had no memory for.
"""

from __future__ import annotations

from collections import OrderedDict

from tritongym.core.worker.parking import Parked

SHARE_PART = 4  # all copies together: at most a quarter of the keeper's cache share
LARGEST_COPY = 1 << 30  # bytes: a larger parked output is compared a chunk at a time


class DeviceCopies:
    """Device copies of parked tensors, by the identity of their `Parked` (held here, so the identity stays theirs)."""

    def __init__(self, device, share_bytes: int, largest: int = LARGEST_COPY) -> None:
        self.device = device
        self.budget = share_bytes // SHARE_PART
        self.largest = largest
        self.copies: OrderedDict[int, tuple[Parked, object]] = OrderedDict()
        self.nbytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, parked: Parked, room: int):
        """The device copy of `parked`, made now when it fits beside the other copies (older ones go first) in the
        budget and in `room` (the share's bytes that the kept records leave free); None when it does not, or when
        the copy fails."""
        import torch

        kept = self.copies.get(id(parked))
        if kept is not None:
            self.copies.move_to_end(id(parked))
            self.hits += 1
            return kept[1]
        self.misses += 1
        size, room = parked.nbytes, min(room, self.budget)
        if size > min(room, self.largest):
            return None
        self.trim(room - size)
        try:
            copy = parked.host.to(self.device)
        except torch.OutOfMemoryError:  # the share is reserved, but a GPU shared with a trainer may say otherwise
            self.clear()
            return None
        self.copies[id(parked)] = (parked, copy)
        self.nbytes += size
        return copy

    def trim(self, room: int) -> None:
        """Drop the least recently used copies until the rest fit in `room` bytes."""
        while self.copies and self.nbytes > max(room, 0):
            self._drop(next(iter(self.copies)))

    def keep_only(self, live: set[int]) -> None:
        """Drop the copies of parked tensors that no kept record or running task holds any more (`live`: their
        identities), so a record that left the cache takes its device copies (and its host memory) with it."""
        for key in [k for k in self.copies if k not in live]:
            self._drop(key)

    def clear(self) -> None:
        self.trim(0)

    def _drop(self, key: int) -> None:
        parked, _ = self.copies.pop(key)
        self.nbytes -= parked.nbytes
