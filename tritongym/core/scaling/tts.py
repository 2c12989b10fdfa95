"""Sequential test-time scaling (`tritongym tts`, ARCHITECTURE.md §7): for each problem, N samples of T turns, each
turn seeing the evaluation of the earlier ones, and the registry as memory.

- Every turn is evaluated through the registry: a kernel it already judged (in any run, training included)
  costs no worker, so a repeated run is answered from the registry alone.
- Every turn is stored under a run of kind "tts", which `tritongym report RUN_ID` turns into last-turn and
  best-of-history Fast@p tables.
- `[tts] seed_from_registry = k` shows the k best honest kernels the registry knows for the problem (from
  any earlier run) in every prompt, before the conversation's own turns: a kernel found in training seeds
  the search.
- `[tts] tune_budget = n` ends the run by tuning the best kernel of each problem that has an honest one
  (`tritongym tune`, `tune_strategy`, n variants, the same evaluator and registry): what the samples found
  gets its launch configuration tuned for this device before the run reports.
- Context: unless the run config's `[interaction]` names a `context`, test-time scaling uses `top-w`
  (the task plus the w best earlier turns by reward, w = 4), as the field does for long horizons.

Nothing here trains, so any engine works, `openai` included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from tritongym.core.errors import ConfigError
from tritongym.core.learn.interaction import Interaction, Turn
from tritongym.core.learn.run_config import RunConfig
from tritongym.core.models import EvaluationResult, Problem
from tritongym.core.registry import Registry
from tritongym.core.tune.summary import ProblemTuning

TTS_CONTEXT = "top-w"
"""The context mode of a test-time run whose config does not choose one."""


class TTSSummary(BaseModel):
    """What a test-time run did: where its turns are and what they cost."""

    run_id: int | None
    problems: int
    samples: int
    turns: int
    statuses: dict[str, int]
    evaluations: int = Field(description="evaluations that ran a worker (registry hits excluded)")
    registry_hits: int
    seeded: dict[str, int] = Field(description="problem -> kernels shown from the registry")
    generate_s: float
    evaluate_s: float
    tuned: list[ProblemTuning] = Field(
        default_factory=list, description="the end-of-run tuning of each problem's best kernel (`tune_budget`)"
    )
    tune_s: float = 0.0
    seconds: float


def seed_turns(registry: Registry, problem: Problem, interaction: Interaction, k: int, size: str | None) -> list[Turn]:
    """The k best honest kernels the registry holds for a problem, as turns to show (best first): the code as
    a fenced reply and its stored evaluation as feedback."""
    if k <= 0:
        return []
    rows = registry.ranked(problem.name, size=size, one_per="kernel", limit=k)  # any backend, any run
    prefill = interaction.options.assistant_prefill
    turns = []
    for row in rows:
        fenced = f"```python\n{row['source'].strip()}\n```"
        response = fenced[len(prefill) :] if prefill and fenced.startswith(prefill) else fenced
        result = EvaluationResult.model_validate_json(row["result"])
        extraction = interaction.extract(response)
        turns.append(interaction.make_turn(response, extraction, result))
    return turns


def run_tts(
    config: RunConfig,
    registry: Registry | None,
    extra_plugins: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> TTSSummary:
    from tritongym.core.learn.rollouts import RolloutRunner, RolloutTally
    from tritongym.core.learn.run_setup import prepare_run

    started = time.perf_counter()
    if "context" not in config.interaction:
        config = config.model_copy(update={"interaction": {**config.interaction, "context": TTS_CONTEXT}})
    tts = config.tts
    parts = prepare_run(config, registry=registry, extra_plugins=extra_plugins, training=False)
    # an unknown strategy or bad option fails now, before any sample is drawn
    search = parts.evaluator.host.create("search_strategy", tts.tune_strategy) if tts.tune_budget else None
    if search is not None and registry is None:
        raise ConfigError("[tts] tune_budget keeps its tuning records in the registry: run with a registry")
    tally = RolloutTally()
    seeded: dict[str, int] = {}
    tuned: list[ProblemTuning] = []
    tune_s = 0.0
    with RolloutRunner.session(parts, registry, "tts") as runner:
        seeds = {}
        if registry is not None and tts.seed_from_registry:
            for problem in parts.problems:
                seeds[problem.name] = seed_turns(
                    registry, problem, parts.interaction, tts.seed_from_registry, parts.evaluator.size
                )
                seeded[problem.name] = len(seeds[problem.name])
        for start in range(0, len(parts.problems), tts.problems_per_batch):
            batch = runner.collect(
                parts.problems[start : start + tts.problems_per_batch],
                config.rollout.samples,
                step=0,
                progress=progress,
                first_group=start,
                seeds=seeds,
            )
            tally.add(batch)
        if search is not None:
            tune_started = time.perf_counter()
            tuned = tune_best_kernels(parts.evaluator, search, parts.problems, tts.tune_budget)
            tune_s = time.perf_counter() - tune_started
    return TTSSummary(
        run_id=runner.run_id,
        problems=len(parts.problems),
        samples=config.rollout.samples,
        turns=tally.turns,
        statuses=tally.statuses,
        evaluations=tally.evaluations,
        registry_hits=tally.registry_hits,
        seeded=seeded,
        generate_s=tally.generate_s,
        evaluate_s=tally.evaluate_s,
        tuned=tuned,
        tune_s=tune_s,
        seconds=time.perf_counter() - started,
    )


def tune_best_kernels(evaluator, search, problems: Sequence[Problem], budget: int) -> list[ProblemTuning]:
    """Tune the best honest kernel the registry holds for each problem (those without one are skipped: the
    samples found nothing to tune), through the run's own evaluator."""
    from tritongym.core.tune import Tuner
    from tritongym.core.tune.sources import from_registry

    registry = evaluator.registry
    found = [
        p.name
        for p in problems
        if registry.best(p.name, evaluator.device_class, evaluator.size) or registry.best(p.name)
    ]
    if not found:
        return []
    tuner = Tuner(evaluator, search, budget)
    targets = from_registry(registry, found, evaluator.device_class, evaluator.size)
    return [tuner.tune(t.problem, t.source, t.origin) for t in targets]
