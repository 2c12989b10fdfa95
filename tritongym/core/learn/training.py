"""`tritongym train`: one config, one command, from the model on disk to a trained policy.

Builds and checks every part before the model loads (`prepare_run`), starts the engine, opens one
registry run shared by every process, trains with `Trainer`, then writes the final model, the metrics plot
and a summary.  Under `accelerate launch` every process runs this same function; only the main process
writes the run row, the model and the plot.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from tritongym.core.learn.run_config import RunConfig
from tritongym.core.registry import Registry

SEED_STRIDE = 1_000_003
"""Process r samples under seed + r × SEED_STRIDE, so processes never draw the same responses."""


class TrainSummary(BaseModel):
    """What a training run did and where its outputs are."""

    run_id: int | None
    steps: int
    resumed_from: int | None
    output_dir: str
    metrics_file: str
    plot: str | None
    model_dir: str | None
    final: dict[str, float]
    seconds: float


def train(
    config: RunConfig,
    registry: Registry | None,
    steps: int | None = None,
    resume: bool = False,
    extra_plugins: Sequence[str] = (),
    on_step: Callable[[dict], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> TrainSummary:
    from accelerate.utils import broadcast_object_list

    from tritongym.core.learn.accelerated import make_accelerator
    from tritongym.core.learn.run_setup import prepare_run
    from tritongym.core.learn.trainer import Trainer

    started = time.perf_counter()
    parts = prepare_run(config, registry=registry, extra_plugins=extra_plugins, training=True)
    accelerator, run_id = None, None
    try:
        accelerator = make_accelerator(config.optim.precision, parts.placement.policy_device)
        sampling = config.sampling
        if sampling.seed is not None:
            sampling = sampling.model_copy(update={"seed": sampling.seed + accelerator.process_index * SEED_STRIDE})
        if registry is not None and accelerator.is_main_process:
            run_id = registry.start_run("train", config.name, config.model_dump(mode="json"))
        if accelerator.num_processes > 1:
            run_id = broadcast_object_list([run_id])[0]
        trainer = Trainer(parts, registry=registry, run_id=run_id, accelerator=accelerator)
        parts.engine.start(config.model, sampling)
        resumed_from = trainer.resume() if resume else None
        if resumed_from is None:
            trainer.push_weights()  # the engine samples from exactly the weights the trainer holds
        total = steps if steps is not None else config.optim.steps
        results = trainer.run(
            total, on_step=(lambda r: on_step({"step": r.step, **r.metrics})) if on_step else None, progress=progress
        )
        model_dir = trainer.save_model() if results else None
        plot = None
        if accelerator.is_main_process and trainer.metrics_path.exists():
            from tritongym.core.reports.metrics_report import plot_metrics, read_metrics

            plot = str(
                plot_metrics(
                    read_metrics(trainer.metrics_path), Path(config.output_dir) / "metrics.png", title=config.name
                )
            )
        accelerator.wait_for_everyone()
    finally:
        parts.close()
        if registry is not None and run_id is not None and accelerator is not None and accelerator.is_main_process:
            registry.finish_run(run_id)
    return TrainSummary(
        run_id=run_id,
        steps=trainer.step,
        resumed_from=resumed_from,
        output_dir=str(config.output_dir),
        metrics_file=str(trainer.metrics_path),
        plot=plot,
        model_dir=str(model_dir) if model_dir else None,
        final=results[-1].metrics if results else {},
        seconds=time.perf_counter() - started,
    )
