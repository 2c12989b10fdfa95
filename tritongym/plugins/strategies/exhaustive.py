"""`exhaustive`: the whole grid in a fixed order, nearest the kernel as written first.

Breadth-first around the centre (one parameter one step away, then two steps, ...), so a small budget
spends itself on the neighbours of what already works, and a budget as large as the grid measures all of
it.  Deterministic by construction: a second tuning asks for exactly the same configurations.
"""

from __future__ import annotations

from collections.abc import Sequence

from tritongym import hookimpl
from tritongym.core.interfaces import SearchStrategy
from tritongym.core.tuning import Config, SearchSpace, TuningRecord, config_key


class Exhaustive(SearchStrategy):
    """Every configuration of the grid, nearest the current values first (one step, then two, ...)."""

    name = "exhaustive"

    def propose(self, space: SearchSpace, records: Sequence[TuningRecord], budget: int) -> list[Config]:
        seen = {config_key(r.config) for r in records}
        proposed: list[Config] = []
        for config in space.by_distance():
            if len(proposed) >= budget:
                break
            if config_key(config) not in seen:
                proposed.append(config)
        return proposed


@hookimpl
def register_search_strategies(register):
    register(Exhaustive)
