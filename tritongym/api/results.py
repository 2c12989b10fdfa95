"""What the API's functions return beyond the kernel's own models: plain pydantic models, importing nothing
of the pipeline, so the service's HTTP client (which returns `BestKernel`) loads no evaluator, registry or
torch for them."""

from __future__ import annotations

from pydantic import BaseModel


class TunedFrom(BaseModel):
    """A tuned variant's origin, from `tuning_records`: the kernel it was tuned from and the config baked in."""

    source_kernel_id: str
    config: dict[str, int]
    strategy: str
    backend: str
    device_class: str
    size: str


class BestKernel(BaseModel):
    problem_id: str
    kernel_id: str
    evaluation_id: int
    backend: str
    device: str
    device_class: str
    size: str
    status: str
    runtime_ms: float | None
    speedup: float | None
    pr: float | None
    reward: float | None
    created_at: str
    source: str
    compile_speedup: float | None = None  # against torch.compile(reference), where it was timed
    # against the reference under the field's convention (fp32 eager, torch's TF32 defaults, as KernelBench's
    # published baselines): comparable with KernelBench's and Dr. Kernel's speedups; None where unknown
    speedup_field: float | None = None
    precision: str | None = None  # ieee or tf32; None where the registry does not know it
    timing_samples: int | None = None  # timed samples behind runtime_ms (None: untimed)
    run_ids: list[int] = []  # the runs whose turns produced this kernel for this problem
    tuning: TunedFrom | None = None  # where `tritongym tune` made it from, if it is a tuned variant


class TurnAdvantage(BaseModel):
    """One turn's learning signal, as `tritongym advantages` prints it."""

    group: int
    trajectory: int
    turn: int
    reward: float
    advantage: float
    kept: bool
    kept_tokens: int
    policy_tokens: int


class AdvantageReport(BaseModel):
    estimator: str
    filters: list[str]
    rows: list[TurnAdvantage]
    metrics: dict[str, float]


class RolloutSummary(BaseModel):
    """What `tritongym rollouts` did: where the trajectories went and how the turns fared."""

    run_id: int | None
    trajectories_file: str
    turns: int
    statuses: dict[str, int]
    mean_reward: float
    evaluations: int
    generate_s: float
    evaluate_s: float


class ExportedKernel(BaseModel):
    problem: str
    file: str
    kernel_id: str
    evaluation_id: int
    speedup: float | None
    compile_speedup: float | None = None
    runtime_ms: float | None
    device_class: str
    backend: str
    size: str
    precision: str | None
    run_ids: list[int]
    tuning: TunedFrom | None = None  # a tuned variant: its source kernel and the config baked into the file


class ExportManifest(BaseModel):
    """`DIR/manifest.json` of `tritongym best --export DIR`."""

    directory: str
    filters: dict
    kernels: list[ExportedKernel]
    missing: list[str]  # problems asked for by name that have no kernel under the filters


class KernelEvaluation(BaseModel):
    evaluation_id: int
    problem: str
    backend: str
    device: str
    device_class: str
    size: str
    precision: str | None
    protocol: str
    status: str
    correct: bool
    hacked: bool
    runtime_ms: float | None
    speedup: float | None
    compile_speedup: float | None = None
    speedup_field: float | None = None  # against the field's convention (EvaluationResult.speedup_field)
    field_convention: str | None = None  # timed, same_as_own, or None (unknown)
    timing_samples: int | None
    reward: float | None
    message: str
    created_at: str


class KernelTurn(BaseModel):
    turn_id: int
    run_id: int
    run_kind: str | None
    run_name: str | None
    problem: str | None
    step: int | None
    turn: int | None
    sample: int | None
    evaluation_id: int | None
    status: str | None
    reward: float | None
    created_at: str


class KernelHistory(BaseModel):
    """`tritongym kernel ID`: a kernel's source, every evaluation of it and every turn that produced it."""

    kernel_id: str
    origin: str | None
    created_at: str | None
    source: str
    evaluations: list[KernelEvaluation]
    turns: list[KernelTurn]
