"""Everything a run needs, built and checked before the model loads or a worker starts.

`prepare_run` turns a `RunConfig` into the run's parts: the chosen problems, the evaluator (backend,
checks, rewards), the interaction, the learning-signal builder and an engine that is created but not yet
started.  Every name, option, path and batch size is checked here, so a bad config fails at once with a
message that says what to change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tritongym.core.errors import ConfigError
from tritongym.core.eval.evaluate import Evaluator, resolve_backend_name
from tritongym.core.interfaces import GenerationEngine
from tritongym.core.learn.interaction import Interaction, InteractionOptions
from tritongym.core.learn.learning import LearningSignalBuilder
from tritongym.core.learn.model_loading import check_model_spec
from tritongym.core.learn.placement import Placement, place_run
from tritongym.core.learn.run_config import RunConfig
from tritongym.core.models import Problem
from tritongym.core.plugins import PluginHost, get_host
from tritongym.core.problems import did_you_mean, load_problems
from tritongym.core.registry import Registry


@dataclass
class RunParts:
    config: RunConfig
    host: PluginHost
    problems: list[Problem]
    evaluator: Evaluator
    interaction: Interaction
    learning: LearningSignalBuilder
    engine: GenerationEngine
    placement: Placement = field(default_factory=Placement)  # where the policy and the judge run

    def problems_for_step(self, step: int) -> list[Problem]:
        """`prompts_per_step` problems, taken round-robin so every problem comes up equally often."""
        n = self.config.rollout.prompts_per_step
        start = (step * n) % len(self.problems)
        return [self.problems[(start + i) % len(self.problems)] for i in range(n)]

    def close(self) -> None:
        self.evaluator.close()
        self.engine.close()


def _interaction(config: RunConfig) -> Interaction:
    from pydantic import ValidationError

    from tritongym.core.config import validation_message

    try:
        options = InteractionOptions.model_validate(config.interaction)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, "[interaction]")) from None
    return Interaction(options)


def prepare_run(
    config: RunConfig,
    registry: Registry | None = None,
    extra_plugins: Sequence[str] = (),
    training: bool = True,
) -> RunParts:
    host = get_host(extra_plugins)
    engines = host.names("engine")
    if config.engine.name not in engines:
        raise ConfigError(
            f"[engine] name '{config.engine.name}' is not a registered engine (valid choices: "
            f"{', '.join(engines) or 'none'}); install or --plugin the plugin that provides it"
        )
    placement = _placement(config, host)
    engine_options = dict(config.engine.options)
    fields = getattr(host.get("engine", config.engine.name).cls.Options, "model_fields", {})
    if placement.policy_gpu is not None and "device" in fields:  # an in-process engine: on the policy's GPU
        if engine_options.get("device", fields["device"].default) == "auto":
            engine_options["device"] = placement.policy_device
    engine = host.create("engine", config.engine.name, engine_options)
    reason = engine.unavailable_reason()
    if reason:
        raise ConfigError(f"engine '{config.engine.name}' cannot run here: {reason}")
    if training and not engine.trainable:
        raise ConfigError(
            f"engine '{config.engine.name}' cannot be trained (its weights live elsewhere); use it for "
            "`tritongym rollouts`, or train with engine 'transformers' or 'vllm'"
        )
    if engine.loads_model:
        check_model_spec(config.model)
    learning = LearningSignalBuilder(config.learning, host=host)
    interaction = _interaction(config)

    eval_config = config.eval
    if placement.judge_gpus is not None:
        eval_config = eval_config.model_copy(update={"gpus": list(placement.judge_gpus)})
    evaluator = Evaluator(eval_config, registry=registry, host=host)
    problems = load_problems(config.rollout.problem_source, evaluator.size)
    if config.rollout.problems is not None:
        by_name = {p.name: p for p in problems}
        unknown = [n for n in config.rollout.problems if n not in by_name]
        if unknown:
            evaluator.close()
            raise ConfigError(
                f"[rollout] problems {', '.join(unknown)} not found (known: {', '.join(sorted(by_name))})"
                + did_you_mean(unknown[0], by_name)
            )
        problems = [by_name[n] for n in config.rollout.problems]
    if not problems:
        evaluator.close()
        raise ConfigError("[rollout] selects no problems")
    if training and config.rollout.prompts_per_step > len(problems):  # tts and rollouts take what there is
        evaluator.close()
        raise ConfigError(
            f"[rollout] prompts_per_step = {config.rollout.prompts_per_step} but only {len(problems)} problems are "
            "selected; lower prompts_per_step or add problems"
        )
    rows = config.rollout.prompts_per_step * config.rollout.samples * interaction.options.max_turns
    if training and config.optim.micro_batch > rows:
        evaluator.close()
        raise ConfigError(
            f"[optim] micro_batch = {config.optim.micro_batch} exceeds the at most {rows} training rows a step "
            f"makes (prompts_per_step {config.rollout.prompts_per_step} x samples {config.rollout.samples} x "
            f"max_turns {interaction.options.max_turns}); lower micro_batch"
        )
    return RunParts(config, host, problems, evaluator, interaction, learning, engine, placement)


def _placement(config: RunConfig, host: PluginHost) -> Placement:
    """Where this process's policy and judge run (`core/learn/placement.py`): the judge's GPUs are placed only for
    a GPU backend run here (not on Ray)."""
    gpu_judge = False
    if config.eval.executor == "local":
        name = resolve_backend_name(config.eval, host)
        gpu_judge = name in host.names("backend") and host.get("backend", name).cls.device_type == "cuda"
    named = config.eval.gpus if config.eval.gpus is not None else config.eval.backend_options.get("gpus")
    return place_run(config.placement, named, gpu_judge)
