"""Evaluation settings: one pydantic model shared by the CLI, config files and the Python API.

A config file is TOML whose top-level keys are these fields, for example

    backend = "triton-cpu"
    trials = 5
    timeout_s = 60
    rewards = { correctness = 1.0, speedup = 1.0, profiling = 1.0 }
    hack_penalty = 0.0
    [reward_options.speedup]
    cap = 3.0
    [checks.structure]
    [backend_options]
    threads = 2

`shapes` (default "auto") also checks correctness at the problem's extra shape sets (problems.py says
where they come from); it is part of the cache key, so a verdict reached at one shape only is not reused
for a run that asks for more.  `require_generality` (default true) says whether a kernel right at the problem's
own shapes and wrong at a shape set is `incorrect` or `ok`; its result says `generality = "problem_shapes_only"`
either way.

Every name and option is validated (unknown keys are errors) before any worker starts.

Where the sandboxes run: `executor = "local"` (the default) runs them on this host in `workers` threads;
`executor = "ray"` runs them on a Ray cluster, one actor per GPU (per worker slot on a CPU backend), each
owning that device's warm sandboxed workers, while this process keeps the verdicts and the registry
(`tritongym.core.distributed`):

    executor = "ray"
    [ray]
    address = "auto"      # the cluster `ray start --head` runs here; "local" starts one for the run

Rewards: `rewards` names reward plugins with weights, and the turn reward is the weighted sum of their
components. The default `{correctness = 1, speedup = 1, profiling = 1}` is Dr. Kernel's
R = C + C·min(speedup, 3) + C·PR (both speed terms are already gated on correctness); halve every weight
for the released recipe. A component the result has no measurement for (speed and PR on `triton-cpu`,
which neither times nor profiles) is recorded as absent with its reason and adds nothing, rather than a
zero that looks like a judgement. A turn a check found hacked earns `hack_penalty` whatever its
components say. Rewards are not part of the cache key: a cached verdict is re-scored with the current
rewards.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError, model_validator

from tritongym.core.errors import ConfigError
from tritongym.core.models import PROTOCOL_VERSION
from tritongym.core.worker_task import Tolerance

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class RayOptions(BaseModel):
    """Where and how the Ray executor runs (`executor = "ray"`); see `tritongym.core.distributed`."""

    model_config = ConfigDict(extra="forbid")
    address: str = Field(
        default="local",
        description="'local' starts Ray on this machine for the run (or uses the one this process already "
        "started); 'auto' joins the cluster running here (`ray start --head`); 'ray://HOST:10001' or "
        "'HOST:6379' joins that cluster",
    )
    actors: int | None = Field(
        default=None,
        ge=1,
        description="evaluation actors; None = one per GPU of the cluster (GPU backends), or one per worker "
        "slot (`workers`, 0 = every CPU of the cluster) on a CPU backend",
    )
    cpus_per_actor: float = Field(default=1.0, gt=0, description="CPUs Ray reserves for each actor")
    tasks_per_actor: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="tasks kept in flight per actor; None = twice the backend's own concurrency on a GPU actor "
        "(the rest wait in its pool with their reference built meanwhile), its concurrency on a CPU one",
    )
    max_restarts: int = Field(default=1, ge=0, description="times Ray restarts an actor that died")
    start_timeout_s: float = Field(default=300.0, gt=0, description="how long an actor may take to start")


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: str = Field(default="auto", description="backend name, or 'auto': triton-cuda with a GPU, else triton-cpu")
    backend_options: dict = Field(default_factory=dict)
    device: str | None = Field(default=None, description="device for the backend, e.g. cuda:1")
    gpus: list[int] | None = Field(default=None, description="GPU indices a GPU backend spreads work over")
    size: Literal["auto", "cpu", "gpu"] = Field(default="auto", description="problem size preset; auto = the backend's")
    trials: int = Field(default=5, ge=1, le=100)
    seed: int | None = Field(
        default=None, ge=0, description="first trial seed (trial i uses seed + i); None = fresh random seeds"
    )
    precision: Literal["ieee", "tf32", "half"] = Field(
        default="tf32",
        description="the least exact precision class (core/precision.py) that passes, measured against a float64 "
        "gold: 'ieee' (float32-exact), 'tf32' (TF32 or float16 operands; the field's default for float32 "
        "problems), 'half' (bfloat16); the reference is timed with TF32 on unless 'ieee'",
    )
    tolerances: dict[str, Tolerance] = Field(
        default_factory=dict, description="per-dtype overrides, e.g. 'torch.float32'"
    )
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    memory_mb: int | None = Field(default=8192, ge=256)
    checks: dict[str, dict] | None = Field(
        default=None, description="check name -> options; None = every registered check that is on by default"
    )
    enable_checks: dict[str, dict] = Field(
        default_factory=dict,
        description="check name -> options, added to those `checks` selects: how an off-by-default check (one "
        "that costs a model call, such as llm-judge) is switched on",
    )
    skip_checks: list[str] = Field(
        default_factory=list, description="check names switched off (after `checks` selected the rest)"
    )
    rewards: dict[str, FiniteFloat] = Field(
        default_factory=lambda: {"correctness": 1.0, "speedup": 1.0, "profiling": 1.0},
        description="reward name -> weight; the turn reward is the weighted sum of the present components",
    )
    reward_options: dict[str, dict] = Field(
        default_factory=dict, description="reward name -> its options, e.g. {speedup = {cap = 3, log = true}}"
    )
    hack_penalty: FiniteFloat = Field(
        default=0.0,
        description="the reward of a turn a check found hacked, replacing the weighted sum; typically 0 or -1",
    )
    workers: int = Field(default=0, ge=0, description="parallel sandboxes for batch runs; 0 = number of CPUs")
    remeasure_speedup_above: float | None = Field(
        default=20.0, gt=1, description="a speedup above this is measured again, independently, before it is believed"
    )
    compile_reference: bool = Field(
        default=False,
        description="also time torch.compile(reference) on GPU backends and store compile_speedup beside the eager "
        "speedup (compiled once per problem, device class and precision, then cached in the registry)",
    )
    shapes: Literal["auto", "declared", "off"] = Field(
        default="auto",
        description="correctness at more shape sets than the main one: 'auto' = the problem's EXTRA_SIZES, else "
        "sets derived from its shape constants (halved, odd); 'declared' = only EXTRA_SIZES; 'off' = the main "
        "shape only. Timing always runs at the main shape",
    )
    require_generality: bool = Field(
        default=True,
        description="a kernel right at the problem's own shapes and wrong at an extra shape set is `incorrect` (true, "
        "as robust-kbench judges) or `ok` (false, as KernelBench and KernelGYM judge: correctness at the problem's "
        'shapes only); either way its result says `generality = "problem_shapes_only"`',
    )
    draw_parameters: bool = Field(
        default=True,
        description="before judging, draw every constant floating parameter of the reference (LayerNorm's, "
        "GroupNorm's, BatchNorm's weight 1 and bias 0, ...) and BatchNorm's running statistics away from their "
        "initial values (seeded, secret, recorded in the result), so a kernel that skips an affine, a scale or a "
        "shift is wrong",
    )
    use_cache: bool = True
    executor: Literal["local", "ray"] = Field(
        default="local", description="where sandboxes run: 'local' threads on this host, or 'ray' actors on a cluster"
    )
    ray: RayOptions = Field(default_factory=RayOptions, description="the Ray executor's settings")

    @model_validator(mode="after")
    def _each_check_named_once(self) -> EvalConfig:
        twice = sorted(set(self.enable_checks) & set(self.checks or {}))
        if twice:
            raise ValueError(f"{', '.join(twice)} named in both checks and enable_checks: give its options once")
        skipped = sorted(set(self.enable_checks) & set(self.skip_checks))
        if skipped:
            raise ValueError(f"{', '.join(skipped)} named in both enable_checks and skip_checks")
        return self

    def protocol_key(self, check_names: list[str]) -> str:
        """The part of the cache key that changes what a verdict means (not rewards: they are re-scored)."""
        relevant = {
            "trials": self.trials,
            "seed": self.seed,
            "precision": self.precision,
            "tolerances": {k: v.model_dump() for k, v in sorted(self.tolerances.items())},
            "checks": sorted(check_names),
            "check_options": {**(self.checks or {}), **self.enable_checks},
            "remeasure_speedup_above": self.remeasure_speedup_above,
            "shapes": self.shapes,
            "require_generality": self.require_generality,
            "draw_parameters": self.draw_parameters,
        }
        digest = hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:8]
        return f"{PROTOCOL_VERSION}-{digest}"


def validation_message(exc: ValidationError, where: str) -> str:
    return f"{where}: " + "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
    )


def read_toml(path: str | Path) -> dict:
    """A config file's tables, or a ConfigError naming the file and what is wrong with it."""
    try:
        return tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path} is not valid TOML: {exc}") from None


def load_config(path: str | Path | None = None, **overrides) -> EvalConfig:
    """Read a TOML config (if given) and apply non-None overrides (the CLI's flags)."""
    data: dict = read_toml(path) if path is not None else {}
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, f"config {path}" if path else "options")) from None
