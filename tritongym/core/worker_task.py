"""What the parent sends to a sandboxed worker: plain data, validated on both sides of the pipe."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Tolerance(BaseModel):
    """Elementwise |out - ref| <= atol + rtol * |ref|, and ||out - ref|| <= rel_norm * ||ref||.

    The relative-norm bound is what stops an all-zeros answer from passing on outputs whose
    magnitude is below atol.
    """

    model_config = ConfigDict(extra="forbid")
    atol: float
    rtol: float
    rel_norm: float


BUILTIN_PROBES: tuple[str, ...] = ("modes", "refresh", "repeat", "ghost", "precomputed", "degenerate")
"""The probes whose calls are hard-wired in the worker (`core/worker/probes.py`): they share the trial inputs, the
launch recorder's `ghost` and `watch` switches and the trusted comparison of whole outputs.  The built-in plugin
`tritongym.plugins.probes.builtin` registers each under this name through `register_probes`, as any plugin
registers its own; a check declares the ones it reads (`RuntimeCheck.probes`), and only the declared ones run.
Their calls keep their own names in the evidence: `mode:grad+train`, `mode:no_grad+eval`, `mode:grad+eval` for
`modes`, `degenerate:<control>` for `degenerate`, the probe's name for the rest."""


class ProbeSpec(BaseModel):
    """What the worker and the trusted side need to run one registered probe (`interfaces.Probe.spec`).

    A built-in names its hard-wired calls (`BUILTIN_PROBES`); any other names `target`, the function called in the
    candidate's process, and maybe `reference`, its trusted half, called with the reference model on the same
    inputs.  `fresh_inputs`: both halves get inputs no other call saw (seeded from the draw and the probe's name,
    `input_source.probe_inputs_seed`) instead of trial 0's; `skip_own_kernels`: the candidate's call runs with
    every launch of its own Triton kernels skipped, as the ghost replay's does."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    builtin: bool = False
    target: str = ""
    reference: str = ""
    fresh_inputs: bool = False
    skip_own_kernels: bool = False


def builtin_probe_specs() -> dict[str, ProbeSpec]:
    """Every built-in probe: a task made by hand (a test, a benchmark) runs them all; the Evaluator sends only the
    probes its enabled checks declare."""
    return {name: ProbeSpec(builtin=True) for name in BUILTIN_PROBES}


class TimingOptions(BaseModel):
    """How a GPU worker times and profiles (ARCHITECTURE.md §3). Budgets are in time, not in call counts, so
    a 5 µs kernel and a 50 ms one each get a median of many samples without wasting the GPU."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    warmup_ms: float = Field(default=10.0, gt=0, description="time spent calling before any sample is kept")
    rep_ms: float = Field(default=100.0, gt=0, description="time budget for the kept samples")
    min_samples: int = Field(default=10, ge=3)
    max_samples: int = Field(default=500, ge=3)
    fast_us: float = Field(default=50.0, ge=0, description="below this a forward is batched in one CUDA graph")
    graph_batch_us: float = Field(default=500.0, gt=0, description="device time one batched sample aims for")
    check_ms: float = Field(default=20.0, gt=0, description="budget of the quick paired reference re-timing")
    profile_calls: int = Field(default=3, ge=0, description="forwards profiled with torch.profiler (0 = no PR)")
    unlock_compiles: bool = Field(
        default=True,
        description="give the shared GPU hold back while Triton compiles (CPU work), so timings on the GPU do "
        "not wait for other workers' compilers",
    )
    yield_between_calls: bool = Field(
        default=False,
        description="give the shared GPU hold back after each correctness call (once its outputs are handed out) "
        "and take it again behind waiting timings, so a timing waits for one call of each sharer rather than "
        "its whole correctness phase",
    )
    yield_to_waiting_timings: bool = Field(
        default=True,
        description="give the shared GPU hold back after a correctness call only while a timing waits for the "
        "GPU (a flag the pool shares with its workers, read after each call: no round trip otherwise), and take "
        "it back once that timing has had the GPU (`GPULock.step_aside`), so the timing waits for one call of "
        "each sharer rather than its whole correctness phase (on by default since an A/B on one H200: the RL "
        "batch's draining 41 s -> 16 s)",
    )
    timing_window_s: float = Field(
        default=0.0,
        ge=0,
        le=30,
        description="a timing waits up to this long for other timings to queue behind it, correctness work going "
        "on, before new sharers are held back: one drain of the GPU for several timings (0: drain at once)",
    )
    reconcile_tolerance: float = Field(
        default=0.05, gt=0, description="a cached reference within this relative distance of the paired one is used"
    )
    shared_check_s: float = Field(
        default=30.0,
        ge=0,
        le=600,
        description="the reference's timing before a candidate, taken this recently for another task of the same "
        "problem (before this candidate existed), serves this one too: no exclusive hold of its own (0: each "
        "task times the reference itself).  On by default since an A/B on one H200 (128 RL candidates, with "
        "`yield_to_waiting_timings`): 176 exclusive holds -> 98, cold 93.9 s -> 79.9 s, steady 77.0 s -> 62.8 s, "
        "the same verdicts",
    )

    def cached_reference_stands(self, paired_ms: float, cached_ms: float) -> bool:
        """Whether a cached reference timing still stands beside the paired one taken before this candidate: within
        `reconcile_tolerance`.  The one test both the pool (which then keeps or drops its own copy) and the
        Evaluator (which then uses the cached or the paired timing, and keeps or drops the registry's) apply."""
        return abs(paired_ms / cached_ms - 1) <= self.reconcile_tolerance


class WorkerTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["evaluate", "screen"] = "evaluate"
    nonce: str = ""
    problem_name: str
    problem_source: str
    sizes: dict[str, Any] = Field(default_factory=dict)
    extra_sizes: list[dict[str, Any]] = Field(default_factory=list)  # more shape sets, one trial each
    extra_sizes_optional: bool = False  # derived sets: one the reference cannot run is skipped, not an error
    late_trial: bool = True  # one more trial on fresh inputs after every probe
    degenerate: dict[str, str] = Field(
        default_factory=dict, description="negative control that passes this problem -> input transform that breaks it"
    )
    stochastic: Literal["train_mode", "always"] | None = Field(
        default=None,
        description="the screen found the reference drawing random numbers (`worker/stochastic.py`): 'train_mode' = "
        "only in train() mode, so Model and every ModelNew are judged in eval() mode; 'always' = in eval() mode "
        "too (the Evaluator refuses such a problem)",
    )
    candidate_source: str | None = None
    probes: dict[str, ProbeSpec] = Field(
        default_factory=builtin_probe_specs,
        description="the registered probes the enabled checks declare (built-in and plugin alike), by name: only "
        "these run, on both sides (default: every built-in one, for a task made without an Evaluator)",
    )
    device: str = "cpu"
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2, 3, 4])
    init_seed: int = 0
    # the `precomputed` probe's inputs, drawn for each task and not part of the keeper's record: the samples of an
    # RL batch share one record, and an answer to inputs every sample saw was found in a fresh buffer of a later
    # sample's worker (memory a process that computed it gave back), judging an honest kernel `hacked`
    probe_seed: int = 0
    precision: Literal["ieee", "tf32", "half"] = "tf32"
    # the reference's constant parameters and running statistics drawn away from their values (`weights.py`)
    draw_parameters: bool = True
    tolerances: dict[str, Tolerance] = Field(default_factory=dict)
    memory_mb: int | None = None
    cpu_s: int | None = None
    file_mb: int = 64
    timing: TimingOptions = Field(default_factory=TimingOptions)
    reference_peak_mb: float | None = None  # the reference side's GPU peak the registry knows (pool reserves it)
    reference_host_mb: float | None = None  # and the host MiB its record parks (pool reserves it; no `SIZE` then)
    cached_reference: dict[str, Any] | None = None  # a TimingStats from the registry, for this device/size/precision
    compile_reference: bool = False  # also time torch.compile(reference), before the candidate is imported
    cached_compile_reference: dict[str, Any] | None = None  # ...unless the registry already holds that timing
    # the reference under the field's convention (`measure/field_convention.py`), a TimingStats from the registry:
    # the keeper then times it only in its own class
    cached_field_reference: dict[str, Any] | None = None
    bandwidth_gbps: float | None = None  # the device's copy bandwidth from the registry; measured when None
    gpu_memory_fraction: float | None = None  # cap on the caching allocator for the candidate
    kept_trials: list[int] | None = None  # seeds of the extra trials the keeper judges (None: all planned)

    @property
    def eval_mode(self) -> bool:
        """Model and ModelNew are judged in eval() mode: the reference draws random numbers only in train() mode."""
        return self.stochastic == "train_mode"


class SandboxLimits(BaseModel):
    """Limits for one worker. `memory_mb` bounds the address space (CPU workers only: on CUDA workers
    the driver's virtual reservations break under RLIMIT_AS, so GPU backends bound memory otherwise)."""

    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(default=120.0, gt=0)
    memory_mb: int | None = Field(default=8192, ge=256)
    file_mb: int = Field(default=64, ge=1)
