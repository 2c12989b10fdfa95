"""How the reward adapters score completions: one small protocol to judge with, its two implementations
(in-process and over the HTTP service) and `score_completions`, which both adapters call.

The seam is one method, so that a client of the HTTP service (`tritongym serve`) can stand in for the
in-process Evaluator without the adapters changing:

    class EvaluationClient(Protocol):
        def evaluate_many(self, items: Sequence[tuple[str, str]]) -> list[EvaluationResult]: ...

`items` are (candidate source, problem spec) pairs, the spec being whatever `tritongym eval --problem`
takes (a suite name such as "relu", a .py file, SOURCE#NAME); the answer is one `EvaluationResult` per
pair, in order.  Code extraction, the no-code verdict and the reward a trainer sees stay on the adapter's
side (`score_completions`), so every client is judged by the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.learn.interaction import extract_code
from tritongym.core.models import Candidate, EvaluationResult, Problem
from tritongym.core.problems import load_problem

NO_CODE = "no_code"
"""The status reported for a completion with no code to evaluate (it earns reward 0, as in tritongym's own
rollouts)."""


@runtime_checkable
class EvaluationClient(Protocol):
    def evaluate_many(self, items: Sequence[tuple[str, str]]) -> list[EvaluationResult]:
        """Judge (candidate source, problem spec) pairs; one result per pair, in order."""


class InProcessClient:
    """An `Evaluator` in this process: sandboxes on this host (or on Ray actors with `executor = "ray"`),
    verdicts stored in the registry like any `tritongym eval`."""

    def __init__(
        self,
        evaluator: Evaluator | None = None,
        *,
        config: EvalConfig | str | Path | None = None,
        registry: api.RegistryArg = None,
        extra_plugins: Sequence[str] = (),
    ) -> None:
        self.evaluator = evaluator or api.make_evaluator(config, registry, extra_plugins)
        self._problems: dict[str, Problem] = {}

    def problem(self, spec: str) -> Problem:
        if spec not in self._problems:
            self._problems[spec] = load_problem(spec, self.evaluator.size)
        return self._problems[spec]

    def evaluate_many(self, items: Sequence[tuple[str, str]]) -> list[EvaluationResult]:
        pairs = [(Candidate(source=source, origin="reward adapter"), self.problem(spec)) for source, spec in items]
        return self.evaluator.evaluate_many(pairs)

    def close(self) -> None:
        self.evaluator.close()


class ServiceClient:
    """A `tritongym serve` service as the adapters' client: the trainer's hosts send kernels over HTTP and
    the service's GPUs judge them (its registry is the one writer).  A problem spec is a name the service
    serves, or a KernelBench-format `.py` file or SOURCE#NAME here, whose reference is sent with the candidate.  A task
    the service could not judge at all (it gave up after restarts) raises `ServiceError` naming the task:
    that is an infrastructure failure, not a verdict on the kernel, so it is never turned into a reward."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout_s: float | None = None,
        client=None,
    ) -> None:
        from tritongym.service.http_client import Client  # httpx only where a service is used

        self.client = client or Client(url, token)
        self.timeout_s = timeout_s

    @staticmethod
    def submission(source: str, spec: str) -> dict:
        """The candidate and its problem as `tritongym client submit --problem SPEC` sends them."""
        from tritongym.service.protocol import problem_fields

        return {"source": source, **problem_fields(spec), "origin": "reward adapter"}

    def evaluate_many(self, items: Sequence[tuple[str, str]]) -> list[EvaluationResult]:
        from tritongym.core.errors import ServiceError

        views = self.client.evaluate_many([self.submission(s, p) for s, p in items], timeout_s=self.timeout_s)
        failed = [v for v in views if v.result is None]
        if failed:
            raise ServiceError(
                f"the service judged {len(views) - len(failed)} of {len(views)} kernels; task {failed[0].id} "
                f"({failed[0].problem}) ended {failed[0].state}: {failed[0].error}"
            )
        return [v.result for v in views]

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()


@dataclass
class Scored:
    """One completion's reward and what it rests on (`result` is None when there was no code)."""

    reward: float
    status: str
    message: str
    result: EvaluationResult | None = None

    def extras(self) -> dict[str, float | str]:
        """The verdict as flat, same-keyed values a trainer can log per sample: numbers averaged, strings
        kept.  `speedup` is NaN where nothing was timed (an incorrect kernel, or triton-cpu, which does not
        time), not a zero that would read as a judgement."""
        result = self.result
        speedup = result.speedup if result is not None and result.speedup is not None else math.nan
        return {
            "score": self.reward,
            "status": self.status,
            "correct": float(bool(result and result.correct)),
            "hacked": float(bool(result and result.hacked)),
            "speedup": float(speedup),
            "kernel_id": result.kernel_id if result is not None else "",
            "message": self.message,
        }


def score_completions(
    client: EvaluationClient, texts: Sequence[str], problems: Sequence[str], assistant_prefill: str = ""
) -> list[Scored]:
    """Extract each text's code (the last ```python block, `assistant_prefill` + text, as rollouts do),
    judge all of them in one batch, and return one `Scored` per text, in order."""
    if len(texts) != len(problems):
        raise ConfigError(f"{len(texts)} completions but {len(problems)} problem names: one problem per completion")
    scored: list[Scored | None] = [None] * len(texts)
    to_judge: list[int] = []
    for i, (text, problem) in enumerate(zip(texts, problems)):
        if not isinstance(problem, str) or not problem:
            raise ConfigError(f"completion {i} names no tritongym problem (got {problem!r}); e.g. 'relu'")
        extraction = extract_code(assistant_prefill + text)
        if extraction.code is None:
            scored[i] = Scored(reward=0.0, status=NO_CODE, message=f"nothing was evaluated: {extraction.reason}")
        else:
            to_judge.append(i)
    if to_judge:
        codes = [extract_code(assistant_prefill + texts[i]).code or "" for i in to_judge]
        results = client.evaluate_many([(code, problems[i]) for code, i in zip(codes, to_judge)])
        if len(results) != len(to_judge):
            raise ConfigError(f"the evaluation client returned {len(results)} results for {len(to_judge)} kernels")
        for i, result in zip(to_judge, results):
            scored[i] = Scored(
                reward=result.reward.total, status=result.status.value, message=result.message, result=result
            )
    return [s for s in scored if s is not None]
