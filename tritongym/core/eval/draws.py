"""One draw of trial seeds per problem for the candidates of it being judged at the same time, across batches.

An `evaluate_many` batch has always drawn once per problem, so that its samples of a problem share the keeper's
record.  Batches that overlap did not: `tritongym serve`'s lanes each judge one candidate, so the samples
of an RL step submitted together were judged under as many draws, and the keeper built as many records (the
service ran at 0.82x the in-process batch on two H200s).  Here a draw is shared by every batch that takes
it while another still holds it, and a new one is made once none does, or once it has served `MAX_USES` batches or
`MAX_AGE_S` seconds: the seeds stay secret (no candidate sees them) and fresh for judging that does not overlap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

Draw = tuple[list[int], int]  # trial seeds, the weights' init seed


class SharedDraws:
    MAX_USES = 256
    MAX_AGE_S = 300.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._guard = threading.Lock()
        self._clock = clock
        self._live: dict[Hashable, list] = {}  # key -> [draw, holders, uses, made at]

    def take(self, key: Hashable, make: Callable[[], Draw]) -> Draw:
        """The draw for `key` (a problem and what shapes its seeds): the one held now if it is young enough, else a
        new one from `make`.  Every `take` is matched by one `give_back`."""
        with self._guard:
            live = self._live.get(key)
            if live is None or live[2] >= self.MAX_USES or self._clock() - live[3] > self.MAX_AGE_S:
                live = [make(), 0, 0, self._clock()]
                self._live[key] = live
            live[1] += 1
            live[2] += 1
            return live[0]

    def give_back(self, key: Hashable, draw: Draw) -> None:
        with self._guard:
            live = self._live.get(key)
            if live is None or live[0] is not draw:
                return  # replaced meanwhile: the holders of the new one count their own
            live[1] -= 1
            if not live[1]:
                del self._live[key]
