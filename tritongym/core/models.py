"""The data that flows between the rooms (ARCHITECTURE.md §1): problems, candidates, evidence, verdicts, results.

`EvaluationResult` is the contract every later part builds on (trainer rows, test-time scaling, the
registry, `--json` output), so fields are only ever added, never renamed.  `Evidence` is what a backend
measured inside the sandboxed worker: it crosses a process boundary as JSON and is treated as untrusted
data, which is why every field is typed and validated here rather than read from a dict.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tritongym.core.phases import check_seconds, split_legacy
from tritongym.core.source import kernel_id_of, normalise_source

PROTOCOL_VERSION = "10"
"""Bumped whenever a change to the evaluation protocol makes stored verdicts incomparable."""

INPUT_DISTRIBUTIONS: dict[str, tuple[float, str]] = {
    "as_is": (1.0, "the problem's own inputs"),
    "scaled_down": (1e-3, "inputs scaled by 1e-3"),
    "negated": (-1.0, "inputs negated"),
    "scaled_up": (4.0, "inputs scaled by 4"),
}
"""The distributions main trials draw inputs from (`worker/distributions.py` says why each): name -> (the factor
every floating input is multiplied by, what the candidate was given, in words)."""

TRIAL_DISTRIBUTIONS: tuple[str, ...] = ("as_is", "scaled_down", "negated", "scaled_up")
"""Main trial k uses `TRIAL_DISTRIBUTIONS[k % 4]`: the first trial is always the problem's own inputs."""


class Status(str, Enum):
    """Outcome of one evaluation, from best to worst stage reached."""

    ok = "ok"
    rejected = "rejected"  # a static check refused the source before any worker ran
    compile_error = "compile_error"  # the candidate did not import (syntax error, bad import, jit error)
    runtime_error = "runtime_error"  # it imported but raised while building or running
    incorrect = "incorrect"  # it ran but its outputs (or its untouched inputs) did not match
    hacked = "hacked"  # outputs matched but a runtime check found it cheating
    timeout = "timeout"  # the worker outlived the time limit and was killed
    crashed = "crashed"  # the worker died (segfault, os._exit, memory limit) or sent no valid result


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Problem(_Model):
    """A KernelBench-format reference (`Model`, `get_inputs`, `get_init_inputs`) at one size preset."""

    name: str
    source: str
    size: str = "cpu"
    sizes: dict[str, Any] = Field(default_factory=dict, description="module constants set for this preset")
    category: str | None = None
    description: str = ""
    origin: str = ""
    solution: str | None = Field(default=None, description="a known-correct candidate source, if shipped")
    extra_sizes: list[dict[str, Any]] = Field(
        default_factory=list,
        description="more shape sets correctness is checked at, each overriding `sizes` (timing stays on `sizes`)",
    )
    extra_sizes_origin: Literal["declared", "derived"] | None = Field(
        default=None,
        description="declared: the problem's EXTRA_SIZES; derived: halved and odd values of its shape constants",
    )

    @property
    def key(self) -> str:
        """Identity of the computation: normalised reference source plus the shapes it runs at."""
        payload = normalise_source(self.source) + "\n#sizes " + json.dumps(self.sizes, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


class Candidate(_Model):
    """Source code that defines `ModelNew` with Triton kernels, as written by a model or a person."""

    source: str
    origin: str = ""

    @property
    def kernel_id(self) -> str:
        return kernel_id_of(self.source)


class ErrorInfo(_Model):
    """What went wrong, in the words a model can act on next turn."""

    kind: str
    message: str
    traceback: str | None = None
    line: int | None = None


class CheckVerdict(_Model):
    name: str
    passed: bool
    reason: str = ""
    stage: Literal["static", "runtime"] = "static"
    line: int | None = None
    plugin: str | None = None
    unjudged: bool = Field(
        default=False,
        description="the check could not run (its judge unreachable, its probe missing): `reason` says why; it "
        "passed nothing and failed nothing, and an evaluation with such a check is never stored",
    )
    other_shapes_only: bool = Field(
        default=False,
        description="failed only at an extra shape set, passed at the problem's own shapes (a tail's error that a "
        "precision class names): a matter of generality, so `require_generality` decides it as it decides a "
        "shape set's wrong outputs",
    )


class JudgeVerdict(_Model):
    """A model's verdict on one kernel for one problem, as a model-judged check (`llm-judge`) keeps it in the
    registry (`judge_verdicts`), so the same kernel is never sent to the same judge with the same prompt twice.

    `judge_model` names the engine, the model and its sampling settings; `template_hash` the prompt template
    (and whether it showed the evidence).  `passed` is None when the answer said neither pass nor fail: the
    raw `answer` is kept, and the check's current policy decides what that means."""

    check: str
    kernel_id: str
    problem_key: str
    judge_model: str
    template_hash: str
    passed: bool | None
    reason: str = ""
    answer: str = ""
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))


