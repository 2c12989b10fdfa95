"""Sequential test-time scaling (`tritongym tts`, DESIGN.md §7): for each problem, N samples of T turns, each
turn seeing the evaluation of the earlier ones, and the registry as memory.

- Every turn is evaluated through the registry: a kernel it already judged (in any run, training included)
  costs no worker, so a repeated run is answered from the registry alone.
- Every turn is stored under a run of kind "tts", which `tritongym report RUN_ID` turns into last-turn and
  best-of-history Fast@p tables.
- `[tts] seed_from_registry = k` shows the k best honest kernels the registry knows for the problem (from
  any earlier run) in every prompt, before the conversation's own turns: a kernel found in training seeds
  the search.
- Context: unless the run config's `[interaction]` names a `context`, test-time scaling uses `top-w`
  (the task plus the w best earlier turns by reward, w = 4), as the field does for long horizons.

Nothing here trains, so any engine works, `openai` included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from tritongym.core.interaction import Interaction, Turn
from tritongym.core.models import EvaluationResult, Problem
from tritongym.core.registry import Registry
from tritongym.core.run_config import RunConfig

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
    seconds: float


def seed_turns(registry: Registry, problem: Problem, interaction: Interaction, k: int, size: str | None) -> list[Turn]:
    """The k best honest kernels the registry holds for a problem, as turns to show (best first): the code as
    a fenced reply and its stored evaluation as feedback."""
    if k <= 0:
        return []
    rows = _best_rows(registry, problem.name, size, k)
    prefill = interaction.options.assistant_prefill
    turns = []
    for row in rows:
        fenced = f"```python\n{row['source'].strip()}\n```"
        response = fenced[len(prefill) :] if prefill and fenced.startswith(prefill) else fenced
        result = EvaluationResult.model_validate_json(row["result"])
        extraction = interaction.extract(response)
        turns.append(interaction.make_turn(response, extraction, result))
    return turns


def _best_rows(registry: Registry, problem_name: str, size: str | None, limit: int) -> list[dict]:
    """The `limit` best honest kernels of a problem, from any backend and run (the registry's ranking:
    fastest first, and where untimed the earliest correct), one row per kernel."""
    rows, seen = [], set()
    for row in registry.ranked(problem_name, size=size):
        if row["kernel_id"] not in seen:
            seen.add(row["kernel_id"])
            rows.append(row)
        if len(rows) == limit:
            break
    return rows


def run_tts(
    config: RunConfig,
    registry: Registry | None,
    extra_plugins: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> TTSSummary:
    from tritongym.core.rollouts import RolloutRunner
    from tritongym.core.run_setup import prepare_run

    started = time.perf_counter()
    if "context" not in config.interaction:
        config = config.model_copy(update={"interaction": {**config.interaction, "context": TTS_CONTEXT}})
    tts = config.tts
    parts = prepare_run(config, registry=registry, extra_plugins=extra_plugins, training=False)
    run_id = registry.start_run("tts", config.name, config.model_dump(mode="json")) if registry else None
    statuses: dict[str, int] = {}
    totals = {"turns": 0, "evaluations": 0, "registry_hits": 0, "generate_s": 0.0, "evaluate_s": 0.0}
    seeded: dict[str, int] = {}
    try:
        parts.engine.start(config.model, config.sampling)
        runner = RolloutRunner(
            parts.engine,
            parts.interaction,
            parts.evaluator,
            registry,
            run_id,
            stop_when_correct=config.rollout.stop_when_correct,
            overlap=config.rollout.overlap,
        )
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
            for record in batch.turns:
                statuses[record.status] = statuses.get(record.status, 0) + 1
                totals["registry_hits"] += int(record.result is not None and record.result.cached)
            totals["turns"] += len(batch.turns)
            totals["evaluations"] += batch.evaluations
            totals["generate_s"] += batch.generate_s
            totals["evaluate_s"] += batch.evaluate_s
    finally:
        parts.close()
        if registry is not None and run_id is not None:
            registry.finish_run(run_id)
    return TTSSummary(
        run_id=run_id,
        problems=len(parts.problems),
        samples=config.rollout.samples,
        statuses=statuses,
        seeded=seeded,
        seconds=time.perf_counter() - started,
        **totals,
    )
