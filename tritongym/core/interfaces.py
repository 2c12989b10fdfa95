"""Base classes of the objects plugins register, one per plugin kind.

Every registered object is a small class with a unique `name`, a first docstring line that
`tritongym plugins` shows, and an `Options` pydantic model (`extra="forbid"`) so that a config file
naming it is validated before any work starts.  Plugins subclass these; they import nothing else from
one another.
"""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from tritongym.core.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from tritongym.core.generation import Generation, Message, ModelSpec, SamplingOptions
    from tritongym.core.models import (
        Candidate,
        CheckVerdict,
        EvaluationResult,
        Evidence,
        JudgeVerdict,
        Problem,
    )
    from tritongym.core.tuning import Config, SearchSpace, TuningRecord
    from tritongym.core.turn_batch import Advantages, FilterDecision, TurnBatch
    from tritongym.core.worker_task import ProbeSpec, SandboxLimits, WorkerTask


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PluginObject:
    """What every registered class has in common: a name, a one-line doc and validated options."""

    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions

    def __init__(self, options: BaseModel | None = None) -> None:
        self.options = options if options is not None else self.Options()

    @classmethod
    def from_options(cls, raw: dict | None = None):
        """Build from a plain dict (a config file's table), naming this object in any validation error."""
        try:
            return cls(cls.Options.model_validate(raw or {}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(f"options for {cls.kind} '{cls.name}': {problems}") from None

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


class Backend(PluginObject, ABC):
    """Runs a candidate against a problem on one device, inside the sandbox, and returns `Evidence`."""

    kind = "backend"
    device_type: ClassVar[str] = "cpu"
    default_size: ClassVar[str] = "cpu"

    def unavailable_reason(self) -> str | None:
        """None when this backend can run here, else why not (shown to the user)."""
        return None

    @abstractmethod
    def device_class(self, device: str) -> str:
        """The class of device results are cached under (two identical GPUs share one)."""

    @abstractmethod
    def default_device(self) -> str:
        """The device used when none is chosen."""

    @abstractmethod
    def measure(self, task: WorkerTask, limits: SandboxLimits) -> Evidence:
        """Run the task in a sandboxed worker and return what was measured; never raise for a bad kernel."""

    def concurrency(self) -> int:
        """How many `measure` calls this backend serves at once to good effect (a GPU backend: its warm
        workers); the Ray executor keeps that many tasks in flight on each actor that hosts the backend."""
        return 1

    def size_to(self, tasks: int) -> None:
        """All the work this backend will do is about `tasks` evaluations, plus the screens their problems need, and
        then it is closed (a one-candidate `tritongym eval`): a backend with warm workers may start only what that
        needs instead of a pool for a stream of work.  Called before the first `warm_up` or `measure`, and never for
        open-ended work (`run`, the service); options the user set explicitly win over it.  Default: nothing."""

    screens_need_workers: bool = True
    """Whether a problem's screen (`measure` of a task in mode "screen") takes a worker like a candidate, so that a
    batch's screens are announced to `warm_up`.  False where something already running screens problems (the GPU
    pool's reference keepers)."""

    def warm_up(self, tasks: int) -> None:
        """A hint, answered at once: `tasks` more `measure` calls are coming (a screen counts as one where
        `screens_need_workers`).  A backend with
        warm workers starts them now, in the background, so they warm up while the caller still parses, checks and
        looks things up; `measure` works without it.  Default: nothing (a backend that starts a process per task)."""

    def close(self) -> None:
        """Release long-lived resources (warm worker processes); the backend may be used again after."""

    def busy_seconds(self) -> dict[str, float]:
        """Seconds its workers have spent on tasks since it was created, per device (`cuda:0`, `cpu`), summed
        over the workers of each device; `tritongym serve` exports it as a metric.  Empty where the backend
        keeps no count."""
        return {}

    def hold_outside(self, gpu: int, mb: float) -> None:
        """`mb` MiB of GPU `gpu` (numbered as the `gpus` option numbers it) are held by a process beside this
        backend's workers, a trainer's policy, from now on: a backend that admits work by GPU memory admits it in
        what is left.  Backends that hold no GPU memory ignore it."""

    def memory_budgets(self) -> dict[str, dict[str, float]]:
        """Per device (`cuda:0`), how its memory is shared out now, in MiB (total, held outside, the tasks'
        budget, reserved, the most reserved at once); empty where the backend keeps no budget."""
        return {}


class CheckPolicy(BaseModel):
    """What the evaluation allows, as every check sees it (set by the Evaluator from its config)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    precision: Literal["ieee", "tf32", "half"] = "tf32"


class PluginFactory(Protocol):
    """Builds registered objects with validated options: the plugin host, as a check sees it."""

    def create(self, kind: str, name: str, options: dict | None = None) -> Any:
        """A new instance of the `kind` object registered as `name` (ConfigError for bad options)."""


class JudgeMemo(Protocol):
    """Where verdicts that cost a model call are kept between evaluations: the registry's `judge_verdicts`
    table (`Registry` implements this).  A protocol in the kernel, so a check plugin can use the registry it
    is handed without importing `core.registry`, which plugins may not."""

    def judge_verdict(
        self, check: str, kernel_id: str, problem_key: str, judge_model: str, template_hash: str
    ) -> JudgeVerdict | None:
        """The stored verdict of this check on this kernel and problem by this judge and prompt, if any."""

    def store_judge_verdict(self, verdict: JudgeVerdict) -> None:
        """Store (or replace) one verdict."""


@dataclass(frozen=True)
class CheckContext:
    """What the Evaluator hands every check once, after building it (`Check.bind`).

    Checks are plugins and may import only the kernel, so what a check needs from the rest of tritongym
    comes through here rather than through imports: `host` (the plugin host, through which a check that
    asks a model creates its generation engine) and `memo` (the registry's store of costly verdicts; None
    when the evaluation has no registry).  `reuse` is False under `use_cache = false` (`--no-cache`):
    verdicts are then asked again and stored, never read."""

    host: PluginFactory
    memo: JudgeMemo | None = None
    reuse: bool = True


class Check(PluginObject):
    """A hack check. Subclass `StaticCheck` or `RuntimeCheck`.

    `self.policy` holds the evaluation's policy (the precision: TF32 allowed or not), so a check can
    judge a precision downgrade without being configured twice.  A check with `default_enabled = False`
    (one that costs a model call, such as `llm-judge`) runs only when a config names it, in `checks` or
    `enable_checks`."""

    kind = "check"
    stage: ClassVar[Literal["static", "runtime"]] = "static"
    priority: ClassVar[int] = 50  # checks run (and the first failure is reported) in this order: basic first
    default_enabled: ClassVar[bool] = True
    policy: CheckPolicy = CheckPolicy()

    def bind(self, context: CheckContext) -> None:
        """Called once by the Evaluator before any candidate is judged; a check that needs an engine or the
        registry takes them here, and raises `ConfigError` for a setting it cannot work with."""

    def close(self) -> None:
        """Release what `bind` or judging acquired (a loaded judge model); the check may be used again after."""


class StaticCheck(Check, ABC):
    """Judges the candidate's source in the parent process, before any worker starts."""

    stage = "static"

    @abstractmethod
    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        """`tree` is the parsed candidate; a candidate that does not parse never reaches static checks."""


class RuntimeCheck(Check, ABC):
    """Judges the evidence a backend gathered in the worker; runs in the parent."""

    stage = "runtime"
    # True for a check whose failure can be why outputs are wrong (a TF32 product, unjoined stream work, a
    # patched torch): it is judged on incorrect candidates too, and its reason joins the feedback message
    explains_incorrect = False
    # True for a check that reads the degeneracy probes: the evaluator then screens each problem with the
    # negative controls first (once per problem, cached) so the worker knows which probes to run
    needs_screen = False
    # what a failure makes of a candidate whose outputs matched: "hacked" (a cheat: the default), or "incorrect"
    # for a check that measures a shortfall, not a cheat (precision below the policy: a slightly wrong kernel
    # and a downcast one look alike, and neither is accused of cheating)
    fails_as: ClassVar[Literal["hacked", "incorrect"]] = "hacked"
    # the registered `Probe`s (built-in or not) whose calls this check reads from `evidence.probes`: the Evaluator
    # sends exactly the probes its enabled checks name to the worker (and refuses a name no plugin registered), so
    # a probe no enabled check declares costs nothing, on either side
    probes: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        """Called for candidates whose outputs matched the reference (and, with `explains_incorrect`, for
        candidates whose outputs did not)."""


class Probe(PluginObject):
    """A call of the loaded candidate inside the worker whose evidence a `RuntimeCheck` judges.

    A check judges in the parent, from evidence alone; what it needs to see of the running model, a probe
    gathers.  Every probe is registered through `register_probes`, the built-in ones too (the built-in plugin
    `tritongym.plugins.probes.builtin`), and runs only while an enabled check lists its name in
    `RuntimeCheck.probes`.  Each call arrives as one `ProbeCall` in `evidence.probes` (`Evidence.probe(name)`).

    A built-in (`builtin = True`, its name one of `worker_task.BUILTIN_PROBES`) has hard-wired calls in
    `core/worker/probes.py` whose whole outputs the trusted side compares with the reference's.  Any other probe
    names `target` ("package.module:function"), imported in the sandboxed worker before the candidate exists, from
    the parent's import path, and called after the built-in probes in the candidate's process as
    `function(model, inputs)`, with the launches of the call recorded under the phase ("probe", name).  `inputs`
    are a fresh clone of the first trial's, or, with `fresh_inputs`, a set no other call saw (seeded from the
    draw and the probe's name).  With `skip_own_kernels` every launch of a Triton kernel defined in the candidate
    returns at once during the call (as in the ghost replay).  Its value crosses as JSON, at most
    `PROBE_JSON_LIMIT` bytes (`core/models.py`), into `ProbeCall.value`; an exception, an import failure or an
    oversized value is recorded as the call's `error`.

    `reference` ("package.module:function"), when set, is the probe's trusted half: called as
    `function(reference_model, inputs)` on the same inputs, in a trusted process (the CPU worker's parent side
    after the candidate's process has exited; the GPU's reference keeper), never in the candidate's; its JSON
    answer arrives beside the candidate's as `ProbeCall.reference` (a failure as `ProbeCall.reference_error`,
    which is no fault of the candidate's).

    The candidate's value comes from the candidate's process and is as untrusted as the rest of the evidence:
    the candidate may have replaced anything the function calls.  The trusted side parses and bounds it again.
    A check that reads it says why a lie would not help the candidate, or raises `CheckUnavailable` when the
    probe is missing or failed for a reason that is not the candidate's."""

    kind = "probe"
    builtin: ClassVar[bool] = False
    target: ClassVar[str] = ""
    reference: ClassVar[str] = ""
    fresh_inputs: ClassVar[bool] = False
    skip_own_kernels: ClassVar[bool] = False

    @classmethod
    def spec(cls) -> ProbeSpec:
        """What the worker and the trusted side need to run this probe (`WorkerTask.probes`)."""
        from tritongym.core.worker_task import ProbeSpec

        return ProbeSpec(
            builtin=cls.builtin,
            target=cls.target,
            reference=cls.reference,
            fresh_inputs=cls.fresh_inputs,
            skip_own_kernels=cls.skip_own_kernels,
        )


class Reward(PluginObject, ABC):
    """One reward component; the configured weighted sum of components is the turn reward."""

    kind = "reward"

    @abstractmethod
    def score(self, result: EvaluationResult) -> float | None:
        """Look at nothing but the evaluation result.

        Return None when the result carries no measurement this component needs (a correct kernel on a
        backend that does not time or profile): the component is then recorded as absent, with
        `absent_reason`, rather than as a zero that looks like a judgement."""

    def absent_reason(self, result: EvaluationResult) -> str:
        """Why `score` returned None for this result; shown beside the reward."""
        return f"not measured by backend '{result.backend}'"


class AdvantageEstimator(PluginObject, ABC):
    """Turns the rewards of a batch of turns into advantages (per row, or per token)."""

    kind = "estimator"

    @abstractmethod
    def estimate(self, batch: TurnBatch) -> Advantages:
        """Rows with `valid` False get 0 and are in no group; only rows with `batch.baseline` True enter a
        baseline (the host clears it for rejected rows when the run says they do not count)."""


class SampleFilter(PluginObject, ABC):
    """Decides which samples keep their gradient (and with what weight)."""

    kind = "sample_filter"
    level: ClassVar[str] = "turn"  # the usual level of its decisions; the decision states its own

    @abstractmethod
    def decide(self, batch: TurnBatch, rng: torch.Generator) -> FilterDecision:
        """`rng` is the run's seeded generator: the only randomness a filter may use, so runs repeat."""


class GenerationEngine(PluginObject, ABC):
    """Produces rollouts (text plus per-token log-probs) from a model.

    Life cycle: `start(model, sampling)` once (load the model; may take long), `generate(...)` per batch of
    turns, `load_weights(...)` after each optimiser step of a trainable engine, `close()` at the end."""

    kind = "engine"
    trainable: ClassVar[bool] = True  # False for engines whose weights the trainer cannot update (HTTP)
    loads_model: ClassVar[bool] = True  # False when the model lives elsewhere: [model] is then not checked

    def unavailable_reason(self) -> str | None:
        """None when this engine can run here, else why not and what to install."""
        return None

    @abstractmethod
    def start(self, model: ModelSpec, sampling: SamplingOptions) -> None:
        """Load the model and tokenizer; called once before any generation."""

    @abstractmethod
    def generate(self, conversations: list[list[Message]]) -> list[Generation]:
        """One sampled response per conversation, rendered with the model's chat template; the caller
        repeats a conversation to get several samples.  Never raises for a model's bad output."""

    def load_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        """Replace the engine's weights with the trainer's (same parameter names as the model)."""
        raise NotImplementedError(f"engine '{self.name}' cannot take weights from a trainer; it is not trainable")

    def close(self) -> None:
        """Free the model (and any server process)."""


class SearchStrategy(PluginObject, ABC):
    """Chooses which launch configurations `tritongym tune` measures next.

    The tuner measures the kernel as written first, then any configurations it was told to try first (the
    best configurations of the nearest earlier tuning, an `@triton.autotune` list), then asks the strategy
    again and again until the budget is spent or it proposes nothing.  Every proposal is baked into a
    variant of the source and judged by the whole pipeline; the strategy never runs code."""

    kind = "search_strategy"

    @abstractmethod
    def propose(self, space: SearchSpace, records: Sequence[TuningRecord], budget: int) -> list[Config]:
        """Up to `budget` configurations of `space` to measure next, best guess first; none that `records`
        (every configuration measured in this tuning so far, the kernel as written included) already holds.
        An empty list ends the search.

        Must be a function of its options, `space` and `records` alone (no clock, no unseeded randomness):
        a tuning run again, or resumed after an interruption, then asks for the same configurations and the
        registry answers them without a worker."""


KINDS: dict[str, type[PluginObject]] = {
    "backend": Backend,
    "check": Check,
    "reward": Reward,
    "estimator": AdvantageEstimator,
    "sample_filter": SampleFilter,
    "engine": GenerationEngine,
    "search_strategy": SearchStrategy,
    "probe": Probe,
}
"""Plugin kind -> base class every registered object of that kind must subclass."""

HOOK_OF_KIND = {
    "backend": "register_backends",
    "check": "register_checks",
    "reward": "register_rewards",
    "estimator": "register_estimators",
    "sample_filter": "register_sample_filters",
    "engine": "register_engines",
    "search_strategy": "register_search_strategies",
    "probe": "register_probes",
}
