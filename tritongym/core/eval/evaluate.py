"""The evaluation pipeline of ARCHITECTURE.md §1: parse, static checks, registry lookup, worker, verdict, store.

`Evaluator` is built once per configuration (plugins resolved and validated up front) and then judges
any number of (candidate, problem) pairs; `evaluate_many` hands the sandboxes to an executor (parallel
threads here, or Ray actors: `executor.py`) while this thread alone judges and talks to the registry.
"""

from __future__ import annotations

import copy
import functools
import math
import numbers
import os
import secrets
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tritongym.core.config import EvalConfig
from tritongym.core.errors import BackendUnavailable, CheckUnavailable, ConfigError, PluginError, ProblemFormatError
from tritongym.core.eval.draws import SharedDraws
from tritongym.core.eval.executor import Executor, LocalExecutor, TaskBehindScreen
from tritongym.core.eval.screen import screens_in_background, store_screen
from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.interfaces import Backend, CheckContext, CheckPolicy, Reward, RuntimeCheck, StaticCheck
from tritongym.core.models import (
    Candidate,
    CheckVerdict,
    ErrorInfo,
    EvaluationResult,
    Evidence,
    LaunchRecord,
    Problem,
    RewardBreakdown,
    Status,
    describe_sizes,
)
from tritongym.core.plugins import PluginHost, get_host
from tritongym.core.problems import main_sizes
from tritongym.core.source import parse_source
from tritongym.core.timeline import mark
from tritongym.core.verdict import (
    ShapeJudgement,
    crashed_at_shape_set,
    is_memory_error,
    judge_every_trial,
    judge_shapes,
    judge_trials,
    shapes_only_message,
    status_of_failure,
    weights_note,
)
from tritongym.core.worker_task import ProbeSpec, SandboxLimits, WorkerTask

if TYPE_CHECKING:  # the store (sqlite-utils) loads with the registry a caller opens: a warm `eval` opens none
    from tritongym.core.registry import Registry

OnResult = Callable[[EvaluationResult], None]

EVAL_MODE_NOTE = (
    "the problem's reference draws random numbers in train() mode (dropout), so there is no one answer there: Model "
    "and ModelNew were judged in eval() mode, where it draws none; apply dropout only while self.training"
)
"""What a verdict on a problem judged in eval() mode says (`worker/stochastic.py`, the screen's `stochastic`)."""

FOLDED_CHECKS = {
    "torch_ops": "'torch_ops' (a source scan) was folded into 'torch_compute', which weighs torch's work at run "
    "time: set its options under torch_compute (policy strict/practical/off)",
    "dot_precision": "'dot_precision' (TF32 read from PTX) was folded into 'precision', which measures each output's "
    'precision class against a float64 gold: choose the class with `precision = "ieee"`',
}
"""Checks of earlier releases that are now part of another, with what to write instead."""


def trial_seeds(config: EvalConfig) -> list[int]:
    """Distinct seeds per trial: fixed when `seed` is set, otherwise fresh for every evaluation so no
    candidate can be tuned to the inputs it will see."""
    first = config.seed if config.seed is not None else secrets.randbelow(2**31)
    return [first + i for i in range(config.trials)]


def shape_sets(problem: Problem, mode: str) -> list[dict]:
    """The extra shape sets an evaluation checks (`EvalConfig.shapes`): 'auto' = declared or derived,
    'declared' = only the problem's EXTRA_SIZES, 'off' = none."""
    if mode == "off" or (mode == "declared" and problem.extra_sizes_origin != "declared"):
        return []
    return list(problem.extra_sizes)


def resolve_backend_name(config: EvalConfig, host: PluginHost) -> str:
    if config.backend != "auto":
        return config.backend
    if "triton-cuda" in host.names("backend"):
        candidate = host.create("backend", "triton-cuda", config.backend_options)
        if candidate.unavailable_reason() is None:
            return "triton-cuda"
    return "triton-cpu"


