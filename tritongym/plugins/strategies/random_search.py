"""`random`: configurations drawn uniformly from the grid by a seeded generator, without repeats.

A baseline every cleverer strategy must beat.  The draw sequence depends on the seed alone, and each
call replays it from the start and skips what is already measured, so a tuning run again (or resumed)
proposes the same configurations in the same order and the registry answers them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import SearchStrategy
from tritongym.core.tuning import Config, SearchSpace, TuningRecord, config_key


class RandomOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(default=0, ge=0, description="seed of the draws: the same seed proposes the same configs")


class RandomSearch(SearchStrategy):
    """Uniform draws from the grid without repeats, from a seeded generator."""

    name = "random"
    Options = RandomOptions

    def propose(self, space: SearchSpace, records: Sequence[TuningRecord], budget: int) -> list[Config]:
        seen = {config_key(r.config) for r in records}
        rng = random.Random(self.options.seed)
        drawn: set[int] = set()
        proposed: list[Config] = []
        while len(proposed) < budget and len(drawn) < space.size:
            index = rng.randrange(space.size)
            if index in drawn:
                continue
            drawn.add(index)
            config = space.config_at(index)
            if config_key(config) not in seen:
                proposed.append(config)
        return proposed


@hookimpl
def register_search_strategies(register):
    register(RandomSearch)
