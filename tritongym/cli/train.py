"""`tritongym rollouts`, `train` and `sft`: the commands that load a model, all driven by one run config.

Every option here can also be set in the config file; `--set section.key=value` (repeatable) overrides any
config value without editing the file, e.g. `--set optim.steps=3 --set rollout.samples=2`.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tritongym.cli.common import (
    JsonOpt,
    PluginOpt,
    RayOpt,
    RegistryOpt,
    _emit_json,
    command,
    err,
    out,
    parse_assignments,
)
from tritongym.core.errors import TritonGymError

SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: section.key=value (TOML value; repeatable)."),
]
ConfigArg = Annotated[Path, typer.Argument(help="Run config (TOML): model, engine, sampling, rollout, eval, ...")]


def parse_overrides(items: list[str] | None) -> dict:
    """`["optim.steps=3", "sampling.stop=['```']"]` -> {"optim.steps": 3, ...}; a value that is not TOML is
    taken as a string, so `--set name=demo` works without quotes."""
    return parse_assignments(items, "--set", "optim.steps=3", form="section.key=value")


def _with_ray(overrides: dict, address: str | None) -> dict:
    """`--ray ADDRESS` as the overrides it stands for: the run's evaluations on Ray actors."""
    return overrides if address is None else {**overrides, "eval.executor": "ray", "eval.ray.address": address}


def _is_main_process() -> bool:
    """Under `accelerate launch` (torchrun sets RANK) only rank 0 talks; the other processes train quietly."""
    return os.environ.get("RANK", "0") == "0"


def _progress(disable: bool) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=disable or not err.is_terminal,
    )