class RewardBreakdown(_Model):
    """The turn reward and what it is made of, as configured (`EvalConfig.rewards`).

    `total` is the weighted sum of the present `components`; a component whose measurement the result does
    not carry (speed and PR on a backend that does not time) is in `absent`, with the reason, instead of
    `components`, so that a missing measurement never reads as a zero.  For a turn a check found hacked,
    `total` is the configured hack penalty, recorded in `penalty`, and the components are still kept."""

    total: float = 0.0
    components: dict[str, float] = Field(default_factory=dict)
    weights: dict[str, float] = Field(default_factory=dict)
    absent: dict[str, str] = Field(default_factory=dict, description="component name -> why it was not scored")
    penalty: float | None = Field(default=None, description="the hack penalty that replaced the total, if any")

    def describe(self) -> str:
        """One line for people and models, e.g. `1 (correctness 1; speedup absent: not timed on ...)`."""
        parts = []
        if self.penalty is not None:
            parts.append("hack penalty")
        if self.components:
            parts.append(", ".join(f"{name} {value:.3g}" for name, value in self.components.items()))
        by_reason: dict[str, list[str]] = {}
        for name, reason in self.absent.items():
            by_reason.setdefault(reason, []).append(name)
        for reason, names in by_reason.items():
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            parts.append(f"{listed} absent: {reason}")
        return f"{self.total:.3g}" + (f" ({'; '.join(parts)})" if parts else "")


class Fingerprint(_Model):
    """Software and hardware a result was measured with; stored with every evaluation."""

    tritongym: str
    python: str
    torch: str | None = None
    triton: str | None = None
    platform: str = ""
    cpu: str = ""
    device_name: str = ""
    driver: str | None = None
    cuda: str | None = None
    protocol: str = PROTOCOL_VERSION


# --- evidence gathered inside the worker -------------------------------------------------------------


class OutputComparison(_Model):
    """One output tensor of one trial, compared with the reference's inside the worker."""

    index: int
    is_tensor: bool
    exact_type: bool = True
    shape: list[int] | None = None
    ref_shape: list[int] | None = None
    dtype: str | None = None
    ref_dtype: str | None = None
    device: str | None = None
    ref_device: str | None = None
    numel: int = 0
    mismatched: int = 0  # elements outside atol + rtol * |ref|, NaN/inf placement differences included
    ties: int = 0  # index elements that differ from the reference's only at tied values (`measure/ties.py`)
    rounded: int = 0  # 8-bit values one step from the reference's at rounding boundaries (`measure/rounding.py`)
    max_abs_err: float | None = None
    mean_abs_err: float | None = None
    rel_norm_err: float | None = None
    atol: float = 0.0
    rtol: float = 0.0
    rel_norm_tol: float = 0.0
    # against the float64 "gold" of the reference (core/precision.py), on a sample of at most GOLD_SAMPLE positions
    gold_err: float | None = None  # ||out - gold|| / ||gold||: the candidate's precision
    ref_gold_err: float | None = None  # ...and the reference's own, at its dtype with TF32 off
    ref_tf32_err: float | None = None  # ...the reference's with TF32 on: what the `tf32` class costs this problem
    ref_tf32_trunc_err: float | None = None  # ...with matmul operands truncated to TF32 (Triton's default tl.dot)
    ref_half_err: float | None = None  # ...and under bfloat16 autocast: what the `half` class costs it
    # a float32 output's width: the share of its finite non-zero values that fit float16's 11 significant bits
    # (low 13 mantissa bits zero), the candidate's and the reference's (core/precision.py: stored at 16 bits)
    short_significands: float | None = None
    ref_short_significands: float | None = None
    note: str = ""


