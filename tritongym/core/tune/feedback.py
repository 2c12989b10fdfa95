"""Tuning as feedback: after a correct, timed turn, its kernel is tuned and the next prompt says what that found.

`[rollout] tune_feedback = n` (option, off by default) makes each correct kernel of a training or test-time
turn worth `n` variants of tuning through the same evaluator and registry, and the model reads, next turn,
e.g. "tuned: 1.8x faster with BLOCK_M=128, num_warps=8": the configuration a search would find, so it can
learn to write it.  Tuning never changes the turn's reward (that judges the model's own kernel), and its
records are the registry's like any tuning, so a kernel written twice is tuned once.  Only timed verdicts
are tuned: a backend that measures no time (triton-cpu) cannot say faster, and tuning there would only
spend evaluations.
"""

from __future__ import annotations

from collections.abc import Sequence

from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate, EvaluationResult, Problem, Status
from tritongym.core.tune.summary import ProblemTuning
from tritongym.core.tune.tuner import Tuner


class FeedbackTuner:
    """Tunes the correct, timed kernels of an evaluated batch; `line_for` gives each one's feedback line."""

    def __init__(self, evaluator: Evaluator, budget: int, strategy: str = "exhaustive") -> None:
        search = evaluator.host.create("search_strategy", strategy)
        self.tuner = Tuner(evaluator, search, budget, transfer=1)
        self.tuned: dict[tuple[str, str], ProblemTuning] = {}

    def tune_batch(self, pairs: Sequence[tuple[Candidate, Problem]], results: Sequence[EvaluationResult]) -> int:
        """Tune every kernel of the batch that is `ok` with a speedup (timed) and not tuned yet; returns how
        many were tuned now."""
        count = 0
        for (candidate, problem), result in zip(pairs, results):
            key = (problem.name, result.kernel_id)
            if result.status != Status.ok or result.speedup is None or key in self.tuned:
                continue
            self.tuned[key] = self.tuner.tune(problem, candidate, "a training turn")
            count += 1
        return count

    def line_for(self, problem: str, result: EvaluationResult | None) -> str | None:
        """The feedback line for a turn's verdict, where its kernel was tuned and tuning has something to say."""
        if result is None:
            return None
        tuning = self.tuned.get((problem, result.kernel_id))
        return tuning.feedback_line() if tuning is not None else None