def rollouts_command(
    config: ConfigArg,
    steps: Annotated[int, typer.Option("--steps", help="Batches of prompts to roll out.", min=1)] = 1,
    out_file: Annotated[
        Path | None, typer.Option("--out", "-o", help="Trajectories JSONL (default: OUTPUT_DIR/trajectories.jsonl).")
    ] = None,
    overrides: SetOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Generate and evaluate multi-turn trajectories without training; every turn goes to the registry."""
    from tritongym import api
    from tritongym.core.learn.run_config import load_run_config

    run_config = load_run_config(config, parse_overrides(overrides))
    with _progress(as_json) as bar:
        task = bar.add_task("turns evaluated", total=None)  # trajectories may end early: no fixed total
        summary = api.rollouts(
            run_config,
            steps=steps,
            out=out_file,
            registry=registry,
            extra_plugins=plugin or (),
            progress=lambda status: bar.advance(task),
        )
    if as_json:
        _emit_json(summary.model_dump())
        return
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
    out.print(
        f"{summary.turns} turns ({statuses}); mean reward {summary.mean_reward:.3g}; "
        f"{summary.evaluations} evaluations in {summary.evaluate_s:.1f} s, generation {summary.generate_s:.1f} s",
        markup=False,
    )
    out.print(f"trajectories: {summary.trajectories_file}; run {summary.run_id} in the registry", markup=False)


def train_command(
    config: ConfigArg,
    steps: Annotated[
        int | None, typer.Option("--steps", help="Train to this step (default: optim.steps).", min=1)
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the latest checkpoint in OUTPUT_DIR.")
    ] = False,
    overrides: SetOpt = None,
    ray: RayOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """RL training with the config's engine, backend, checks, rewards, estimator and filters.

    Writes OUTPUT_DIR/metrics.jsonl (one line per step), metrics.png, checkpoints/ and the final model/.
    Several GPUs or nodes: `accelerate launch $(which tritongym) train CONFIG`."""
    from tritongym import api
    from tritongym.core.learn.run_config import load_run_config
    from tritongym.core.reports.metrics_report import step_line, step_table

    run_config = load_run_config(config, _with_ray(parse_overrides(overrides), ray))
    total = steps or run_config.optim.steps
    rows: list[dict] = []
    quiet = not _is_main_process()
    with _progress(as_json or quiet) as bar:
        task = bar.add_task("training steps", total=total)

        def on_step(metrics: dict) -> None:
            rows.append(metrics)
            bar.update(task, completed=metrics["step"] + 1)
            if not (as_json or quiet):
                err.print(step_line(metrics), highlight=False)

        summary = api.train(
            run_config,
            steps=steps,
            resume=resume,
            registry=registry,
            extra_plugins=plugin or (),
            on_step=on_step,
        )
    if quiet:
        return
    if as_json:
        _emit_json(summary.model_dump())
        return
    if rows:
        out.print(step_table(rows, last=20))
    out.print(
        f"{summary.steps} steps in {summary.seconds:.0f} s; metrics {summary.metrics_file}"
        + (f", plot {summary.plot}" if summary.plot else "")
        + (f"; model {summary.model_dir}" if summary.model_dir else "")
        + (f"; run {summary.run_id} in the registry" if summary.run_id is not None else ""),
        markup=False,  # paths are text: a [ in one is not a style
    )


def sft_command(
    config: ConfigArg,
    data: Annotated[
        list[Path] | None,
        typer.Option("--data", "-d", help="Trajectory JSONL (repeatable) (default: sft.data, else bundled solutions)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Where the model goes (default: OUTPUT_DIR/sft-model).")
    ] = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
):
    """Cold-start supervised fine-tuning on multi-turn trajectories; loss on assistant tokens only."""
    from tritongym import api
    from tritongym.core.learn.run_config import load_run_config

    run_config = load_run_config(config, parse_overrides(overrides))
    with _progress(as_json) as bar:
        task = bar.add_task("SFT steps", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        summary = api.sft(run_config, data=data or None, output=output, progress=progress)
    if as_json:
        _emit_json(summary.model_dump())
        return
    epochs = summary.epoch_seconds
    per_epoch = f" ({sum(epochs) / len(epochs):.1f} s per epoch" if epochs else ""
    if per_epoch and summary.peak_memory_mb is not None:
        per_epoch += f", peak GPU memory {summary.peak_memory_mb:.0f} MiB"
    out.print(
        f"SFT: {summary.examples} examples ({summary.truncated} truncated), {summary.steps} steps, "
        f"loss {summary.first_loss:.3g} -> {summary.last_loss:.3g} in {summary.seconds:.0f} s"
        + (per_epoch + ")" if per_epoch else "")
        + f"; model {summary.model_dir}",
        markup=False,
    )


def tts_command(
    config: ConfigArg,
    overrides: SetOpt = None,
    ray: RayOpt = None,
    registry: RegistryOpt = None,
    plugin: PluginOpt = None,
    as_json: JsonOpt = False,
):
    """Test-time scaling: N samples x T turns per problem, the registry as memory; `tritongym report RUN_ID`
    shows last-turn and best-of-history Fast@p."""
    from tritongym import api
    from tritongym.core.learn.run_config import load_run_config

    run_config = load_run_config(config, _with_ray(parse_overrides(overrides), ray))
    with _progress(as_json) as bar:
        task = bar.add_task("turns evaluated", total=None)
        summary = api.tts(
            run_config, registry=registry, extra_plugins=plugin or (), progress=lambda status: bar.advance(task)
        )
    if as_json:
        _emit_json(summary.model_dump())
        return
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
    out.print(
        f"{summary.problems} problems x {summary.samples} samples: {summary.turns} turns ({statuses}); "
        f"{summary.evaluations} worker evaluations, {summary.registry_hits} answered by the registry; "
        f"generation {summary.generate_s:.1f} s, evaluation {summary.evaluate_s:.1f} s",
        markup=False,
    )
    if summary.seeded:
        out.print("seeded from the registry: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.seeded.items())))
    for t in summary.tuned:
        gain = f", {t.speedup:.2f}x over the kernel found" if t.speedup is not None else " (not timed on this backend)"
        best = ", ".join(f"{k}={v}" for k, v in (t.best_config or {}).items()) or "as written"
        line = f"tuned {t.problem}: {t.variants} variants, {t.rejected} rejected, best {best}{gain}"
        out.print(line, highlight=False, markup=False)
    if summary.run_id is not None:
        out.print(f"run {summary.run_id}: tritongym report {summary.run_id}")


# An evaluation setting named as `eval`'s flag (what a message from the evaluator or a backend says) and as these
# commands take it: they have no --backend or --gpus, only the run config and --set.
_EVAL_FLAGS = ((re.compile(r"--backend ([\w.-]+)"), r"--set eval.backend=\1"), (re.compile(r"--gpus\b"), "eval.gpus"))


def _eval_flags_as_set(fn):
    """`fn` with every error message's `--backend X` read as `--set eval.backend=X` (and `--gpus` as the config's
    eval.gpus): the evaluator words its fixes for `tritongym eval`, and a hint naming a flag these commands do
    not have would not work as written."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TritonGymError as exc:
            if exc.args and isinstance(exc.args[0], str):
                message = exc.args[0]
                for pattern, replacement in _EVAL_FLAGS:
                    message = pattern.sub(replacement, message)
                exc.args = (message, *exc.args[1:])
            raise

    return wrapper


def register(app: typer.Typer) -> None:
    commands = (("rollouts", rollouts_command), ("train", train_command), ("sft", sft_command), ("tts", tts_command))
    for name, fn in commands:
        app.command(name)(command(_eval_flags_as_set(fn)))