class LaunchRecord(_Model):
    """One Triton kernel launched during a trial, counted; `own` = defined in the candidate's file.

    `compiled` is the name of the compiled GPU function (what a profiler shows); the profiler's
    attribution of device time to the candidate matches on it exactly.
    """

    kernel: str
    own: bool
    count: int = 1
    grid: str = ""
    compiled: str = ""


class AutotuneChoice(_Model):
    """The config `@triton.autotune` settled on for one of the candidate's kernels, once per tuning key.

    Recorded inside the worker (`core/worker/autotune.py`) on every backend, so a verdict says which
    variant of the kernel it judged and timed.  `how` says how the choice was made: `benchmarked` (Triton
    timed each of `configs` candidates, `autotune_s` is its `bench_time`, spent before and outside the
    timing), `first` (triton-cpu: the interpreter cannot time, so the first config left after the
    kernel's own `prune_configs_by` runs; nothing else was checked), `only` (one config left after
    pruning: nothing to choose) or `cached` (Triton's on-disk autotune cache answered; nothing timed here).
    """

    kernel: str
    config: dict[str, bool | int | float | str | None] = Field(
        default_factory=dict,
        description="the config's kwargs (e.g. BLOCK_M), then num_warps and num_stages, num_ctas and maxnreg when set",
    )
    configs: int = Field(default=1, description="how many configs it chose among (after prune_configs_by)")
    declared: int = Field(default=1, description="how many configs @triton.autotune declared")
    how: Literal["benchmarked", "first", "only", "cached"] = "benchmarked"
    autotune_s: float | None = Field(default=None, description="Triton's bench_time; None when nothing was timed")
    when: str = Field(default="", description="the call that tuned it: 'trial 0', 'probe ...', 'timing'; '' = other")

    def describe(self) -> str:
        """One line, e.g. `kernel matmul_kernel picked BLOCK_M=128, num_warps=8, num_stages=3 of 6 configs (1.9 s)`."""
        picked = ", ".join(f"{k}={v}" for k, v in self.config.items()) or "its default config"
        how = {
            "benchmarked": f"{self.autotune_s:.2g} s" if self.autotune_s is not None else "benchmarked",
            "first": "the first after pruning: the interpreter cannot time the others",
            "only": "the only one left after pruning" if self.declared > 1 else "its only config",
            "cached": "from Triton's autotune cache, not timed here",
        }[self.how]
        where = f", tuned during {self.when}" if self.when and not self.when.startswith("trial") else ""
        plural = "config" if self.configs == 1 else "configs"
        return f"kernel {self.kernel} picked {picked} of {self.configs} {plural} ({how}{where})"


class TimingStats(_Model):
    """One timed callable: the median of `samples` measurements and their spread.

    `mode` says how launch overhead was kept out: `graph` replays one captured forward per sample,
    `graph-batched` replays `calls_per_sample` forwards per sample (fast kernels), `eager` calls the
    forward directly with a device-wide synchronize before the end event (its host launch time counts).
    `l2` says how the cache was made cold: flushed before each sample, or rotated over enough input sets
    to exceed it, or `warm` when neither was possible.
    """

    median_ms: float
    iqr_ms: float
    samples: int
    mode: Literal["graph", "graph-batched", "eager"]
    calls_per_sample: int = 1
    l2: Literal["flushed", "rotated", "warm"] = "flushed"
    note: str = ""


class ProfileEntry(_Model):
    """One GPU kernel seen by `torch.profiler` over the profiled forwards (device time per forward)."""

    kernel: str
    device_ms: float
    calls: int
    own: bool
    share: float


