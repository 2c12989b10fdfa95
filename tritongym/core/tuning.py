"""What `tritongym tune` and its search strategies share: a search space, a configuration, a measured record.

A *configuration* maps the names of a kernel's tunable parameters to integers, e.g. `{"BLOCK": 512,
"num_warps": 8}`.  The parameters are found in the source (`tritongym.core.tune.space`); each has the
value the source uses (`current`) and the values worth trying around it (`values`, ascending).  The grid
is every combination of those values; a strategy proposes points of it.

This module is in the kernel so that a search strategy, like every plugin, needs nothing else: it reads a
`SearchSpace` and the `TuningRecord`s measured so far and returns configurations.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Config = dict[str, int]
"""A configuration: parameter name -> value."""

ParamKind = Literal["constexpr", "num_warps", "num_stages"]


def config_key(config: Mapping[str, int]) -> str:
    """A configuration as canonical JSON: the text records store and compare."""
    return json.dumps(dict(config), sort_keys=True, separators=(",", ":"))


def config_text(config: Mapping[str, int]) -> str:
    """A configuration for people: `BLOCK=512 num_warps=8`."""
    return " ".join(f"{name}={value}" for name, value in config.items()) or "(none)"


class TuneParam(BaseModel):
    """One tunable parameter: where the source sets it, its value there, and the values to try."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="unique within the space: the constexpr's name, qualified only where needed")
    kind: ParamKind
    kernel: str = Field(description="the @triton.jit function it configures")
    current: int = Field(description="the value the source uses (num_warps/num_stages absent: Triton's default)")
    values: list[int] = Field(description="the values to try, ascending; `current` among them")
    where: str = Field(description="where the source sets it, in words, with the line")
    autotuned: bool = Field(default=False, description="set by an @triton.autotune config, not at the launch")


class SearchSpace(BaseModel):
    """The tunable parameters of one kernel source and the grid of their values.

    `points` are whole configurations to measure before the grid (each config of an `@triton.autotune`
    list); the tuner measures them itself, so a strategy need only walk the grid."""

    model_config = ConfigDict(extra="forbid")

    params: list[TuneParam] = Field(default_factory=list)
    points: list[Config] = Field(default_factory=list)
    fixed: list[str] = Field(
        default_factory=list, description="parameters found but not tunable from the source, each with why"
    )

    def current(self) -> Config:
        """The grid's centre: the values the source uses (for an autotuned kernel, the config tuned around)."""
        return {p.name: p.current for p in self.params}

    @property
    def size(self) -> int:
        """How many configurations the grid holds."""
        return math.prod(len(p.values) for p in self.params) if self.params else 0

    def contains(self, config: Mapping[str, int]) -> bool:
        return set(config) == {p.name for p in self.params} and all(config[p.name] in p.values for p in self.params)

    def config_at(self, index: int) -> Config:
        """The grid's configuration number `index` (0 <= index < size; the last parameter varies fastest)."""
        if not 0 <= index < self.size:
            raise IndexError(f"grid index {index} outside 0..{self.size - 1}")
        config: Config = {}
        for p in reversed(self.params):
            index, digit = divmod(index, len(p.values))
            config[p.name] = p.values[digit]
        return {p.name: config[p.name] for p in self.params}

    def by_distance(self) -> Iterator[Config]:
        """Every configuration of the grid once, nearest the centre first.

        The distance is the number of steps along each parameter's value list, summed (one step is a factor
        of two for a block size or num_warps, one stage for num_stages).  Within one distance the first
        parameter moves first, halving before doubling.  Lazy: a large grid costs only what is taken."""
        if not self.params:
            return
        centre = [p.values.index(p.current) for p in self.params]
        widths = [len(p.values) for p in self.params]
        reach = [max(c, w - 1 - c) for c, w in zip(centre, widths)]
        # the farthest the parameters from i onwards can still move: prunes branches that cannot end at d
        farthest = [sum(reach[i:]) for i in range(len(reach) + 1)]

        def walk(i: int, left: int, chosen: list[int]) -> Iterator[Config]:
            if i == len(self.params):
                if left == 0:
                    yield {p.name: p.values[j] for p, j in zip(self.params, chosen)}
                return
            if farthest[i] < left:
                return
            steps = [s for k in range(1, left + 1) for s in (-k, k)] + [0]
            for step in steps:
                j = centre[i] + step
                if 0 <= j < widths[i]:
                    yield from walk(i + 1, left - abs(step), [*chosen, j])

        for distance in range(farthest[0] + 1):
            yield from walk(0, distance, [])


class TuningRecord(BaseModel):
    """One configuration measured: the variant it baked into and the verdict the pipeline gave it."""

    model_config = ConfigDict(extra="forbid")

    config: Config
    kernel_id: str = Field(description="the variant: the source with this configuration baked in")
    strategy: str = Field(description="who proposed it: 'source', 'transfer', 'autotune' or a strategy's name")
    status: str = Field(description="the evaluation's status; 'invalid' for a rewrite that did not parse")
    runtime_ms: float | None = Field(default=None, description="median runtime, where the backend times")
    runtime_iqr_ms: float | None = Field(default=None, description="its interquartile range")
    evaluation_id: int | None = None
    message: str = ""
    cached: bool = Field(default=False, description="answered from the registry: no worker ran for it")

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class TuningContext(BaseModel):
    """What a tuning record is valid for: one source kernel on one problem, backend, device class and
    evaluation protocol (the size is part of the problem key, and kept beside it to be read)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    problem_key: str
    problem_name: str
    source_kernel_id: str
    backend: str
    device_class: str
    size: str
    protocol: str
