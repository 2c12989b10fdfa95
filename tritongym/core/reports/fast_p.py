"""Fast@p per turn, last-turn and best-of-history, exactly as the kernel-generation papers report them.

Fast@p is the fraction of *all* samples whose kernel is correct, not hacked, and at least p times faster
than the reference (KernelBench; Dr. Kernel).  Multi-turn refinement reports it two ways at every turn t:

- **last-turn** Fast@p: what each sample holds *at* turn t;
- **best-of-history** Fast@p: whether *any* of the sample's turns 1..t met the bar (the best turn so far).

Conventions, stated once for every function here:

- **Denominator**: every sample counts.  A hacked kernel, an incorrect one, a response without code and a
  sample with no turn yet are all failures; none is dropped from the denominator.
- **Early stopping**: a sample that ended before turn t (it stopped when correct, or ran out of turns)
  contributes its last turn to turn t, as if that turn were repeated.  This is how the field reports
  sequential test-time scaling with early exit: stopping on a good kernel keeps it, so last-turn numbers
  are comparable across samples of different lengths.  A sample with a gap in its turn numbers likewise
  contributes its latest turn before t.  `active` says how many samples really reached turn t.
- **Correct** means correct *and not hacked* (the reward's C ∈ {0, 1}); a hacked kernel whose outputs
  matched is counted under `hacked`, never under `correct` or Fast@p.
- **Untimed kernels**: a correct, honest turn whose `speedup` is None (the triton-cpu backend checks
  correctness but does not time; a timing that failed) has an *unknown* speedup.  Counting it as 0 would
  report a correct kernel as slow, counting it as ≥ p would invent a speedup; either way the number
  would be a fact about the backend, not about the kernels.  So a Fast@p value is None ("unknown")
  exactly when it cannot be determined: for last-turn Fast@p, when any sample's turn-t result is correct,
  honest and untimed; for best-of-history, when any sample has such a turn in 1..t and no timed turn in
  1..t that already meets p (a sample that met p on a timed turn counts whatever its untimed turns were).
  Correct, hacked and no-code rates never depend on timing and are always known.

Pure: no registry, no I/O (`run_report` builds the samples from stored turns).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["P_VALUES", "SampleTurn", "TurnMetrics", "FastPTable", "p_key", "fast_at", "fast_p_table"]

P_VALUES: tuple[float, ...] = (1.0, 1.2, 1.5, 2.0)
"""The thresholds reported: Fast@1 (not slower), Fast@1.2 (the papers' headline), Fast@1.5, Fast@2."""


def p_key(p: float) -> str:
    """The key a threshold has in `TurnMetrics.fast` / `fast_best` (JSON objects need string keys): 1.0 ->
    "1", 1.2 -> "1.2"."""
    return f"{p:g}"


class SampleTurn(BaseModel):
    """One turn of one sample, reduced to what Fast@p needs."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=1, description="1-based position of the turn in its sample")
    has_code: bool = Field(True, description="False: the response held no code block (never evaluated)")
    correct: bool = Field(False, description="outputs matched the reference (the evaluation's verdict)")
    hacked: bool = Field(False, description="a check found it cheating; never counts as correct or fast")
    speedup: float | None = Field(None, description="reference time / kernel time; None: not timed")

    @property
    def success(self) -> bool:
        """Correct and honest (the reward's C = 1)."""
        return self.has_code and self.correct and not self.hacked

    @property
    def timed(self) -> bool:
        return self.speedup is not None and not math.isnan(self.speedup)

    def meets(self, p: float) -> bool | None:
        """Whether this turn counts for Fast@p: True/False, or None when it is correct but untimed."""
        if not self.success:
            return False
        if not self.timed:
            return None
        return self.speedup >= p


class TurnMetrics(BaseModel):
    """The rates at one turn t over all samples (fractions in [0, 1]; None: unknown, see the module doc)."""

    turn: int
    samples: int = Field(description="the denominator: every sample")
    active: int = Field(description="samples that really reached turn t (the rest contribute their last turn)")
    correct: float = Field(description="last-turn: correct and not hacked at turn t")
    correct_best: float = Field(description="best-of-history: correct and not hacked at some turn <= t")
    hacked: float = Field(description="last-turn: the turn-t kernel was hacked")
    no_code: float = Field(description="last-turn: the turn-t response held no code")
    fast: dict[str, float | None] = Field(description="last-turn Fast@p, keyed by p_key(p)")
    fast_best: dict[str, float | None] = Field(description="best-of-history Fast@p, keyed by p_key(p)")


class FastPTable(BaseModel):
    """Per-turn metrics for turns 1..T (T: the longest sample); `untimed_correct` counts correct, honest turns
    without a speedup, the reason a Fast@p is unknown."""

    samples: int
    turns: list[TurnMetrics] = Field(default_factory=list)
    ps: list[float] = Field(default_factory=lambda: list(P_VALUES))
    untimed_correct: int = 0

    def at(self, turn: int) -> TurnMetrics:
        """The row for turn `turn` (1-based)."""
        return self.turns[turn - 1]

    @property
    def last(self) -> TurnMetrics | None:
        return self.turns[-1] if self.turns else None


def _ordered(samples: Sequence[Sequence[SampleTurn]]) -> list[list[SampleTurn]]:
    ordered = []
    for index, sample in enumerate(samples):
        turns = sorted(sample, key=lambda s: s.turn)
        numbers = [s.turn for s in turns]
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"sample {index} has two turns with the same number: {numbers}")
        ordered.append(turns)
    return ordered


def _at(sample: list[SampleTurn], t: int) -> SampleTurn | None:
    """The turn the sample holds at turn t: its latest turn numbered <= t (None: no turn yet)."""
    held = None
    for turn in sample:
        if turn.turn > t:
            break
        held = turn
    return held


def _history(sample: list[SampleTurn], t: int) -> list[SampleTurn]:
    return [turn for turn in sample if turn.turn <= t]


def _meets_any(turns: list[SampleTurn], p: float) -> bool | None:
    """Best-of-history for one sample: True if a turn met p, None if only an untimed correct turn might have."""
    verdicts = [turn.meets(p) for turn in turns]
    if any(v is True for v in verdicts):
        return True
    if any(v is None for v in verdicts):
        return None
    return False


def _fraction(verdicts: list[bool | None], n: int) -> float | None:
    if any(v is None for v in verdicts):
        return None
    return sum(bool(v) for v in verdicts) / n


def fast_at(
    samples: Sequence[Sequence[SampleTurn]], p: float, turn: int, best_of_history: bool = False
) -> float | None:
    """Fast@p at `turn` (1-based): last-turn, or best-of-history over turns 1..turn; None when unknown (a correct
    kernel that decides it was not timed).  Conventions (denominator, early stopping): the module doc."""
    ordered = _ordered(samples)
    if not ordered:
        return None
    if best_of_history:
        verdicts = [_meets_any(_history(s, turn), p) for s in ordered]
    else:
        verdicts = [held.meets(p) if (held := _at(s, turn)) is not None else False for s in ordered]
    return _fraction(verdicts, len(ordered))


def fast_p_table(samples: Sequence[Sequence[SampleTurn]], ps: Sequence[float] = P_VALUES) -> FastPTable:
    """Every rate at every turn t = 1..T, T the highest turn number of any sample.

    `samples`: one list of turns per sample (trajectory), turns numbered from 1, in any order, possibly
    ending early or empty.  Rates are over all samples; a sample that ended before t contributes its last
    turn (see the module doc for the conventions and for why an untimed correct kernel makes Fast@p None).
    """
    ordered = _ordered(samples)
    n = len(ordered)
    table = FastPTable(
        samples=n,
        ps=list(ps),
        untimed_correct=sum(turn.success and not turn.timed for s in ordered for turn in s),
    )
    if n == 0:
        return table
    last_turn = max((turn.turn for s in ordered for turn in s), default=0)
    for t in range(1, last_turn + 1):
        held = [_at(s, t) for s in ordered]
        history = [_history(s, t) for s in ordered]
        table.turns.append(
            TurnMetrics(
                turn=t,
                samples=n,
                active=sum(any(turn.turn == t for turn in s) for s in ordered),
                correct=sum(h is not None and h.success for h in held) / n,
                correct_best=sum(any(turn.success for turn in h) for h in history) / n,
                hacked=sum(h is not None and h.hacked for h in held) / n,
                no_code=sum(h is not None and not h.has_code for h in held) / n,
                fast={p_key(p): _fraction([h.meets(p) if h is not None else False for h in held], n) for p in ps},
                fast_best={p_key(p): _fraction([_meets_any(h, p) for h in history], n) for p in ps},
            )
        )
    return table