class TimingReport(_Model):
    """How `runtime_ms` and `ref_runtime_ms` were obtained, with everything needed to doubt them."""

    precision: str
    candidate: TimingStats | None = None
    reference: TimingStats | None = None  # the stats ref_runtime_ms comes from (cached or paired)
    reference_source: Literal["paired", "cached"] = "paired"
    reference_cached: TimingStats | None = None  # the cached timing the task carried, if any
    reference_before: TimingStats | None = None  # timed before the candidate was imported
    reference_after: TimingStats | None = None  # and again after it ran
    reference_slowdown: float | None = None  # after / before; > 1 + noise = the candidate slowed the baseline
    compile_reference: TimingStats | None = None  # torch.compile(reference), timed before the import
    compile_reference_source: Literal["measured", "cached"] | None = None
    # the reference under the field's convention (`measure/field_convention.py`: torch's TF32 defaults, as
    # KernelBench's published baselines), timed before the import where its switches change what runs
    field_reference: TimingStats | None = None
    # measured (here), cached (an earlier task's or the registry's), same_as_own (no float32 op whose TF32
    # switch differs ran: the field's reference time is the own class's)
    field_reference_source: Literal["measured", "cached", "same_as_own"] | None = None
    field_ops: list[str] = Field(default_factory=list)  # the float32 ops whose TF32 switch differs from the field's
    bytes_moved: int | None = None  # tensor inputs + parameters + outputs: what any implementation must move
    bandwidth_gbps: float | None = None  # the device's measured copy bandwidth (read + write)
    roofline_ms: float | None = None  # bytes_moved / bandwidth: no honest kernel is much faster
    timed_outputs_checked: int = 0
    remeasured_ms: float | None = None  # a second, independent timing of a candidate whose speedup was suspect
    remeasured_status: str | None = None  # that second evaluation's status
    notes: list[str] = Field(default_factory=list)


