"""Multi-turn rollouts: K samples per prompt × up to T turns, every turn evaluated through the gym.

Per turn, a chunk of live trajectories is generated in one engine call, their code is extracted, and every
extracted kernel is evaluated in one `Evaluator.evaluate_many` call (parallel sandboxes; the registry
answers kernels it already knows without a worker); two chunks alternate so generation overlaps evaluation.
A response without code gets the no-code verdict and zero reward without touching a worker.  Every turn is
stored in the registry's `turns` table with its prompt, response, evaluation and reward as soon as it is
known; the learner fills in advantages later.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.generation import Generation, Message
from tritongym.core.interfaces import GenerationEngine
from tritongym.core.learn.interaction import Interaction, Turn
from tritongym.core.models import Candidate, EvaluationResult, Problem, RewardBreakdown
from tritongym.core.registry import Registry
from tritongym.core.tune.feedback import FeedbackTuner

if TYPE_CHECKING:
    from tritongym.core.learn.run_setup import RunParts

NO_CODE = "no_code"
"""Status of a turn whose response held no code block: never evaluated, reward 0."""


@dataclass
class TurnRecord:
    """One turn of one trajectory, with everything training and reports need."""

    problem: Problem
    group: int
    trajectory: int
    sample: int
    turn: int
    messages: list[Message]
    generation: Generation
    code: str | None
    result: EvaluationResult | None
    reward: RewardBreakdown
    feedback: str  # the evaluation as the model sees it next turn (or the no-code verdict)
    status: str
    turn_id: int | None = None  # row in the registry's turns table

    @property
    def correct(self) -> bool:
        return self.result is not None and self.result.honest_and_correct

    @property
    def hacked(self) -> bool:
        return self.result is not None and self.result.hacked

    def to_json(self) -> dict:
        """The trajectory-file form (`tritongym rollouts`), also what `tritongym sft` reads."""
        return {
            "problem": self.problem.name,
            "group": self.group,
            "trajectory": self.trajectory,
            "sample": self.sample,
            "turn": self.turn,
            "messages": self.messages,
            "response": self.generation.text,
            "code": self.code,
            "status": self.status,
            "reward": self.reward.total,
            "reward_components": self.reward.components,
            "speedup": self.result.speedup if self.result else None,
            "pr": self.result.pr if self.result else None,
            "correct": self.correct,
            "hacked": self.hacked,
            "evaluation_id": self.result.evaluation_id if self.result else None,
            "prompt_token_ids": self.generation.prompt_token_ids,
            "token_ids": self.generation.token_ids,
            "logprobs": self.generation.logprobs,
        }


@dataclass
class RolloutBatch:
    """The turns of one step, in generation order, plus timing counters for the step log."""

    turns: list[TurnRecord] = field(default_factory=list)
    generate_s: float = 0.0
    evaluate_s: float = 0.0
    evaluations: int = 0  # evaluations that ran a worker (registry hits excluded)
    generated_tokens: int = 0
    overlap_s: float = 0.0  # generation time during which an evaluation was running
    wait_s: float = 0.0  # time the caller waited for the judge (evaluation not hidden behind generation)


@dataclass
class RolloutTally:
    """Running totals over the batches of a run: what `tritongym rollouts` and `tritongym tts` report."""

    turns: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    reward_sum: float = 0.0
    evaluations: int = 0  # that ran a worker
    registry_hits: int = 0
    generate_s: float = 0.0
    evaluate_s: float = 0.0

    def add(self, batch: RolloutBatch) -> None:
        for record in batch.turns:
            self.statuses[record.status] = self.statuses.get(record.status, 0) + 1
            self.reward_sum += record.reward.total
            self.registry_hits += int(record.result is not None and record.result.cached)
        self.turns += len(batch.turns)
        self.evaluations += batch.evaluations
        self.generate_s += batch.generate_s
        self.evaluate_s += batch.evaluate_s

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.turns if self.turns else 0.0


class RolloutRunner:
    """Runs rollouts with one engine, one interaction and one evaluator; stores turns under `run_id`."""

    def __init__(
        self,
        engine: GenerationEngine,
        interaction: Interaction,
        evaluator: Evaluator,
        registry: Registry | None = None,
        run_id: int | None = None,
        stop_when_correct: bool = False,
        overlap: bool = True,
        tune_feedback: FeedbackTuner | None = None,
    ) -> None:
        self.engine = engine
        self.interaction = interaction
        self.evaluator = evaluator
        self.registry = registry
        self.run_id = run_id
        self.stop_when_correct = stop_when_correct
        self.overlap = overlap
        self.tune_feedback = tune_feedback
        self._next_trajectory = 0
        self._seeds: dict[str, list[Turn]] = {}

    @classmethod
    def for_run(cls, parts: RunParts, registry: Registry | None = None, run_id: int | None = None) -> RolloutRunner:
        """The runner a run config describes: its engine, interaction and evaluator, and `[rollout]` options.
        A policy on one of the judge's GPUs (`RunParts.placement`) never generates while the judge works: its
        kernels would run beside a candidate's timing, so `overlap` is off whatever `[rollout]` says."""
        rollout = parts.config.rollout
        tune_feedback = None
        if rollout.tune_feedback:
            tune_feedback = FeedbackTuner(parts.evaluator, rollout.tune_feedback, rollout.tune_feedback_strategy)
        return cls(
            parts.engine,
            parts.interaction,
            parts.evaluator,
            registry,
            run_id,
            stop_when_correct=rollout.stop_when_correct,
            overlap=rollout.overlap and not parts.placement.shared,
            tune_feedback=tune_feedback,
        )

    @classmethod
    @contextlib.contextmanager
    def session(cls, parts: RunParts, registry: Registry | None, kind: str) -> Iterator[RolloutRunner]:
        """A run of `kind` ("rollouts", "tts") from start to end: the registry run opened, the engine
        started, the runner yielded; then the parts closed and the run finished, whatever happened."""
        config = parts.config
        run_id = registry.start_run(kind, config.name, config.model_dump(mode="json")) if registry else None
        try:
            parts.engine.start(config.model, config.sampling)
            yield cls.for_run(parts, registry, run_id)
        finally:
            parts.close()
            if registry is not None and run_id is not None:
                registry.finish_run(run_id)

    def collect(
        self,
        problems: list[Problem],
        samples: int,
        step: int = 0,
        progress: Callable[[str], None] | None = None,
        first_group: int = 0,
        first_trajectory: int | None = None,
        seeds: dict[str, list[Turn]] | None = None,
    ) -> RolloutBatch:
        """Every problem is one group of `samples` trajectories.  Groups are numbered from `first_group` and
        trajectories from `first_trajectory` (default: where the previous call stopped), so that processes
        sharing a step can number their shares as one process would number the whole step.

        With `overlap` the trajectories are split into two chunks that take turns: while one chunk's kernels
        are evaluated (sandboxed worker processes), the engine generates the other chunk's next turn, so
        neither the model nor the workers wait for the other.  Each chunk still runs its turns in order.

        `seeds` (problem name -> earlier kernels as turns, e.g. the registry's best) are shown in every prompt
        of that problem's conversations (`Interaction.next_messages`)."""
        self._seeds = seeds or {}
        batch = RolloutBatch()
        live: list[dict] = []
        if first_trajectory is not None:
            self._next_trajectory = first_trajectory
        for index, problem in enumerate(problems):
            for sample in range(samples):
                live.append(
                    {
                        "problem": problem,
                        "group": first_group + index,
                        "sample": sample,
                        "trajectory": self._next_trajectory,
                    }
                )
                self._next_trajectory += 1
        histories: dict[int, list[Turn]] = {t["trajectory"]: [] for t in live}
        chunks = [live[: len(live) // 2], live[len(live) // 2 :]] if self.overlap and len(live) > 1 else [live]
        ready: deque[tuple[int, list[dict]]] = deque((0, chunk) for chunk in chunks)  # (turn, trajectories)
        in_flight = None  # (turn, chunk, generations, extractions, conversations, future)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollout-eval") as pool:
            while ready or in_flight is not None:
                generated, generating_s = None, 0.0
                if ready:
                    turn, chunk = ready.popleft()
                    started = time.perf_counter()
                    generated = (turn, chunk, *self._generate(chunk, histories))
                    generating_s = time.perf_counter() - started
                    batch.generate_s += generating_s
                if in_flight is not None:
                    turn, chunk, generations, extractions, conversations, future = in_flight
                    waited = time.perf_counter()
                    results, seconds = future.result()
                    batch.wait_s += time.perf_counter() - waited
                    batch.evaluate_s += seconds
                    batch.overlap_s += min(generating_s, seconds)  # both started as this round began
                    still_live = self._record(
                        batch, step, turn, chunk, generations, extractions, conversations, results, histories, progress
                    )
                    if still_live and turn + 1 < self.interaction.options.max_turns:
                        ready.append((turn + 1, still_live))
                    in_flight = None
                if generated is not None:
                    turn, chunk, generations, extractions, conversations = generated
                    to_evaluate = [
                        (Candidate(source=x.code, origin=f"step {step} turn {turn}"), t["problem"])
                        for t, x in zip(chunk, extractions)
                        if x.code is not None
                    ]
                    future = pool.submit(self._evaluate, to_evaluate) if to_evaluate else _done(([], 0.0))
                    in_flight = (turn, chunk, generations, extractions, conversations, future)
        return batch

    def _evaluate(self, pairs) -> tuple[list[EvaluationResult], float]:
        """A chunk's kernels, judged on the evaluation thread; with the seconds it took there."""
        started = time.perf_counter()
        results = self.evaluator.evaluate_many(pairs)
        if self.tune_feedback is not None:  # tuned here, on the evaluation thread that owns the evaluator
            self.tune_feedback.tune_batch(pairs, results)
        return results, time.perf_counter() - started

    def _generate(self, chunk: list[dict], histories: dict[int, list[Turn]]):
        """One engine call for a chunk's next turn: (generations, extractions, conversations)."""
        conversations = [
            self.interaction.next_messages(
                t["problem"], histories[t["trajectory"]], self._seeds.get(t["problem"].name, ())
            )
            for t in chunk
        ]
        prefill = self.interaction.options.assistant_prefill
        # an engine continues a final assistant message rather than starting a new one (the prefill)
        to_engine = (
            [c + [{"role": "assistant", "content": prefill}] for c in conversations] if prefill else conversations
        )
        generations = self.engine.generate(to_engine)
        if len(generations) != len(chunk):
            raise RuntimeError(
                f"engine '{self.engine.name}' returned {len(generations)} generations for {len(chunk)} conversations"
            )
        return generations, [self.interaction.extract(g.text) for g in generations], conversations

    def _record(
        self, batch, step, turn, chunk, generations, extractions, conversations, results, histories, progress
    ) -> list[dict]:
        """Store a chunk's evaluated turn (registry, batch, histories); returns the trajectories that go on."""
        results = iter(results)
        still_live = []
        for t, generation, extraction, messages in zip(chunk, generations, extractions, conversations):
            batch.generated_tokens += len(generation.token_ids)
            if extraction.code is None:
                result, reward, status = None, RewardBreakdown(), NO_CODE
            else:
                result = next(results)
                batch.evaluations += 0 if result.cached else 1
                reward, status = result.reward, result.status.value
            line = self.tune_feedback.line_for(t["problem"].name, result) if self.tune_feedback else None
            history_turn = self.interaction.make_turn(generation.text, extraction, result, (line,) if line else ())
            record = TurnRecord(
                problem=t["problem"],
                group=t["group"],
                trajectory=t["trajectory"],
                sample=t["sample"],
                turn=turn,
                messages=messages,
                generation=generation,
                code=extraction.code,
                result=result,
                reward=reward,
                feedback=history_turn.feedback,
                status=status,
            )
            if self.registry is not None and self.run_id is not None:
                record.turn_id = self.registry.add_turn(
                    self.run_id,
                    result,
                    sample=t["trajectory"],
                    turn=turn,
                    prompt=json.dumps(messages),
                    response=generation.text,
                    problem=t["problem"],
                    step=step,
                    status=status,
                    message=history_turn.feedback if result is None else None,
                    reward=reward,
                )
            batch.turns.append(record)
            histories[t["trajectory"]].append(history_turn)
            if progress is not None:
                progress(status)
            if not (self.stop_when_correct and record.correct):
                still_live.append(t)
        return still_live


def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def write_trajectories(path: str | Path, turns: list[TurnRecord]) -> None:
    """Append turns to a JSONL file, one turn per line (grouped back into trajectories by `trajectory`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for record in turns:
            f.write(json.dumps(record.to_json()) + "\n")
