"""Which of a GPU's keepers serves a record: each new record to the keeper holding the fewest, then kept there.

Why not a hash of the record's key, as before: a keeper answers one request at a time, and every task of a record
sends its lends, comparisons and drift checks to the record's keeper.  On two H200s each GPU held 8 of an RL batch's
16 problems; hashed over its 4 keepers they fell 3, 3, 2 and 0 on one GPU (a keeper served 282 lends, another none),
and the requests' time spent behind other tasks' requests to the same keeper (`keeper_queue_busy`) doubled against
one GPU holding all 16 (24.0 s against 11.9 s over 128 tasks, `gpu_scaling-h200x2-stop61-keeper-queue.json`).  A
task waiting there holds the GPU shared, so every timer's drain waited with it.  Sticky: a record stays with its
keeper (its outputs, gold and probes are built once, and the next RL step's tasks find it cached), for as long as
the GPU's last `REMEMBERED_PER_KEEPER` x keepers records include it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class KeeperChoice:
    """Per GPU, the keeper index of each recent record key: a key seen before keeps its keeper; a new key goes to the
    keeper holding the fewest remembered keys (the lowest index at a tie), so records spread evenly over keepers."""

    REMEMBERED_PER_KEEPER = 64
    """Keys remembered per keeper of a GPU, the least recently used forgotten first.  A forgotten key counts no more
    against its keeper's share; if it comes back it is placed afresh (its record may have left the keeper's cache by
    then anyway, which keeps far fewer)."""

    def __init__(self, keepers_per_gpu: int) -> None:
        self.keepers_per_gpu = max(1, keepers_per_gpu)
        self._guard = threading.Lock()
        self._keys: dict[str, OrderedDict[str, int]] = {}  # gpu -> key -> keeper index, least recent first
        self._held: dict[str, list[int]] = {}  # gpu -> keys remembered per keeper index

    def of(self, gpu: str, key: str) -> int:
        """The index of the keeper of `gpu` that serves the record `key`."""
        with self._guard:
            keys = self._keys.setdefault(gpu, OrderedDict())
            held = self._held.setdefault(gpu, [0] * self.keepers_per_gpu)
            k = keys.get(key)
            if k is not None:
                keys.move_to_end(key)
                return k
            k = min(range(self.keepers_per_gpu), key=lambda i: (held[i], i))
            keys[key] = k
            held[k] += 1
            if len(keys) > self.REMEMBERED_PER_KEEPER * self.keepers_per_gpu:
                _, gone = keys.popitem(last=False)
                held[gone] -= 1
            return k

    def held(self, gpu: str) -> list[int]:
        """Per keeper index of `gpu`, how many remembered records it serves."""
        with self._guard:
            return list(self._held.get(gpu, [0] * self.keepers_per_gpu))