def describe_sizes(sizes: dict[str, Any]) -> str:
    """`BATCH=1, DIM=17`: a shape set as the problem's constants name it."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


class TrialEvidence(_Model):
    seed: int
    sizes: dict[str, Any] | None = None  # an extra shape set's constants; None = the problem's main shape
    input_shapes: list[list[int]] = Field(default_factory=list)  # the shape of each tensor input
    late: bool = False  # the late trial: fresh inputs, after every probe
    # which distribution a main trial's inputs came from (`worker/distributions.py`); None: the problem's own
    # inputs (shape sets, the late trial)
    distribution: str | None = None
    # the reference itself gave NaN or inf on this trial's inputs where it gave none on the problem's own: the
    # distribution left the problem's domain (negated probabilities, scaled log-probabilities); not judged
    out_of_domain: bool = False
    outputs: list[OutputComparison] = Field(default_factory=list)
    n_outputs: int = 0
    ref_n_outputs: int = 0
    inputs_unchanged: bool = True
    mutated_inputs: list[int] = Field(default_factory=list)
    # inputs the reference updates in place that the candidate left otherwise (`task_runner.inputs_left`)
    inputs_unlike_reference: list[int] = Field(default_factory=list)
    launches: list[LaunchRecord] = Field(default_factory=list)
    candidate_s: float | None = None
    reference_s: float | None = None

    def label(self, index: int) -> str:
        """How a message names this trial: `trial 2 (seed 7)`, `at shape set BATCH=1, DIM=17 (...)`, ..."""
        if self.sizes is not None:
            shapes = "; ".join(str(s) for s in self.input_shapes)
            inputs = f"input shape {shapes}; " if len(self.input_shapes) == 1 else f"input shapes {shapes}; "
            return f"at shape set {describe_sizes(self.sizes)} ({inputs if shapes else ''}seed {self.seed})"
        if self.late:
            return f"late trial (fresh inputs after every probe; seed {self.seed})"
        if self.distribution in INPUT_DISTRIBUTIONS and self.distribution != TRIAL_DISTRIBUTIONS[0]:
            return f"trial {index} (seed {self.seed}), wrong on {INPUT_DISTRIBUTIONS[self.distribution][1]}"
        return f"trial {index} (seed {self.seed})"


PROBE_JSON_LIMIT = 64 * 1024
"""Bytes of JSON one probe's value (or its reference half's answer) may take: evidence comes from the candidate's
process, so what it may send is bounded (the worker records an error instead; the trusted side checks again)."""


class ProbeCall(_Model):
    """One call of a registered probe (`interfaces.Probe`), built-in or not, as the trusted side found it.

    A built-in's call (`core/worker/probes.py`) carries its `outputs` compared with the reference's for the same
    inputs (`refresh` and `repeat`: trial 0's), and for `precomputed` the trusted side's `findings`.  A plugin
    probe's call carries `value`, the candidate-side function's answer after a JSON round trip (None when it
    failed: `error` says why), and `reference`, its trusted half's answer on the same inputs (None without one,
    or when it failed: `reference_error`).  `launches` are the candidate's launches during the call."""

    probe: str  # mode:grad+train, mode:no_grad+eval, mode:grad+eval, refresh, repeat, ghost, precomputed,
    # degenerate:<control>, or a plugin probe's registered name
    trial: int  # whose inputs it used; -1 = inputs no other call saw
    outputs: list[OutputComparison] = Field(default_factory=list)
    n_outputs: int = 0
    ref_n_outputs: int = 0
    launches: list[LaunchRecord] = Field(default_factory=list)
    error: str = ""  # the call raised this (a plugin probe: or its target failed to import, or its value was no JSON)
    control: str = ""  # degenerate:<control> probes: the negative control whose answer is compared as well
    control_outputs: list[OutputComparison] = Field(default_factory=list)  # ...the outputs against that answer
    # per output: the mean absolute distance of the reference's answer to other inputs (a decoy) from this call's
    # reference (None: none), sampled on the trusted side; `verdict.probe_is_the_answer` reads it (the ghost probe)
    decoy_errs: list[float | None] = Field(default_factory=list)
    # what the trusted side found in the call (`precomputed`: where a tensor already held an output before an own
    # kernel ran, `probes.prior_answers`)
    findings: list[str] = Field(default_factory=list)
    value: Any = None  # a plugin probe: the candidate-side function's JSON answer
    reference: Any = None  # a plugin probe with a trusted half: its JSON answer on the same inputs
    reference_error: str = ""  # ...or why it has none (the reference's or the plugin's failure, not the candidate's)

    @field_validator("value", "reference")
    @classmethod
    def _plain_json(cls, value: Any) -> Any:
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a probe value must be plain JSON ({exc})") from None
        if len(text.encode()) > PROBE_JSON_LIMIT:
            raise ValueError(f"a probe value takes {len(text.encode())} bytes of JSON; at most {PROBE_JSON_LIMIT}")
        return value

    @classmethod
    def from_worker(cls, name: str, entry: object, answer: dict | None = None) -> ProbeCall:
        """A plugin probe's call from what the candidate's process sent (`plugin_probes.run_plugin_probes`: its JSON
        text, error, launches and trial), parsed and bounded again on the trusted side (that process may have
        replaced `json` itself), beside its trusted half's `answer` (JSON text and error, computed on the trusted
        side).  Whatever the entry holds, the result is a call: a malformed one's error says so."""
        reference_error = str(answer["error"])[:1000] if answer else ""
        reference = json.loads(answer["json"]) if answer and not reference_error else None
        call = cls(probe=name, trial=0, reference=reference, reference_error=reference_error)
        try:
            text, error, trial = entry["json"], entry["error"], entry.get("trial", 0)
            if not isinstance(text, str) or not isinstance(error, str):
                raise TypeError("its value or error is not text")
            if len(text.encode()) > PROBE_JSON_LIMIT:
                raise ValueError(f"its value takes {len(text.encode())} bytes of JSON; at most {PROBE_JSON_LIMIT}")
            launches = [LaunchRecord.model_validate(x) for x in entry["launches"]]
            trial = trial if type(trial) is int and trial in (0, -1) else 0  # -1: the probe's own inputs
            return call.model_copy(
                update={
                    "trial": trial,
                    "launches": launches,
                    "error": error[:1000],
                    "value": cls._plain_json(json.loads(text)),
                }
            )
        except Exception as exc:  # noqa: BLE001 - whatever the candidate's process sent, it gets no further
            return call.model_copy(
                update={"error": f"the worker sent a malformed answer ({type(exc).__name__}: {exc})"}
            )


class WeightBinding(_Model):
    """How the candidate's weights were set (`worker/weights.py`), and which of the reference's were drawn."""

    bound: list[str] = Field(default_factory=list, description="candidate entries bound to the reference's by name")
    seeded: list[str] = Field(
        default_factory=list,
        description="'candidate name <- reference name': entries built under the shared seed equal to a reference "
        "entry as built, given its value",
    )
    unmatched: list[str] = Field(
        default_factory=list, description="floating entries that match neither by name nor the shared seed"
    )
    drawn: list[str] = Field(
        default_factory=list, description="the reference's constant parameters (and running statistics) drawn"
    )
    draw_seed: int | None = Field(default=None, description="the seed of that draw (None: the draw was off)")