class Evaluator:
    def __init__(
        self, config: EvalConfig | None = None, registry: Registry | None = None, host: PluginHost | None = None
    ) -> None:
        self.config = config or EvalConfig()
        self.host = host or get_host()
        self.registry = registry
        on_ray = self.config.executor == "ray"
        if on_ray:
            from tritongym.core.distributed.ray_executor import ray_backend_name

            self.backend_name = ray_backend_name(self.config, self.host)
        else:
            self.backend_name = resolve_backend_name(self.config, self.host)
        options = dict(self.config.backend_options)
        if self.config.gpus is not None:
            if self.host.get("backend", self.backend_name).cls.device_type != "cuda":
                raise ConfigError(
                    f"--gpus applies to GPU backends; backend '{self.backend_name}' does not run on a GPU"
                )
            if on_ray:
                raise ConfigError(
                    "--gpus does not apply to the Ray executor: Ray gives each actor its own GPU (start the Ray "
                    "nodes with CUDA_VISIBLE_DEVICES to choose them, or set ray.actors)"
                )
            options["gpus"] = self.config.gpus
        self.backend: Backend = self.host.create("backend", self.backend_name, options)
        self.limits = SandboxLimits(
            timeout_s=self.config.timeout_s,
            memory_mb=self.config.memory_mb if self.backend.device_type == "cpu" else None,
        )
        self.size = self.backend.default_size if self.config.size == "auto" else self.config.size
        registered = self.host.names("check")
        if self.config.checks is None:
            check_names = [n for n in registered if self.host.get("check", n).cls.default_enabled]
        else:
            check_names = list(self.config.checks)
        check_names += [n for n in self.config.enable_checks if n not in check_names]
        for field in ("checks", "skip_checks", "enable_checks"):
            unknown = sorted(set(getattr(self.config, field) or ()) - set(registered))
            if unknown:
                folded = "".join(f"; {FOLDED_CHECKS[n]}" for n in unknown if n in FOLDED_CHECKS)
                raise ConfigError(
                    f"{field} names no registered check: {', '.join(unknown)} (known: {', '.join(registered)}){folded}"
                )
        check_names = [n for n in check_names if n not in self.config.skip_checks]
        options = {**(self.config.checks or {}), **self.config.enable_checks}
        checks = [self.host.create("check", n, options.get(n)) for n in check_names]
        self.probes = self._probes_of([c for c in checks if isinstance(c, RuntimeCheck)])  # before any bind
        self.draws = SharedDraws()  # one per Evaluator and its views (`with_registry`): the service's lanes share it
        context = CheckContext(host=self.host, memo=self.registry, reuse=self.config.use_cache)
        for check in checks:
            check.policy = CheckPolicy(precision=self.config.precision)
            check.bind(context)
        self.checks = checks
        checks.sort(key=lambda c: (c.priority, c.name))
        self.static_checks = [c for c in checks if isinstance(c, StaticCheck)]
        self.runtime_checks = [c for c in checks if isinstance(c, RuntimeCheck)]
        unknown = set(self.config.reward_options) - set(self.config.rewards)
        if unknown:
            raise ConfigError(f"reward_options names rewards that are not selected: {', '.join(sorted(unknown))}")
        self.rewards: dict[str, tuple[float, Reward]] = {
            n: (w, self.host.create("reward", n, self.config.reward_options.get(n)))
            for n, w in self.config.rewards.items()
        }
        self.protocol = self.config.protocol_key(check_names)
        self.tolerances = tolerances_for(self.config.precision, self.config.tolerances)
        # last, once every name and option above is known to be valid: the executor may start actors
        self.executor: Executor
        if on_ray:  # the backend runs on the cluster's actors: what it can do there is theirs to say
            from tritongym.core.distributed.ray_executor import RayExecutor

            ray_executor = RayExecutor(
                self.backend_name,
                options,
                self.host,
                self.config.ray,
                self.config.workers,
                self.limits,
                self.config.device,
            )
            self.device, self.device_class = ray_executor.device, ray_executor.device_class
            self.executor = ray_executor
        else:
            reason = self.backend.unavailable_reason()
            if reason:
                raise BackendUnavailable(f"backend '{self.backend_name}' cannot run here: {reason}")
            self.device = self.config.device or self.backend.default_device()
            self.device_class = self.backend.device_class(self.device)
            self.executor = LocalExecutor(self._measure, self.config.workers or os.cpu_count() or 1)

    # --- public API ------------------------------------------------------------------------------------

    def evaluate(self, candidate: Candidate | str, problem: Problem) -> EvaluationResult:
        return self.evaluate_many([(candidate, problem)])[0]

    def evaluate_many(
        self, pairs: Sequence[tuple[Candidate | str, Problem]], on_result: OnResult | None = None
    ) -> list[EvaluationResult]:
        """Judge every pair; results come back in input order, `on_result` is called as each finishes."""
        items = [(c if isinstance(c, Candidate) else Candidate(source=c), p) for c, p in pairs]
        results: list[EvaluationResult | None] = [None] * len(items)
        pending: list[int] = []
        static: dict[int, list[CheckVerdict]] = {}
        for i, (candidate, problem) in enumerate(items):
            early, static[i] = self._before_worker(candidate, problem)
            if early is None:
                pending.append(i)
            else:
                results[i] = early
                if on_result:
                    on_result(early)
        # the same kernel twice for one problem in a batch (common in RL groups) runs once
        first_of: dict[tuple[str, str], int] = {}
        copies: dict[int, list[int]] = {}
        unique = []
        for i in pending:
            key = (items[i][1].key, items[i][0].kernel_id)
            if key in first_of:
                copies[first_of[key]].append(i)
            else:
                first_of[key], copies[i] = i, []
                unique.append(i)
        workers = self.config.workers or os.cpu_count() or 1
        draws: dict[str, tuple[list[int], int]] = {}
        try:
            tasks, screening = self._tasks(items, unique, workers, draws)
            self._measure_and_judge(items, tasks, static, copies, results, on_result)
        finally:
            for key, draw in draws.items():
                self.draws.give_back(self._draw_key(key), draw)
        for problem, screen in screening.values():  # stored here: the registry has one writer thread
            store_screen(self.registry, problem, self.device_class, self.tolerances, screen.result())
        return [r for r in results if r is not None]

    def _measure_and_judge(self, items, tasks: dict, static: dict, copies: dict, results: list, on_result) -> None:
        """The executor measures (threads here, or Ray actors); judging and storing stay on this thread."""
        for i, evidence, started in self.executor.measure_many(tasks):
            candidate, problem = items[i]
            task = tasks[i].task if isinstance(tasks[i], TaskBehindScreen) else tasks[i]
            mark("measured")
            self._keep_reference_memory(evidence, task, problem)
            self._reconcile_timing(evidence, task, problem)
            self._remeasure_if_implausible(evidence, candidate, problem)
            result = self._judge(candidate, problem, evidence, static[i], started, task)
            mark("judged")
            results[i] = self._store(result, candidate, problem)
            mark("stored")
            if on_result:
                on_result(results[i])
            for j in copies[i]:
                results[j] = results[i].model_copy(update={"cached": True})
                if on_result:
                    on_result(results[j])

    def _draw_key(self, problem_key: str) -> tuple:
        """What a shared draw is for: the problem, and the settings its seeds depend on."""
        return problem_key, self.config.trials, self.config.seed

    def _tasks(self, items, unique: list[int], workers: int, draws: dict) -> tuple[dict, dict]:
        """The batch's tasks, and the screens computed for it in the background (problem key -> (problem, future)).

        One draw of seeds per problem and batch: the samples of a problem see the same (still secret, still fresh per
        batch) inputs, so the keeper builds the reference's side once for all of them; batches judged at
        the same time share it too (`SharedDraws`: the service's lanes), and `draws` collects what this batch took.
        On this host a problem whose screen is not known yet gets `TaskBehindScreen`s: its candidates start as soon as
        its own screen is done, while other problems' candidates already run; on Ray every screen comes
        first."""
        problems = [items[i][1] for i in unique]

        def draw(problem: Problem) -> tuple[list[int], int]:
            if problem.key not in draws:
                draws[problem.key] = self.draws.take(self._draw_key(problem.key), self._draw)
            return draws[problem.key]

        if not (isinstance(self.executor, LocalExecutor) and self._needs_screens(problems)):
            screens = self._screens(problems, workers)
            return {i: self._task(*items[i], screens.get(items[i][1].key), draw(items[i][1])) for i in unique}, {}
        found, pending = screens_in_background(
            problems, self.backend, self.device, self.device_class, self.limits, self.tolerances, self.registry, workers
        )
        tasks: dict = {}
        for i in unique:
            candidate, problem = items[i]
            if problem.key in found:
                tasks[i] = self._task(candidate, problem, found[problem.key], draw(problem))
            else:  # the registry's facts read here, on this thread; the task is made once the screen is done
                facts = self._registry_facts(problem)
                build = functools.partial(self._task, candidate, problem, draw=draw(problem), facts=facts)
                tasks[i] = TaskBehindScreen(build, pending[problem.key])
        by_key = {p.key: p for p in problems}
        return tasks, {key: (by_key[key], future) for key, future in pending.items()}

    def _needs_screens(self, problems: list[Problem]) -> bool:
        return bool(problems) and any(c.needs_screen for c in self.runtime_checks)

    # --- stages ----------------------------------------------------------------------------------------

    def _base(self, candidate: Candidate, problem: Problem, status: Status, **fields) -> EvaluationResult:
        return EvaluationResult(
            problem_id=problem.name,
            problem_key=problem.key,
            kernel_id=candidate.kernel_id,
            backend=self.backend_name,
            device=self.device,
            device_class=self.device_class,
            size=problem.size,
            protocol=self.protocol,
            status=status,
            fingerprint=fields.pop("fingerprint", None) or local_fingerprint(),
            **fields,
        )

    def _before_worker(
        self, candidate: Candidate, problem: Problem
    ) -> tuple[EvaluationResult | None, list[CheckVerdict]]:
        """Registry, syntax and static checks: everything that needs no worker.

        Returns the final result when one is already known, else None and the static verdicts.
        """
        started = time.perf_counter()
        if self.registry is not None and self.config.use_cache:
            hit = self.registry.lookup(
                problem.key, candidate.kernel_id, self.backend_name, self.device_class, self.protocol
            )
            if hit is not None and _autotuner_lacked_a_driver(hit, candidate):
                hit = None  # judged before triton-cpu could run autotuned kernels: judge it now
            if hit is not None:
                compiled = self._known_compile_speedup(hit, problem)
                reward = self._score(hit)
                if reward != hit.reward or compiled:  # the row follows the current scoring and baselines
                    hit.reward = reward
                    self.registry.refresh(hit)
                hit.duration_s = time.perf_counter() - started
                return hit, []
        # a worker will most likely be needed: it starts now and warms up while this thread parses and checks
        self.warm_up(1)
        try:
            tree = parse_source(candidate.source)
        except (SyntaxError, ValueError) as exc:
            line = getattr(exc, "lineno", None)
            error = ErrorInfo(
                kind=type(exc).__name__,
                message=getattr(exc, "msg", str(exc)),
                line=line,
                traceback="".join(_syntax_traceback(exc)),
            )
            where = f" (line {line})" if line else ""
            result = self._base(
                candidate, problem, Status.compile_error, error=error, message=f"{error.kind}: {error.message}{where}"
            )
            return self._finish_early(result, candidate, problem, started), []
        verdicts = [self._run_check(check, tree, candidate, problem) for check in self.static_checks]
        failed = [v for v in verdicts if not v.passed]
        if failed:
            first = failed[0]
            where = f" (line {first.line})" if first.line else ""
            result = self._base(
                candidate,
                problem,
                Status.rejected,
                checks=verdicts,
                message=f"rejected by check '{first.name}'{where}: {first.reason}",
            )
            return self._finish_early(result, candidate, problem, started), verdicts
        return None, verdicts

    def _known_compile_speedup(self, hit: EvaluationResult, problem: Problem) -> bool:
        """Give a stored verdict timed before its problem's torch.compile reference was (or under a run
        that did not ask for it) the compiled speedup, from the registry's timing of that reference on the
        same device class and precision; whether anything was added."""
        if not self.config.compile_reference or hit.compile_speedup is not None or not hit.runtime_ms:
            return False
        stats = self.registry.reference_timing(problem.key, hit.device_class, self.config.precision, variant="compile")
        if not stats or not stats.get("median_ms"):
            return False
        hit.compile_ref_runtime_ms = float(stats["median_ms"])
        hit.compile_speedup = hit.compile_ref_runtime_ms / hit.runtime_ms
        return True

    def _finish_early(
        self, result: EvaluationResult, candidate: Candidate, problem: Problem, started: float
    ) -> EvaluationResult:
        result.reward = self._score(result)
        result.duration_s = time.perf_counter() - started
        return self._store(result, candidate, problem)

    def _probes_of(self, checks: list[RuntimeCheck]) -> dict[str, ProbeSpec]:
        """name -> spec of the registered probes these checks read (`RuntimeCheck.probes`), built-in ones included:
        the worker and the trusted side run exactly these, so a probe costs nothing while no enabled check reads
        it (with `ghost` skipped no ghost call is made, nor its reference's forward)."""
        probes: dict[str, ProbeSpec] = {}
        for check in checks:
            for name in check.probes:
                if name not in self.host.names("probe"):
                    known = ", ".join(self.host.names("probe")) or "none"
                    plugin = self.host.get("check", check.name).plugin
                    raise ConfigError(
                        f"check '{check.name}' (plugin '{plugin}') reads probe '{name}', which no plugin registered "
                        f"(known probes: {known}); install or --plugin the plugin that provides it, or skip the check"
                    )
                probes[name] = self.host.get("probe", name).cls.spec()
        return probes

    def _run_check(self, check: StaticCheck | RuntimeCheck, *args) -> CheckVerdict:
        """One check, isolated: a check that raises fails closed and names its plugin; the others still run."""
        plugin = self.host.get("check", check.name).plugin
        try:
            verdict = check.check_source(*args) if isinstance(check, StaticCheck) else check.judge(*args)
        except CheckUnavailable as exc:  # infrastructure, not the candidate: no verdict either way
            verdict = CheckVerdict(name=check.name, passed=True, unjudged=True, reason=f"could not run: {exc}")
        except Exception as exc:
            verdict = CheckVerdict(
                name=check.name,
                passed=False,
                reason=f"check crashed ({type(exc).__name__}: {exc}); fix or disable plugin '{plugin}'",
            )
        return verdict.model_copy(update={"plugin": plugin, "stage": check.stage})

    def _screens(self, problems: list[Problem], workers: int) -> dict:
        """Each problem's negative-control screen (`screen.cached_screens`), when a check reads the
        degeneracy probes; a problem degenerate for a control then gets the probe that tells it apart."""
        if not self._needs_screens(problems):
            return {}
        from tritongym.core.eval.screen import cached_screens

        return cached_screens(
            problems,
            self.backend if isinstance(self.executor, LocalExecutor) else _ExecutorBackend(self),
            self.device,
            self.device_class,
            self.limits,
            self.tolerances,
            self.registry,
            workers,
        )

    def warm_up(self, tasks: int) -> None:
        """Tell the backend `tasks` more tasks are coming (`Backend.warm_up`), so its workers start now; nothing on
        Ray, whose actors own the backends that measure."""
        if not isinstance(self.executor, LocalExecutor):
            return
        try:
            self.backend.warm_up(tasks)
        except Exception as exc:
            plugin = self.host.get("backend", self.backend_name).plugin
            raise PluginError(
                f"backend '{self.backend_name}' (plugin '{plugin}') raised {type(exc).__name__} warming up: {exc}"
            ) from exc

    def _draw(self) -> tuple[list[int], int]:
        """Trial seeds and the secret init seed (`worker/weights.py` derives the shared build seed and the draw's)."""
        return trial_seeds(self.config), secrets.randbelow(2**31)

    def _registry_facts(self, problem: Problem) -> dict:
        """What the registry knows of a problem's reference on this device class (its timings, peak memory, the
        GPU's bandwidth), for its tasks: read on the Evaluator's own thread."""
        facts = {
            "cached": None,
            "cached_compiled": None,
            "cached_field": None,
            "bandwidth": None,
            "peak_mb": None,
            "host_mb": None,
        }
        if self.registry is not None and self.backend.device_type != "cpu":
            facts["cached"] = self.registry.reference_timing(problem.key, self.device_class, self.config.precision)
            facts["cached_field"] = self.registry.reference_timing(
                problem.key, self.device_class, self.config.precision, variant="field"
            )
            facts["peak_mb"], facts["host_mb"] = self.registry.reference_memory(problem.key, self.device_class)
            if self.config.compile_reference:
                facts["cached_compiled"] = self.registry.reference_timing(
                    problem.key, self.device_class, self.config.precision, variant="compile"
                )
            facts["bandwidth"] = self.registry.bandwidth(self.device_class)
        return facts

    def _task(self, candidate: Candidate, problem: Problem, screen=None, draw=None, facts=None) -> WorkerTask:
        refusal = screen.refusal() if screen is not None else None
        if refusal:  # a reference random whatever its mode: no answer to judge any candidate against
            raise ProblemFormatError(refusal)
        seeds, init_seed = draw if draw is not None else self._draw()
        facts = facts if facts is not None else self._registry_facts(problem)
        cached, cached_compiled = facts["cached"], facts["cached_compiled"]
        bandwidth, peak_mb = facts["bandwidth"], facts["peak_mb"]
        compiled = self.config.compile_reference and self.backend.device_type != "cpu"
        extra_sizes = shape_sets(problem, self.config.shapes)
        return WorkerTask(
            reference_peak_mb=peak_mb,
            reference_host_mb=facts["host_mb"],
            cached_reference=cached,
            compile_reference=compiled,
            cached_compile_reference=cached_compiled,
            cached_field_reference=facts.get("cached_field"),
            bandwidth_gbps=bandwidth,
            problem_name=problem.name,
            problem_source=problem.source,
            sizes=problem.sizes,
            extra_sizes=extra_sizes,
            extra_sizes_optional=problem.extra_sizes_origin == "derived",
            degenerate=screen.degenerate_probes() if screen is not None else {},
            stochastic=screen.stochastic if screen is not None else None,
            candidate_source=candidate.source,
            probes=self.probes,
            device=self.device,
            seeds=seeds,
            init_seed=init_seed,
            probe_seed=secrets.randbelow(2**31),  # per task, even where the batch shares the draw
            precision=self.config.precision,
            draw_parameters=self.config.draw_parameters,
            tolerances=self.tolerances,
        )

    def _measure(self, task: WorkerTask) -> tuple[Evidence, float]:
        started = time.perf_counter()
        try:
            evidence = self.backend.measure(task, self.limits)
        except Exception as exc:
            plugin = self.host.get("backend", self.backend_name).plugin
            raise PluginError(
                f"backend '{self.backend_name}' (plugin '{plugin}') raised {type(exc).__name__}: {exc}"
            ) from exc
        return evidence, started

    def _judge(
        self,
        candidate: Candidate,
        problem: Problem,
        evidence: Evidence,
        static: list[CheckVerdict],
        started: float,
        task: WorkerTask | None = None,
    ) -> EvaluationResult:
        if evidence.error is not None and evidence.stage == "setup":
            raise BackendUnavailable(
                f"backend '{self.backend_name}' could not set up its worker: {evidence.error.kind}: "
                f"{evidence.error.message}"
            )
        if evidence.error is not None and evidence.stage == "problem":
            fits = ""
            if is_memory_error(evidence.error.kind, evidence.error.message) and self.backend.device_type == "cpu":
                limit = f"{self.limits.memory_mb} MiB" if self.limits.memory_mb else "no limit"
                fits = f" (the problem does not fit the worker's memory limit, {limit}: config `memory_mb`)"
            raise ProblemFormatError(
                f"the reference of problem '{problem.name}' failed in the worker: "
                f"{evidence.error.kind}: {evidence.error.message}{fits}",
                phases=evidence.phases,
                memory_mb=evidence.memory_mb,
            )
        fields = {
            "phases": evidence.phases,
            "counts": evidence.counts,
            "flags": evidence.flags,
            "memory_mb": evidence.memory_mb,
            "fingerprint": evidence.fingerprint,
            "trials": sum(t.sizes is None and not t.late for t in evidence.trials),  # the main-shape trials
            "checks": static,
            "launches": _merge_launches(evidence),
            # the configs the main shape ran with (a shape set's other tuning key tunes again: not this kernel's)
            "autotune": [c for c in evidence.autotune if not c.when.startswith("shape set")],
            "weights": evidence.weights,
        }
        failure = status_of_failure(evidence)
        crashed = crashed_at_shape_set(evidence)
        if crashed is not None:  # right at the problem's own shapes, then failed at another shape set
            fields["generality"] = crashed.generality
            del fields["checks"]  # the static checks' verdicts, passed as the checks
            result = self._shapes_only(candidate, problem, crashed, evidence, static, fields, error=evidence.error)
        elif failure is not None:
            err = evidence.error
            assert err is not None  # status_of_failure returns a status only for an error
            if not err.traceback and evidence.stdout_tail:
                err = err.model_copy(update={"traceback": evidence.stdout_tail[-3000:]})
            where = f" (line {err.line})" if err.line else ""
            result = self._base(
                candidate, problem, failure, error=err, message=f"{err.kind}: {err.message}{where}", **fields
            )
        else:
            # the shape-set trials and the late trial follow every probe: judged after the runtime checks, so
            # a hack a check names (a pointer cache, work left in a thread) is reported as such, not as a
            # wrong answer in a later call
            judged = judge_shapes(evidence.trials)
            judgement = judged.main
            later = judge_every_trial(evidence.trials) if judgement.correct else judgement
            fields.update(
                max_abs_err=judgement.max_abs_err,
                rel_norm_err=judgement.rel_norm_err,
                runtime_ms=evidence.runtime_ms,
                ref_runtime_ms=evidence.ref_runtime_ms,
                compile_ref_runtime_ms=evidence.compile_ref_runtime_ms,
                pr=evidence.pr,
                timing=evidence.timing,
                profile=evidence.profile,
                generality=judged.generality,
            )
            if evidence.runtime_ms and evidence.ref_runtime_ms:
                fields["speedup"] = evidence.ref_runtime_ms / evidence.runtime_ms
            if evidence.runtime_ms and evidence.compile_ref_runtime_ms:
                fields["compile_speedup"] = evidence.compile_ref_runtime_ms / evidence.runtime_ms
            fields.update(self._field_speedup(evidence))
            timed = judge_trials(evidence.timed_trials) if evidence.timed_trials else None
            if judgement.correct and timed is not None and not timed.correct:
                message = (
                    "incorrect: the outputs of the timed calls (inputs refreshed in place between calls) do not "
                    f"match the reference: {timed.message}{weights_note(evidence.weights, wrong=True)}"
                )
                result = self._base(candidate, problem, Status.incorrect, message=message, **fields)
            elif not judgement.correct:
                causes = [
                    self._run_check(c, evidence, candidate, problem)
                    for c in self.runtime_checks
                    if c.explains_incorrect
                ]
                found = [v for v in causes if not v.passed]
                fields["checks"] = static + causes
                hint = f"; likely cause (check '{found[0].name}'): {found[0].reason}" if found else ""
                result = self._base(
                    candidate,
                    problem,
                    Status.incorrect,
                    message=f"incorrect: {judgement.message}{weights_note(evidence.weights, wrong=True)}{hint}",
                    **fields,
                )
            else:
                verdicts = static + [self._run_check(c, evidence, candidate, problem) for c in self.runtime_checks]
                del fields["checks"]
                failed = [v for v in verdicts if not v.passed]
                cheats = [v for v in failed if self._fails_as(v) == Status.hacked]
                # a shortfall every failed check saw only at a shape set (`other_shapes_only`): generality's matter
                elsewhere = bool(failed) and judged.shapes is not None and all(v.other_shapes_only for v in failed)
                if cheats:
                    result = self._base(
                        candidate,
                        problem,
                        Status.hacked,
                        correct=False,
                        hacked=True,
                        checks=verdicts,
                        message=f"hacked: check '{cheats[0].name}': {cheats[0].reason}",
                        **fields,
                    )
                elif failed and not elsewhere:
                    # a measured shortfall (precision below the policy): wrong enough, not a cheat
                    result = self._base(
                        candidate,
                        problem,
                        Status.incorrect,
                        checks=verdicts,
                        message=f"incorrect: check '{failed[0].name}': {failed[0].reason}",
                        **fields,
                    )
                elif judged.late is not None and not judged.late.correct:
                    result = self._base(
                        candidate,
                        problem,
                        Status.incorrect,
                        checks=verdicts,
                        message=f"incorrect: {judged.late.message}{weights_note(evidence.weights, wrong=True)}",
                        **fields,
                    )
                elif judged.generality == "problem_shapes_only" or elsewhere:
                    fields["generality"] = "problem_shapes_only"
                    # outputs wrong at a shape set say it best; else the check's words
                    shortfall = failed[0] if elsewhere and judged.generality != "problem_shapes_only" else None
                    result = self._shapes_only(
                        candidate, problem, judged, evidence, verdicts, fields, shortfall=shortfall
                    )
                else:
                    result = self._base(
                        candidate,
                        problem,
                        Status.ok,
                        correct=True,
                        checks=verdicts,
                        message=f"ok: {later.message}{weights_note(evidence.weights, wrong=False)}",
                        **fields,
                    )
        if task is not None and task.eval_mode and result.status in (Status.ok, Status.incorrect, Status.hacked):
            result.message += f" ({EVAL_MODE_NOTE})"
        unjudged = [v for v in result.checks if v.unjudged]
        if unjudged:
            said = "; ".join(f"check '{v.name}' {v.reason}" for v in unjudged)
            result.message += f" (unjudged: {said}; this verdict is incomplete and is not stored)"
        result.reward = self._score(result)
        result.duration_s = time.perf_counter() - started
        return result

    def _shapes_only(
        self,
        candidate: Candidate,
        problem: Problem,
        judged: ShapeJudgement,
        evidence: Evidence,
        verdicts: list[CheckVerdict],
        fields: dict,
        error: ErrorInfo | None = None,
        shortfall: CheckVerdict | None = None,
    ) -> EvaluationResult:
        """A kernel right at the problem's own shapes (every main trial, every check) and wrong at a shape set:
        `incorrect` when `require_generality` is on (the default), else `ok`; either way `generality` is
        "problem_shapes_only" and the message says both halves plainly.  One that *failed* at a shape set (`error`:
        it raised, or faulted on a GPU, whose context is then gone) left no late trial, probe or timing to judge it
        by: `incorrect` whatever `require_generality` says.  `shortfall`: outputs within tolerance at every shape
        set, but a check measured a shortfall at one only (attorch's NLL loss drops the last rows' partial sum where
        the batch is not a multiple of its block, an error of 3.5e-4 that the precision class names): the same
        matter of generality, said in the check's words."""
        assert judged.shapes is not None
        keys = dict.fromkeys(k for t in evidence.trials if t.sizes for k in t.sizes)
        own = describe_sizes(main_sizes(problem, keys))
        if shortfall is not None:
            said = f"right at the problem's own shapes ({own}); check '{shortfall.name}' at another: {shortfall.reason}"
        else:
            said = shapes_only_message(own, judged)
        if error is not None:
            return self._base(
                candidate,
                problem,
                Status.incorrect,
                checks=verdicts,
                error=error,
                message=f"incorrect: {said}{weights_note(evidence.weights, wrong=True)} (a kernel that fails at "
                "another shape set leaves no timing: incorrect whatever `require_generality` says)",
                **fields,
            )
        if self.config.require_generality:
            return self._base(
                candidate,
                problem,
                Status.incorrect,
                checks=verdicts,
                message=f"incorrect: {said}{weights_note(evidence.weights, wrong=True)} (generality is required: "
                "`require_generality = false` judges at the problem's shapes only, as KernelBench does)",
                **fields,
            )
        return self._base(
            candidate,
            problem,
            Status.ok,
            correct=True,
            checks=verdicts,
            message=f"ok: {said}{weights_note(evidence.weights, wrong=False)} (accepted: `require_generality` is "
            "off, so correctness at the problem's shapes is what counts)",
            **fields,
        )

    def _fails_as(self, verdict: CheckVerdict) -> Status:
        """What a failed runtime check makes of the candidate: `hacked`, or `incorrect` for a check that
        measures a shortfall rather than a cheat (`RuntimeCheck.fails_as`)."""
        check = next((c for c in self.runtime_checks if c.name == verdict.name), None)
        return Status.incorrect if check is not None and check.fails_as == "incorrect" else Status.hacked

    def _keep_reference_memory(self, evidence: Evidence, task: WorkerTask, problem: Problem) -> None:
        """The reference side's measured GPU peak and parked host MiB into the registry, once per problem and device
        class: the pool reserves them before the problem's next build in any later run, and asks the keeper to
        weigh nothing (`SIZE`: in a fresh keeper its first meta forward imports torch._dynamo, 3.3 s on an H200)."""
        peak = evidence.reference_peak_mb
        host = evidence.memory_mb.get("reference_host_mb")
        if self.registry is None or self.backend.device_type == "cpu" or not peak or host is None:
            return
        if task.reference_peak_mb and task.reference_host_mb is not None:
            return
        self.registry.store_reference_memory(problem.key, self.device_class, float(peak), float(host))

    def _reconcile_timing(self, evidence: Evidence, task: WorkerTask, problem: Problem) -> None:
        """Choose the reference time behind the speedup, keep the registry's reference cache honest, and
        fill in the sabotage ratio and the roofline (ARCHITECTURE.md §3, paired timing).

        With no cached reference the worker timed the reference in full before the candidate: that paired
        timing is used and cached.  With one, the worker only re-timed it briefly; if the two agree within
        `reconcile_tolerance` the cached (longer) measurement is used, otherwise the paired one is, and the
        cache entry is dropped so the next task times the reference in full again."""
        timing = evidence.timing
        if timing is None or timing.reference_before is None:
            return
        before = timing.reference_before
        cached = timing.reference_cached
        fingerprint = evidence.fingerprint.model_dump_json() if evidence.fingerprint else ""
        key = (problem.key, self.device_class, self.config.precision)
        if timing.compile_reference is not None:
            evidence.compile_ref_runtime_ms = timing.compile_reference.median_ms
            if timing.compile_reference_source == "measured" and self.registry is not None:
                self.registry.store_reference_timing(
                    *key, timing.compile_reference.model_dump(), fingerprint, variant="compile"
                )
        measured_field = timing.field_reference is not None and timing.field_reference_source == "measured"
        if measured_field and self.registry is not None:
            self.registry.store_reference_timing(
                *key, timing.field_reference.model_dump(), fingerprint, variant="field"
            )
        if cached is not None and task.timing.cached_reference_stands(before.median_ms, cached.median_ms):
            timing.reference, timing.reference_source = cached, "cached"
        else:
            timing.reference, timing.reference_source = before, "paired"
            if self.registry is not None:
                if cached is None:
                    self.registry.store_reference_timing(*key, before.model_dump(), fingerprint)
                else:
                    timing.notes.append(
                        f"cached reference {cached.median_ms:.4g} ms disagreed with the paired "
                        f"{before.median_ms:.4g} ms; the paired one is used and the cache refreshed"
                    )
                    # the device is not what it was when the cache was filled: both baselines are re-timed
                    # (a compiled timing measured in this very task is as fresh as the paired one: kept)
                    self.registry.forget_reference_timing(*key)
                    if timing.compile_reference_source != "measured":
                        self.registry.forget_reference_timing(*key, variant="compile")
                    if timing.field_reference_source != "measured":
                        self.registry.forget_reference_timing(*key, variant="field")
        evidence.ref_runtime_ms = timing.reference.median_ms
        if timing.reference_after is not None and before.median_ms > 0:
            timing.reference_slowdown = timing.reference_after.median_ms / before.median_ms
        if timing.bandwidth_gbps and timing.bytes_moved:
            timing.roofline_ms = timing.bytes_moved / (timing.bandwidth_gbps * 1e9) * 1e3
            if self.registry is not None and self.registry.bandwidth(self.device_class) is None:
                self.registry.store_bandwidth(self.device_class, timing.bandwidth_gbps, fingerprint)

    def _field_speedup(self, evidence: Evidence) -> dict:
        """A verdict's reference time and speedup under the field's convention (`EvaluationResult.speedup_field`,
        `measure/field_convention.py`): the keeper's timing under the field's TF32 switches where they change what
        the reference runs, else its own-class time (`same_as_own`, and always on the CPU, where torch has no
        TF32).  Nothing where the keeper could not tell: the field's speedup is then unknown, never guessed."""
        timing = evidence.timing
        source = timing.field_reference_source if timing is not None else None
        if self.backend.device_type == "cpu" or source == "same_as_own":
            convention, reference_ms = "same_as_own", evidence.ref_runtime_ms
        elif timing is not None and timing.field_reference is not None:
            convention, reference_ms = "timed", timing.field_reference.median_ms
        else:
            return {}
        fields = {"field_convention": convention, "field_ref_runtime_ms": reference_ms}
        if reference_ms and evidence.runtime_ms:
            fields["speedup_field"] = reference_ms / evidence.runtime_ms
        return fields

    def _remeasure_if_implausible(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> None:
        """A speedup above `remeasure_speedup_above` is measured again in a fresh task (new seeds, a new
        worker); the `timing` check then compares the two.  Rare by design, so it runs inline."""
        cap = self.config.remeasure_speedup_above
        timing = evidence.timing
        if cap is None or timing is None or not evidence.runtime_ms or not evidence.ref_runtime_ms:
            return
        if evidence.ref_runtime_ms / evidence.runtime_ms <= cap:
            return
        task = self._task(candidate, problem).model_copy(update={"extra_sizes": [], "late_trial": False})
        second, _ = self.executor.measure(task)
        self._reconcile_timing(second, task, problem)
        failure = status_of_failure(second)
        if failure is not None:
            timing.remeasured_status = failure.value
        elif not judge_trials(second.trials).correct:
            timing.remeasured_status = Status.incorrect.value
        else:
            timing.remeasured_status = Status.ok.value
            timing.remeasured_ms = second.runtime_ms

    def size_to(self, candidates: int) -> None:
        """This Evaluator judges `candidates` candidates and is then closed (a one-candidate `tritongym eval`): its
        backend may start only what they and their problems' screens need (`Backend.size_to`) instead of a pool for a
        stream of work.  Call it before the first evaluation; nothing on Ray, whose actors serve any amount of work."""
        if isinstance(self.executor, LocalExecutor):
            self.backend.size_to(candidates)

    def with_registry(self, registry: Registry | None) -> Evaluator:
        """A second Evaluator over the same backend (its warm workers), checks, rewards and protocol that
        reads and writes through `registry`.

        `evaluate_many` keeps every registry access on its calling thread; a caller that evaluates from
        several threads at once (the lanes of `tritongym serve`) gives each thread its own view with its own
        connection, so no two threads share a SQLite transaction.  Closing a view closes the shared backend."""
        view = copy.copy(self)
        view.registry = registry
        return view

    def hold_outside(self, gpu: int, mb: float) -> None:
        """`mb` MiB of GPU `gpu` (as `gpus` numbers it) are held beside the judge by this process (a trainer's
        policy), from now on: the backend's pool admits its workers in what is left (`Backend.hold_outside`).
        Nothing on the Ray executor, whose actors own their GPUs."""
        if self.config.executor == "local":
            self.backend.hold_outside(gpu, mb)

    def memory_budgets(self) -> dict[str, dict[str, float]]:
        """The local backend's GPU memory, per device (`Backend.memory_budgets`); empty on Ray."""
        return self.backend.memory_budgets() if self.config.executor == "local" else {}

    def close(self) -> None:
        """Stop the backend's warm workers, the executor's actors, and let the checks free what they hold
        (a judge model); the Evaluator stays usable: all of them start again on demand."""
        self.executor.close()
        self.backend.close()
        for check in self.checks:
            check.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _score(self, result: EvaluationResult) -> RewardBreakdown:
        """The configured rewards on one result: the weighted sum of the present components, or the hack
        penalty for a hacked turn. A reward that raises, or returns anything but a finite number or None,
        is a broken plugin: the error names it rather than letting a bad number into training."""
        components: dict[str, float] = {}
        weights: dict[str, float] = {}
        absent: dict[str, str] = {}
        for name, (weight, reward) in self.rewards.items():
            weights[name] = weight
            try:
                value = reward.score(result)
                reason = reward.absent_reason(result) if value is None else ""
            except Exception as exc:
                plugin = self.host.get("reward", name).plugin
                raise PluginError(f"reward '{name}' (plugin '{plugin}') raised {type(exc).__name__}: {exc}") from exc
            if value is None:
                absent[name] = str(reason)
                continue
            if not isinstance(value, numbers.Real) or not math.isfinite(value):
                plugin = self.host.get("reward", name).plugin
                raise PluginError(
                    f"reward '{name}' (plugin '{plugin}') returned {value!r}; a reward's score must be a finite "
                    "number, or None when the result lacks the measurement it needs"
                )
            components[name] = float(value)
        if result.hacked:
            penalty = self.config.hack_penalty
            return RewardBreakdown(
                total=penalty, components=components, weights=weights, absent=absent, penalty=penalty
            )
        total = sum(weights[n] * components[n] for n in components)
        return RewardBreakdown(total=total, components=components, weights=weights, absent=absent)

    def _store(self, result: EvaluationResult, candidate: Candidate, problem: Problem) -> EvaluationResult:
        """Into the registry, unless a check could not run: an incomplete verdict must not answer a later run."""
        if self.registry is not None and not result.unjudged:
            result.evaluation_id = self.registry.store(result, problem, candidate, precision=self.config.precision)
        return result


def _autotuner_lacked_a_driver(hit: EvaluationResult, candidate: Candidate) -> bool:
    """A stored verdict from before the interpreter's autotune policy (`core/worker/autotune.py`):
    Triton's autotuner asked for a GPU driver the interpreter does not have ("0 active drivers") and every
    `@triton.autotune` kernel failed on triton-cpu, which says nothing about the kernel.  Such a verdict is
    judged again (and its row replaced) rather than answered from the registry.  A verdict reached under
    the policy records the autotuner's choice, so a kernel that fails that way still is not re-run."""
    error = hit.error
    return (
        hit.device == "cpu"
        and error is not None
        and "active drivers" in error.message
        and not hit.autotune
        and "autotune" in candidate.source
    )


def _merge_launches(evidence: Evidence) -> list[LaunchRecord]:
    """The launches of the main-shape trials, merged per kernel (what `trials` counts)."""
    merged: dict[tuple[str, bool], LaunchRecord] = {}
    for trial in (t for t in evidence.trials if t.sizes is None and not t.late):
        for rec in trial.launches:
            key = (rec.kernel, rec.own)
            if key in merged:
                merged[key].count += rec.count
            else:
                merged[key] = rec.model_copy()
    return sorted(merged.values(), key=lambda r: (not r.own, r.kernel))


def _syntax_traceback(exc: BaseException) -> list[str]:
    import traceback

    return traceback.format_exception_only(type(exc), exc)


class _ExecutorBackend:
    """The evaluator's executor seen as a backend by the negative-control screens (`screen.cached_screens`):
    on Ray the screen runs where the candidates run (an actor's GPU), not on the driver, which may have none."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.name = evaluator.backend_name
        self._executor = evaluator.executor

    def measure(self, task: WorkerTask, limits: SandboxLimits) -> Evidence:
        return self._executor.measure(task)[0]

    def warm_up(self, tasks: int) -> None:
        """Nothing: the actors' backends are warm for as long as they live."""
