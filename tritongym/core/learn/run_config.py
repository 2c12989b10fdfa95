"""The configuration of a rollout, training or SFT run: one TOML file picks every plugin.

    name = "demo"
    output_dir = "runs/demo"
    [model]        builtin = "smollm2-135m-instruct"     # or path = "DIR", or a [model.tiny] table
    [engine]       name = "transformers"
    [sampling]     temperature = 1.0, max_tokens = 512
    [interaction]  context = "top-w", max_turns = 3
    [rollout]      problems = ["relu", "softmax"], samples = 4, prompts_per_step = 2
    [eval]         backend = "triton-cpu", rewards = {...}      # an EvalConfig
    [learning]     estimator = "trloo", filters = {...}          # a LearningConfig
    [loss]         clip_low = 0.2, clip_high = 0.28              # PolicyLossOptions
    [optim]        lr = 1e-6, steps = 300, grad_clip = 1.0
    [placement]    policy_gpu = 0, judge_gpus = "others"       # which GPUs train and which judge

`validate_run` checks everything that can be checked without loading a model or starting a worker (plugin
names and options, the model directory, batch sizes against the problems chosen), so a bad config fails
in a second with a message that says what to change, not after the model has loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tritongym.core.config import EvalConfig, read_toml, validation_message
from tritongym.core.errors import ConfigError
from tritongym.core.generation import ModelSpec, SamplingOptions
from tritongym.core.learn.learning import LearningConfig
from tritongym.core.learn.policy_loss import PolicyLossOptions


class EngineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="transformers", description="registered generation engine")
    options: dict = Field(default_factory=dict)


class RolloutConfig(BaseModel):
    """Which problems are asked, how often, and how many per step."""

    model_config = ConfigDict(extra="forbid")
    problems: list[str] | None = Field(default=None, description="problem names; None = every problem of the source")
    problem_source: str | None = Field(default=None, description="problem directory [default: the bundled suite]")
    samples: int = Field(default=4, ge=1, description="trajectories per prompt (K)")
    prompts_per_step: int = Field(default=2, ge=1, description="problems per training step")
    overlap: bool = Field(
        default=True,
        description="two chunks of trajectories take turns, so one generates while the other is evaluated",
    )
    stop_when_correct: bool = Field(
        default=False, description="end a trajectory at its first correct, honest turn (else run all turns)"
    )

    tune_feedback: int = Field(
        default=0,
        ge=0,
        description="variants `tune` tries for each correct, timed kernel; the next turn's feedback says what it "
        "found ('tuned: 1.8x faster with BLOCK_M=128, num_warps=8'); needs a registry; 0 = off",
    )
    tune_feedback_strategy: str = Field(default="exhaustive", description="the search strategy of that tuning")


class OptimConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lr: float = Field(default=1e-6, gt=0, description="AdamW learning rate (release: 1e-6)")
    weight_decay: float = Field(default=0.0, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float | None = Field(default=1.0, gt=0, description="max global gradient norm; None = no clip")
    steps: int = Field(default=300, ge=1)
    micro_batch: int = Field(default=4, ge=1, description="training rows per forward/backward")
    epochs: int = Field(default=1, ge=1, description="passes over each step's rows (release: 1)")
    precision: str = Field(default="auto", description="auto (bf16 where the device has it), no, bf16 or fp16")
    checkpoint_every: int = Field(default=50, ge=1, description="steps between checkpoints")

    @model_validator(mode="after")
    def _known_precision(self) -> OptimConfig:
        if self.precision not in ("auto", "no", "bf16", "fp16"):
            raise ValueError(f"precision '{self.precision}': choose auto, no, bf16 or fp16")
        return self


class SFTConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: list[Path] = Field(default_factory=list, description="JSONL trajectories; empty = the bundled solutions")
    lr: float = Field(default=1e-5, gt=0)
    epochs: int = Field(default=1, ge=1)
    micro_batch: int = Field(default=2, ge=1)
    max_length: int = Field(default=2048, ge=16, description="tokens per example; longer ones are truncated")


class TTSConfig(BaseModel):
    """The `[tts]` table of a run config: test-time scaling (`tritongym tts`, core/scaling/tts.py)."""

    model_config = ConfigDict(extra="forbid")

    seed_from_registry: int = Field(
        default=0, ge=0, description="show the k best honest kernels the registry knows for a problem in its prompts"
    )
    problems_per_batch: int = Field(
        default=8, ge=1, description="problems whose samples are rolled out together (bounds engine memory)"
    )
    tune_budget: int = Field(
        default=0,
        ge=0,
        description="after the rollouts, tune the best kernel of each problem that has one with this many variants "
        "(`tritongym tune`); 0 = off",
    )
    tune_strategy: str = Field(default="exhaustive", description="the search strategy of that tuning")


class PlacementConfig(BaseModel):
    """Where the policy trains and generates, and where the judge (a GPU backend's worker pool) runs, on one host
    (`core/learn/placement.py`).  GPUs are numbered as `eval.gpus` and nvidia-smi number them.

    One GPU: the policy and the judge share it; the judge then runs only while the policy waits (no generation
    overlaps judging) and admits its workers in what the trainer leaves.  Two or more: by default the policy
    takes one and the judge the others, so generation overlaps judging again."""

    model_config = ConfigDict(extra="forbid")
    policy_gpu: int | None = Field(
        default=None,
        ge=0,
        description="the GPU the trainer and an in-process engine (transformers) use; None = the first visible GPU, "
        "or under `accelerate launch` each process's own (cuda:LOCAL_RANK), where it must stay None",
    )
    judge_gpus: Literal["others", "all"] | list[int] | None = Field(
        default=None,
        description="the GPUs a GPU backend judges on: 'others' = those no training process uses (the policy's "
        "own when there are none), 'all' = every visible GPU (one process only), or a list; under `accelerate "
        "launch` each process takes its share of them (the list [rank::processes]), never another's training "
        "GPU; None = eval.gpus when set, else 'others'",
    )

    @field_validator("judge_gpus")
    @classmethod
    def _some_gpus_once(cls, value):
        if isinstance(value, list) and (not value or len(set(value)) != len(value) or min(value) < 0):
            raise ValueError("judge_gpus: list each GPU index (>= 0) once, at least one")
        return value


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="run", min_length=1)
    output_dir: Path = Field(default=Path("runs/run"), description="checkpoints, metrics.jsonl, plots, trajectories")
    registry: Path | None = Field(
        default=None, description="registry.db [default: TRITONGYM_REGISTRY or ./registry.db]"
    )
    seed: int = Field(default=0, ge=0)
    model: ModelSpec = Field(default_factory=lambda: ModelSpec(builtin="smollm2-135m-instruct"))
    engine: EngineConfig = Field(default_factory=EngineConfig)
    sampling: SamplingOptions = Field(default_factory=SamplingOptions)
    interaction: dict = Field(default_factory=dict, description="InteractionOptions (core/learn/interaction.py)")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)
    loss: PolicyLossOptions = Field(default_factory=PolicyLossOptions)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    tts: TTSConfig = Field(default_factory=TTSConfig)
    placement: PlacementConfig = Field(default_factory=PlacementConfig)

    @model_validator(mode="after")
    def _judge_gpus_named_once(self) -> RunConfig:
        if self.placement.judge_gpus is not None and (
            self.eval.gpus is not None or "gpus" in self.eval.backend_options
        ):
            raise ValueError(
                "the judge's GPUs are named twice: set placement.judge_gpus or eval.gpus (backend_options.gpus), "
                "not both"
            )
        return self


def load_run_config(path: str | Path | None = None, overrides: dict | None = None) -> RunConfig:
    """Read a run's TOML; `overrides` are dotted keys set after reading, e.g. {"optim.steps": 2}."""
    data: dict = read_toml(path) if path is not None else {}
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        target = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = value
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, f"config {path}" if path else "run options")) from None