class Evidence(_Model):
    """Everything a backend measured for one candidate; judged later, in the parent process."""

    stage: Literal["setup", "problem", "import", "init", "bind", "run", "done"] = "setup"
    error: ErrorInfo | None = None
    trials: list[TrialEvidence] = Field(default_factory=list)
    weights: WeightBinding = Field(default_factory=WeightBinding)
    runtime_ms: float | None = None
    ref_runtime_ms: float | None = None
    compile_ref_runtime_ms: float | None = None  # torch.compile(reference), when the task asked for it
    pr: float | None = None
    profile: list[ProfileEntry] = Field(default_factory=list)
    timing: TimingReport | None = None
    timed_trials: list[TrialEvidence] = Field(default_factory=list)  # outputs of timed calls, compared
    controls: dict[str, list[TrialEvidence]] = Field(default_factory=dict)
    # screen mode: per control, per input transform, the control against the reference on transformed inputs
    control_breaks: dict[str, dict[str, list[TrialEvidence]]] = Field(default_factory=dict)
    # the screen's finding on a reference that draws random numbers (`worker/stochastic.py`): "train_mode" (it
    # does in train() mode and not in eval() mode), "always" (in eval() mode too), None (it does not)
    stochastic: Literal["train_mode", "always"] | None = None
    stochastic_note: str = ""  # what differed between two calls on the same inputs
    # every probe call (`interfaces.Probe`, built-in or a plugin's), of the probes the enabled checks declared
    probes: list[ProbeCall] = Field(default_factory=list)
    environment_changes: list[str] = Field(default_factory=list)  # what the candidate replaced or flipped
    side_work: list[str] = Field(default_factory=list)  # threads, processes, outputs still being written
    torch_ops: dict[str, int] = Field(default_factory=dict)  # ATen ops the candidate's trials ran (op_trace.py)
    reference_torch_ops: dict[str, int] = Field(default_factory=dict)  # ...and the reference's forward
    # work (multiply-adds or elements touched, op_trace.op_work) per compute op of one main-shape forward
    torch_work: dict[str, float] = Field(default_factory=dict)
    reference_torch_work: dict[str, float] = Field(default_factory=dict)
    tf32_kernels: list[str] = Field(default_factory=list)  # own compiled kernels multiplying in TF32
    autotune: list[AutotuneChoice] = Field(default_factory=list)  # the config each autotuned own kernel ran with
    # the argument types of the own kernels launched: hints for the fork server, which builds their Triton launchers
    # for later workers after checking every type (`worker/triton_cache.py`); never part of a verdict
    launchers: list[list[str]] = Field(default_factory=list)
    fingerprint: Fingerprint | None = None
    # the reference's peak GPU memory (MiB) while the keeper computed its outputs, gold and probes (GPU pool)
    reference_peak_mb: float | None = None
    stdout_tail: str = ""
    worker_s: float | None = None
    # what the task measured besides the evidence, each kind in its own home (core/phases.py): seconds per stage
    # (worker, driver and keeper side), counts, flags and sizes in MiB
    phases: dict[str, float] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    flags: dict[str, bool] = Field(default_factory=dict)
    memory_mb: dict[str, float] = Field(default_factory=dict)

    @field_validator("phases")
    @classmethod
    def _seconds_only(cls, phases: dict[str, float]) -> dict[str, float]:
        return check_seconds(phases)

    def probe(self, name: str) -> ProbeCall | None:
        """The call of the probe named `name` (a plugin probe's, or a built-in's one call), None if it made none."""
        return next((call for call in self.probes if call.probe == name), None)


# --- the verdict ---------------------------------------------------------------------------------------


