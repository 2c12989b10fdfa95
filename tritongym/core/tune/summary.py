"""What `tritongym tune` reports: per problem, what was found, measured and kept; `api.tune` returns it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tritongym.core.tuning import Config, TuneParam, TuningRecord

UNTIMED_NOTE = (
    "backend '{backend}' measures no time: every variant was judged for correctness and honesty only, so no "
    "speedup can be measured here and the best is simply the first correct configuration measured (the kernel "
    "as written); tune on a timing backend (triton-cuda) to choose by speed"
)


class ProblemTuning(BaseModel):
    """The tuning of one problem's kernel on one backend, device class and size."""

    problem: str
    status: Literal["tuned", "no_parameters", "source_not_ok", "out_of_time", "nothing_measured"] = Field(
        description="tuned: at least one variant was measured; out_of_time: the time budget ran out first; "
        "nothing_measured: a budget of 0 variants (the kernel as written judged alone)"
    )
    message: str
    source_kernel_id: str
    source_origin: str = Field(description="where the kernel tuned came from: the registry's best, or a file")
    backend: str
    device_class: str
    size: str
    strategy: str
    params: list[TuneParam] = Field(default_factory=list, description="the tunable parameters found")
    fixed: list[str] = Field(default_factory=list, description="parameters found but not tunable, with why")
    space_size: int = 0
    variants: int = Field(default=0, description="configurations measured besides the kernel as written")
    evaluated: int = Field(default=0, description="verdicts reached now (the kernel as written included)")
    cached: int = Field(default=0, description="answers the registry already had: no worker ran")
    rejected: int = Field(default=0, description="variants not ok (incorrect, crashed, hacked, refused)")
    transferred_from: str | None = Field(
        default=None, description="the earlier tuning whose best configurations were tried first"
    )
    best_config: Config | None = None
    best_kernel_id: str | None = None
    source_runtime_ms: float | None = None
    best_runtime_ms: float | None = None
    speedup: float | None = Field(default=None, description="source runtime / best runtime, where timed")
    timed: bool = False
    note: str = ""
    stopped_by: Literal["budget", "time_budget", "exhausted", ""] = ""
    wall_s: float = 0.0
    records: list[TuningRecord] = Field(default_factory=list, description="in the order measured; source first")

    def feedback_line(self) -> str | None:
        """What tuning found, in one line a model can act on next turn: `tuned: 1.8x faster with
        BLOCK_M=128, num_warps=8 (best of 6 configurations tried)`, naming only the values that changed.
        None where nothing was timed (an untimed backend cannot say faster) or nothing was tuned."""
        if self.status != "tuned" or not self.timed or not self.records:
            return None
        tried = f"{self.variants} other configuration{'s' if self.variants != 1 else ''} tried"
        written = self.records[0].config
        changed = {k: v for k, v in (self.best_config or {}).items() if written.get(k) != v}
        if self.speedup is None or self.speedup <= 1.0 or not changed:
            return f"tuned: no faster launch configuration than yours ({tried}, every one judged)."
        values = ", ".join(f"{k}={v}" for k, v in changed.items())
        return f"tuned: {self.speedup:.2g}x faster with {values} ({tried}, every one judged)."


class TuneSummary(BaseModel):
    """`tritongym tune`: the settings and one `ProblemTuning` per problem."""

    strategy: str
    strategy_options: dict
    budget: int
    time_budget_s: float | None
    transfer: int
    backend: str
    device_class: str
    size: str
    registry: str
    problems: list[ProblemTuning]
    wall_s: float

    @property
    def ok(self) -> bool:
        """Every problem was tuned (its kernel was correct and had something to tune)."""
        return all(p.status == "tuned" for p in self.problems)
