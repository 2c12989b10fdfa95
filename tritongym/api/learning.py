"""The model's side: `tritongym advantages`, `rollouts`, `train`, `sft` and `tts`, each over a run config.
The learning code is imported inside each function: the other commands start without it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from tritongym.api.evaluation import RegistryArg, open_registry
from tritongym.api.results import AdvantageReport, RolloutSummary, TurnAdvantage
from tritongym.core.errors import ConfigError
from tritongym.core.plugins import get_host

if TYPE_CHECKING:
    from tritongym.core.learn.learning import LearningConfig
    from tritongym.core.learn.run_config import RunConfig


def _run_config(config: RunConfig | str | Path) -> RunConfig:
    from tritongym.core.learn.run_config import RunConfig, load_run_config

    return config if isinstance(config, RunConfig) else load_run_config(config)


def advantages(
    turns: str | Path | Sequence,
    config: LearningConfig | str | Path | dict | None = None,
    step: int = 0,
    extra_plugins: Sequence[str] = (),
) -> AdvantageReport:
    """Advantages and keep decisions for a batch of turns (a JSONL path or `TurnRow`s/dicts): what a
    training step would learn from them under `config` (`tritongym advantages`)."""
    from tritongym.core.learn.learning import (
        LearningConfig,
        LearningSignalBuilder,
        load_learning_config,
        read_turn_rows,
    )
    from tritongym.core.turn_batch import TurnBatch

    if isinstance(config, LearningConfig):
        learning = config
    elif isinstance(config, dict):
        learning = load_learning_config(None, **config)
    else:
        learning = load_learning_config(config)
    builder = LearningSignalBuilder(learning, host=get_host(extra_plugins))
    rows = read_turn_rows(turns) if isinstance(turns, (str, Path)) else list(turns)
    try:
        batch = TurnBatch.from_rows(rows)
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"turns do not form a batch: {exc}") from None
    if "mrs" in learning.filters and batch.train_logprobs is None:
        others = [name for name in learning.filters if name != "mrs"]
        instead = f"`--filter {' --filter '.join(others)}`" if others else "no --filter"
        raise ConfigError(
            "the sample filter 'mrs' compares the trainer's log-probs with the engine's, and these turns carry none: "
            "give every turn `rollout_logprobs` and `train_logprobs` (one number per token of `policy_mask`), or "
            f"leave mrs out ({instead} in place of the config's filters)"
        )
    signal = builder.build(batch, step=step)
    return AdvantageReport(
        estimator=learning.estimator,
        filters=list(learning.filters),
        rows=[
            TurnAdvantage(
                group=int(batch.group[i]),
                trajectory=int(batch.trajectory[i]),
                turn=int(batch.turn[i]),
                reward=float(batch.reward[i]),
                advantage=float(signal.row_advantages[i]),
                kept=bool(signal.row_keep[i]),
                kept_tokens=int(signal.mask[i].sum()),
                policy_tokens=int(batch.tokens[i].sum()),
            )
            for i in range(batch.rows)
            if bool(batch.valid[i])
        ],
        metrics=signal.metrics,
    )


def rollouts(
    config: RunConfig | str | Path,
    steps: int = 1,
    out: str | Path | None = None,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> RolloutSummary:
    """Generate and evaluate multi-turn trajectories without training (`tritongym rollouts`); every turn
    is stored in the registry under a new run and appended to a JSONL file (`out`, default
    OUTPUT_DIR/trajectories.jsonl)."""
    from tritongym.core.learn.rollouts import RolloutRunner, RolloutTally, write_trajectories
    from tritongym.core.learn.run_setup import prepare_run

    run_config = _run_config(config)
    reg = open_registry(registry if registry is not None else run_config.registry)
    parts = prepare_run(run_config, registry=reg, extra_plugins=extra_plugins, training=False)
    path = Path(out) if out is not None else run_config.output_dir / "trajectories.jsonl"
    tally = RolloutTally()
    with RolloutRunner.session(parts, reg, "rollouts") as runner:
        for step in range(steps):
            batch = runner.collect(parts.problems_for_step(step), run_config.rollout.samples, step, progress)
            write_trajectories(path, batch.turns)
            tally.add(batch)
    return RolloutSummary(
        run_id=runner.run_id,
        trajectories_file=str(path),
        turns=tally.turns,
        statuses=tally.statuses,
        mean_reward=tally.mean_reward,
        evaluations=tally.evaluations,
        generate_s=tally.generate_s,
        evaluate_s=tally.evaluate_s,
    )


def train(
    config: RunConfig | str | Path,
    steps: int | None = None,
    resume: bool = False,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    on_step: Callable[[dict], None] | None = None,
    progress: Callable[[str], None] | None = None,
):
    """RL training with one config (`tritongym train`): returns a `TrainSummary` (core/learn/training.py)."""
    from tritongym.core.learn.training import train as run_training

    run_config = _run_config(config)
    reg = open_registry(registry if registry is not None else run_config.registry)
    return run_training(
        run_config, reg, steps=steps, resume=resume, extra_plugins=extra_plugins, on_step=on_step, progress=progress
    )


def sft(
    config: RunConfig | str | Path,
    data: Sequence[str | Path] | None = None,
    output: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
):
    """Cold-start SFT (`tritongym sft`): returns an `SFTSummary` (core/learn/sft.py)."""
    from tritongym.core.learn.sft import run_sft

    run_config = _run_config(config)
    return run_sft(
        run_config,
        data=[Path(p) for p in data] if data else None,
        output=Path(output) if output is not None else None,
        progress=progress,
    )


def tts(
    config: RunConfig | str | Path,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
):
    """Test-time scaling (`tritongym tts`): returns a `TTSSummary` (core/scaling/tts.py)."""
    from tritongym.core.scaling.tts import run_tts

    run_config = _run_config(config)
    reg = open_registry(registry if registry is not None else run_config.registry)
    return run_tts(run_config, reg, extra_plugins=extra_plugins, progress=progress)