class EvaluationResult(_Model):
    """The verdict on one candidate for one problem on one backend and device."""

    problem_id: str
    problem_key: str
    kernel_id: str
    backend: str
    device: str
    device_class: str
    size: str
    protocol: str = PROTOCOL_VERSION
    status: Status
    correct: bool = False
    hacked: bool = False
    message: str = ""
    checks: list[CheckVerdict] = Field(default_factory=list)
    runtime_ms: float | None = None
    ref_runtime_ms: float | None = None
    speedup: float | None = None
    compile_ref_runtime_ms: float | None = None  # the reference under torch.compile (option compile_reference)
    compile_speedup: float | None = None  # compile_ref_runtime_ms / runtime_ms
    field_ref_runtime_ms: float | None = Field(
        default=None,
        description="the reference timed under the field's convention: fp32 eager with torch's TF32 defaults (float32 "
        "matmuls exact, cuDNN convolutions TF32), as KernelBench's published eager baselines and the papers that "
        "compare with them (Dr. Kernel, KernelGYM) time it (core/measure/field_convention.py); equal to "
        "ref_runtime_ms where that is the reference's own class (field_convention 'same_as_own')",
    )
    speedup_field: float | None = Field(
        default=None,
        description="field_ref_runtime_ms / runtime_ms: the speedup comparable with KernelBench's and Dr. Kernel's. "
        "`speedup` is against the reference in its own precision class (TF32 matmuls under the default `tf32` "
        "policy: about 6x faster than the field's on a fp32 GEMM on an H100), so an honest TF32 kernel is not "
        "credited for TF32 alone; None where the candidate or the reference was not timed",
    )
    field_convention: Literal["timed", "same_as_own"] | None = Field(
        default=None,
        description="how speedup_field was reached: 'timed' (the reference timed a second time under the field's "
        "switches: a float32 matmul, or convolution under `ieee`, ran whose TF32 switch differs), 'same_as_own' "
        "(no such op ran, or the CPU backend, where torch has no TF32: the two conventions are one, speedup_field "
        "is speedup); None: a verdict stored before the field's convention was recorded, or not timed on a GPU",
    )
    pr: float | None = None
    reward: RewardBreakdown = Field(default_factory=RewardBreakdown)
    error: ErrorInfo | None = None
    max_abs_err: float | None = None
    rel_norm_err: float | None = None
    weights: WeightBinding | None = Field(
        default=None, description="which weights were bound by name, which came from the shared seed, which drawn"
    )
    generality: Literal["general", "problem_shapes_only"] | None = Field(
        default=None,
        description="general: right at the problem's shapes and at every extra shape set; problem_shapes_only: right "
        "at the problem's shapes (every main trial, every check) and wrong at a shape set, `ok` or `incorrect` as "
        "`require_generality` says; None: no shape set judged (none ran, or the main trials did not match)",
    )
    trials: int = 0  # trials at the main shape (the extra shape sets and the late trial are in the message)
    launches: list[LaunchRecord] = Field(default_factory=list)
    autotune: list[AutotuneChoice] = Field(
        default_factory=list, description="the config the autotuner picked, per autotuned kernel of the candidate"
    )
    timing: TimingReport | None = None
    profile: list[ProfileEntry] = Field(default_factory=list)
    cached: bool = False
    fingerprint: Fingerprint
    evaluation_id: int | None = None
    duration_s: float = 0.0
    phases: dict[str, float] = Field(
        default_factory=dict, description="seconds spent per stage of the evaluation, and nothing else (core/phases.py)"
    )
    counts: dict[str, int] = Field(
        default_factory=dict, description="how many times something happened in the task (`phases.COUNTS`)"
    )
    flags: dict[str, bool] = Field(
        default_factory=dict, description="whether something happened to the task (`phases.FLAGS`)"
    )
    memory_mb: dict[str, float] = Field(
        default_factory=dict,
        description="sizes in MiB: the reference's peak GPU memory and its outputs parked in host memory, the "
        "keeper's own memory after a request (`keeper_{allocated,reserved,private_pool}_mb_{when}`)",
    )
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @model_validator(mode="before")
    @classmethod
    def _stored_phases(cls, data: Any) -> Any:
        """A result stored while `phases` held counts, flags and sizes too loads with each in its home."""
        return split_legacy(data)

    @field_validator("phases")
    @classmethod
    def _seconds_only(cls, phases: dict[str, float]) -> dict[str, float]:
        return check_seconds(phases)

    @property
    def honest_and_correct(self) -> bool:
        return self.status == Status.ok and self.correct and not self.hacked and not self.unjudged

    @property
    def unjudged(self) -> list[str]:
        """The checks that could not run (`CheckVerdict.unjudged`): such a verdict is incomplete, never stored."""
        return [v.name for v in self.checks if v.unjudged]
