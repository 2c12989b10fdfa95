"""Triton's compile time, kept off a candidate's time budget up to a cap (`CompileClock`).

A GPU worker gives its shared GPU hold back while Triton compiles (`gpu_worker.Channel.cpu_only`: an `UNLK`
frame whose payload is `COMPILING`, then `RSHR` once the compiler returns).  How long a compile takes depends on
the machine's load, not on the candidate: on one H200, judged beside a batch of 130 kernels, FlagGems' `mm` (14
autotuned configs, tuned again for each shape set's sizes) ran past the default 120 s budget in its import and
correctness trials and was refused as a `timeout` (`benchmarks/results/mutation-triton-cuda-h200.json`), though
the field corpus (a 300 s budget) judged it `ok` in all five repeats; the mutation benchmark's witness, alone on
the same GPU, took 60 s to run it once at each of its shapes (`mutation-triton-cuda-h200-recheck-partial.log`).
So the task driver moves the candidate's deadline on by each compile's seconds, as by its waits for the GPU lock.

The worker's frames come from the candidate's own process, so a candidate can send them too: what they can buy is
bounded by `allowance_s` per task, after which compile time counts like any other.  A compile that is under way
counts as it goes (`pending_s`), so a long compile is not killed at the old deadline before its `RSHR` comes.
"""

from __future__ import annotations

from tritongym.core.worker.protocol import COMPILING

DEFAULT_ALLOWANCE_S = 600.0
"""Compile seconds per task not counted against the candidate's budget: ten minutes of compiles covers an
autotuned kernel of dozens of configs at every shape set on a loaded machine; beyond it a candidate that only
compiles is stopped by its timeout as before."""


class CompileClock:
    """The compile seconds excused so far in one task, and the one under way (`started`)."""

    def __init__(self, allowance_s: float = DEFAULT_ALLOWANCE_S) -> None:
        self.allowance_s = allowance_s
        self.excused_s = 0.0
        self.started: float | None = None  # when the worker gave its hold back to compile; None: not compiling

    def given_back(self, now: float, payload: bytes) -> None:
        """An `UNLK`: a compile starts when its payload says so; any other release ends none."""
        self.started = now if payload == COMPILING else None

    def pending_s(self, now: float) -> float:
        """The seconds the compile under way would be excused if it ended now (0 when none is under way)."""
        if self.started is None:
            return 0.0
        return max(0.0, min(now - self.started, self.allowance_s - self.excused_s))

    def taken_back(self, now: float, resumed: bool) -> float:
        """A hold taken again (`RSHR` after a compile when `resumed`, or `SHAR`/`LOCK`): the seconds to move the
        deadline on by, counted as excused."""
        excused = self.pending_s(now) if resumed else 0.0
        self.excused_s += excused
        self.started = None
        return excused

    def said(self) -> str:
        """What a timeout's message adds: the compile seconds that were not counted, if any."""
        return f", {self.excused_s:.3g} s of Triton compiles not counted" if self.excused_s else ""
