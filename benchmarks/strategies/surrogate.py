"""`surrogate`: a model-based search strategy, a candidate for `tritongym tune` (issue 17).

Not a built-in: a strategy ships only if it beats `random` in `benchmarks/tune_strategies.py` on a
GPU, so this one is loaded there as a plugin file (`--plugin benchmarks/strategies/surrogate.py`), the way
any third-party strategy is.  On one H100 (benchmarks/results/tune_strategies.log: matmul and conv2d, 16
variants) it tied `random` by speedup (geomean 1.628 against 1.650, one random seed) in a quarter of the
wall time (194 s against 763 s; no variant rejected against 10 of 32): not a win by the benchmark's measure.

It fits a cost model to the tuning's own records (the registry's rows for this kernel, device class and
protocol) and proposes the configurations it predicts fastest: log runtime as a quadratic in each
parameter's log2 value (num_stages as is), by ridge regression.  A variant that was not `ok` counts as
twice the slowest ok runtime, so the model learns where configurations break (too large a tile for
shared memory).  It proposes only within `reach` grid steps of the fastest configuration measured so far
(a trust region: a quadratic fitted on one side of a valley extrapolates badly), so the search moves
towards the optimum a neighbourhood at a time.  Until it has enough timed records to fit (three values
of every parameter, more records than coefficients), and on a backend that times nothing, it walks the
grid nearest first like `exhaustive`.  It proposes `batch` configurations per call, so the tuner measures
them and asks again with the model refitted.  Deterministic: a function of the records alone, so a
repeated tuning asks the same questions and the registry answers them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import SearchStrategy
from tritongym.core.tuning import Config, SearchSpace, TuningRecord, config_key

GRID_LIMIT = 50_000
"""Grids up to this size are scored whole; a larger one is scored over its nearest GRID_LIMIT points."""


class SurrogateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    batch: int = Field(default=4, ge=1, description="configurations proposed per model fit")
    ridge: float = Field(default=1e-2, gt=0, description="ridge penalty of the least-squares fit")
    reach: int = Field(default=2, ge=1, description="steps from the fastest measured config the model may propose")


def features(space: SearchSpace, config: Config) -> list[float]:
    """1, then per parameter x and x² with x = log2(value) (num_stages: the value itself)."""
    row = [1.0]
    for p in space.params:
        value = config[p.name]
        x = float(value) if p.kind == "num_stages" else math.log2(value)
        row += [x, x * x]
    return row


def steps(space: SearchSpace, a: Config, b: Config) -> int:
    """How many steps along the parameters' value lists `a` is from `b` (the grid's L1 distance)."""
    return sum(abs(p.values.index(a[p.name]) - p.values.index(b[p.name])) for p in space.params)


class Surrogate(SearchStrategy):
    """Ridge-regression cost model over the tuning's records; proposes the predicted fastest untried configs."""

    name = "surrogate"
    Options = SurrogateOptions

    @staticmethod
    def _can_fit(space: SearchSpace, timed: list[TuningRecord]) -> bool:
        """A quadratic per parameter needs three values of each (or all it has) among the timed records, and
        more records than coefficients; before that the model would extrapolate along an unseen axis."""
        if len(timed) < 2 * len(space.params) + 2:
            return False
        return all(len({r.config[p.name] for r in timed}) >= min(3, len(p.values)) for p in space.params)

    def propose(self, space: SearchSpace, records: Sequence[TuningRecord], budget: int) -> list[Config]:
        seen = {config_key(r.config) for r in records}
        want = min(budget, self.options.batch)
        timed = [r for r in records if r.status == "ok" and r.runtime_ms and space.contains(r.config)]
        if not self._can_fit(space, timed):  # too little to fit: nearest first, as `exhaustive`
            fresh = (c for c in space.by_distance() if config_key(c) not in seen)
            return list(itertools.islice(fresh, want))
        slowest = max(math.log(r.runtime_ms) for r in timed)
        rows, targets = [], []
        for r in records:
            if not space.contains(r.config):
                continue
            if r.status == "ok" and r.runtime_ms:
                rows.append(features(space, r.config))
                targets.append(math.log(r.runtime_ms))
            elif r.status != "ok":
                rows.append(features(space, r.config))
                targets.append(slowest + math.log(2.0))
        x, y = np.array(rows), np.array(targets)
        penalty = self.options.ridge * np.eye(x.shape[1])
        penalty[0, 0] = 0.0  # the intercept is not shrunk
        weights = np.linalg.solve(x.T @ x + penalty, x.T @ y)
        pool = (
            [space.config_at(i) for i in range(space.size)]
            if space.size <= GRID_LIMIT
            else list(itertools.islice(space.by_distance(), GRID_LIMIT))
        )
        # a trust region: within `reach` steps of the fastest configuration measured, where the model has
        # data on every side; the whole grid only once that neighbourhood is measured
        best = min(timed, key=lambda r: r.runtime_ms).config
        near = [c for c in pool if steps(space, c, best) <= self.options.reach and config_key(c) not in seen]
        scored = []
        for order, config in enumerate(near or [c for c in pool if config_key(c) not in seen]):
            scored.append((float(np.dot(features(space, config), weights)), order, config))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [config for _, _, config in scored[:want]]


@hookimpl
def register_search_strategies(register):
    register(Surrogate)
