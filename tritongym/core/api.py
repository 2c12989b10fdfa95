"""The Python API; each function is one CLI command (`tritongym.core.cli.app` only formats what these return).

from tritongym import api
result = api.evaluate("my_kernel.py", problem="softmax")
best = api.best("softmax")
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from tritongym.core.config import EvalConfig, load_config
from tritongym.core.errors import CandidateFileError, ConfigError, ProblemNotFound, RegistryNotStored
from tritongym.core.eval.evaluate import Evaluator, trial_seeds
from tritongym.core.models import Candidate, EvaluationResult, Problem
from tritongym.core.plugins import Registered, get_host
from tritongym.core.problems import load_problem, load_problems, resolve_names, select
from tritongym.core.registry import Registry

if TYPE_CHECKING:  # the learning side is imported by the commands that use it: the others start faster
    from tritongym.core.eval.screen import ScreenResult
    from tritongym.core.learn.learning import LearningConfig
    from tritongym.core.learn.run_config import RunConfig
    from tritongym.core.tune import TuneSummary
    from tritongym.core.tuning import TuningRecord

MAX_CANDIDATE_BYTES = 1 << 20


def read_candidate(path: str | Path) -> Candidate:
    path = Path(path)
    try:
        if path.stat().st_size > MAX_CANDIDATE_BYTES:
            raise CandidateFileError(f"candidate {path} is larger than {MAX_CANDIDATE_BYTES >> 10} KiB")
        return Candidate(source=path.read_text(encoding="utf-8"), origin=str(path))
    except FileNotFoundError:
        raise CandidateFileError(f"no such candidate file: {path}") from None
    except UnicodeDecodeError:
        raise CandidateFileError(f"candidate {path} is not UTF-8 text") from None
    except IsADirectoryError:
        raise CandidateFileError(f"candidate {path} is a directory, not a .py file") from None


def _config(config: EvalConfig | str | Path | None) -> EvalConfig:
    if isinstance(config, EvalConfig):
        return config
    return load_config(config)


def _run_config(config: RunConfig | str | Path) -> RunConfig:
    from tritongym.core.learn.run_config import RunConfig, load_run_config

    return config if isinstance(config, RunConfig) else load_run_config(config)


def plugins(extra_plugins: Sequence[str] = ()) -> list[Registered]:
    """Every registered backend, check, reward, estimator, sample filter, engine and search strategy."""
    return get_host(extra_plugins).all()


RegistryArg = Registry | str | Path | bool | None
"""A Registry, a path, None for the default (TRITONGYM_REGISTRY or ./registry.db), or False for none."""


def open_registry(registry: RegistryArg) -> Registry | None:
    if registry is False:
        return None
    if isinstance(registry, Registry):
        return registry
    return Registry(None if registry in (None, True) else registry)


def make_evaluator(
    config: EvalConfig | str | Path | None = None, registry: RegistryArg = None, extra_plugins: Sequence[str] = ()
) -> Evaluator:
    return Evaluator(_config(config), registry=open_registry(registry), host=get_host(extra_plugins))


def evaluate(
    candidate: str | Path | Candidate,
    problem: str | Problem,
    config: EvalConfig | str | Path | None = None,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
) -> EvaluationResult:
    """`tritongym eval`: judge one candidate (a file path, or a Candidate) on one problem."""
    with make_evaluator(config, registry, extra_plugins) as evaluator:
        if not isinstance(candidate, Candidate):
            candidate = read_candidate(candidate)
        if not isinstance(problem, Problem):
            problem = load_problem(problem, evaluator.size)
        with _keeping_verdicts(evaluator.registry) as kept:
            kept.append(evaluator.evaluate(candidate, problem))
        return kept[0]


@contextmanager
def _keeping_verdicts(reg: Registry | None):
    """Evaluate with writes allowed to fail: verdicts reached are never lost to a registry that refuses
    them (read-only, locked past the wait, damaged, full); the block appends its results to the list it is
    given, and when a write failed they come back inside `RegistryNotStored` (exit 3) instead."""
    results: list[EvaluationResult] = []
    if reg is None:
        yield results
        return
    with reg.writes_may_fail():
        yield results
    if reg.write_failure is not None:
        raise RegistryNotStored(reg.write_failure, results)


def pair_candidates(problems: list[Problem], candidates_dir: str | Path | None) -> list[tuple[Candidate, Problem]]:
    """Pair each problem with its candidate: `DIR/<name>.py`, or the problem's shipped solution."""
    pairs = []
    for problem in problems:
        if candidates_dir is not None:
            path = Path(candidates_dir) / f"{problem.name}.py"
            if path.exists():
                pairs.append((read_candidate(path), problem))
        elif problem.solution is not None:
            pairs.append((Candidate(source=problem.solution, origin=f"solution:{problem.name}"), problem))
    if not pairs:
        where = f"in {candidates_dir} (files named <problem>.py)" if candidates_dir else "(these problems ship none)"
        raise ProblemNotFound(f"no candidates found {where}; pass --candidates DIR")
    return pairs


def run(
    problems: str | None = None,
    candidates_dir: str | Path | None = None,
    only: Sequence[str] = (),
    config: EvalConfig | str | Path | None = None,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    on_result: Callable[[EvaluationResult], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> list[EvaluationResult]:
    """`tritongym run`: evaluate many candidates in parallel sandboxes, recorded as one run in the registry."""
    evaluator = make_evaluator(config, registry, extra_plugins)
    selected = select(load_problems(problems, evaluator.size), only, problems)
    pairs = pair_candidates(selected, candidates_dir)
    if on_plan:
        on_plan(len(pairs))
    reg = evaluator.registry
    with evaluator, _keeping_verdicts(reg) as results:
        run_id = reg.start_run("eval", f"run {problems or 'suite'}", evaluator.config.model_dump()) if reg else None
        results += evaluator.evaluate_many(pairs, on_result=on_result)
        if reg is not None and run_id is not None:
            for sample, result in enumerate(results):
                reg.add_turn(run_id, result, sample=sample, turn=1)
            reg.finish_run(run_id)
    return results


def check_problems(
    problems: str | None = None,
    only: Sequence[str] = (),
    config: EvalConfig | str | Path | None = None,
    extra_plugins: Sequence[str] = (),
    on_result: Callable[[ScreenResult], None] | None = None,
) -> list[ScreenResult]:
    """`tritongym problems check`: run the negative controls on every problem, in parallel."""
    from tritongym.core.eval.screen import screen_problem

    evaluator = make_evaluator(config, False, extra_plugins)
    selected = select(load_problems(problems, evaluator.size), only, problems)
    seeds = trial_seeds(evaluator.config)

    def one(problem: Problem) -> ScreenResult:
        result = screen_problem(
            problem, evaluator.backend, evaluator.device, evaluator.limits, evaluator.tolerances, seeds
        )
        if on_result:
            on_result(result)
        return result

    workers = evaluator.config.workers or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(selected) or 1))) as pool:
        return list(pool.map(one, selected))


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
    precision: str | None = None  # ieee or tf32; None where the registry does not know it
    timing_samples: int | None = None  # timed samples behind runtime_ms (None: untimed)
    run_ids: list[int] = []  # the runs whose turns produced this kernel for this problem
    tuning: TunedFrom | None = None  # where `tritongym tune` made it from, if it is a tuned variant


def _best_kernel(reg: Registry, row: dict) -> BestKernel:
    tuned = reg.tuning_of(row["kernel_id"], row["problem_name"])
    return BestKernel(
        problem_id=row["problem_name"],
        evaluation_id=row["id"],
        run_ids=reg.runs_of(row["kernel_id"], row["problem_name"]),
        tuning=None if tuned is None else TunedFrom.model_validate({k: tuned[k] for k in TunedFrom.model_fields}),
        **{
            k: row[k]
            for k in BestKernel.model_fields
            if k in row and k not in ("problem_id", "evaluation_id", "run_ids", "tuning")
        },
    )


def _check_runs(reg: Registry, run: int | Sequence[int] | None) -> None:
    """`--run N` names runs the registry holds: an unknown id is bad input (exit 2), refused before anything is
    written, never 'no kernel stored' (which would send the user to evaluate more)."""
    ids = [run] if isinstance(run, int) else list(run or [])
    if not ids:
        return
    held = {r["id"] for r in reg.db.query("SELECT id FROM runs")}
    unknown = [i for i in ids if i not in held]
    if unknown:
        listed = ", ".join(map(str, sorted(held)[-10:])) or "none yet"
        raise ConfigError(
            f"no run {', '.join(map(str, unknown))} in registry {reg.path} (its latest runs: {listed}); "
            "`tritongym report RUN_ID` shows a run"
        )


_FILTER_DEFAULTS = {"backend": None, "precision": None, "run": None, "min_measurements": None, "by": "runtime"}


def _best_filters(backend, precision, run, min_measurements, by) -> dict:
    if by not in ("runtime", "speedup", "compile_speedup"):
        raise ConfigError(f"order the best kernels by 'runtime', 'speedup' or 'compile_speedup', not '{by}'")
    if min_measurements is not None and min_measurements < 0:
        raise ConfigError(f"the minimum number of measurements must be 0 or more, not {min_measurements}")
    return {
        "backend": backend,
        "precision": precision,
        "run_id": run,
        "min_measurements": min_measurements,
        "by": by,
    }


def best(
    problem: str | Sequence[str],
    device: str | None = None,
    size: str | None = None,
    registry: RegistryArg = None,
    *,
    backend: str | None = None,
    precision: str | None = None,
    run: int | Sequence[int] | None = None,
    min_measurements: int | None = None,
    by: str = "runtime",
) -> BestKernel | None:
    """`tritongym best`: the fastest honest kernel stored for a problem (a correct one where untimed).

    `problem` may be a set of names (the fastest over all of them); `device` is a device class. Filters:
    `backend`, `precision` (ieee or tf32; evaluations of unknown precision never match), `run` (kernels
    produced by turns of that run, or of those runs), `min_measurements` (the runtime is the median of at
    least this many timed samples; untimed evaluations never match), `by` (`runtime`, `speedup`, or
    `compile_speedup`: the speedup against torch.compile(reference), where it was timed).  A problem is what
    `evaluate` takes: a name, a .py file or SOURCE#NAME (`problem_names`)."""
    reg = open_registry(registry) or Registry()
    names = problem_names([problem] if isinstance(problem, str) else problem, reg)
    _check_runs(reg, run)
    wanted = names[0] if isinstance(problem, str) else names
    row = reg.best(wanted, device, size, **_best_filters(backend, precision, run, min_measurements, by))
    return None if row is None else _best_kernel(reg, row)


def problem_names(specs: Sequence[str], registry: RegistryArg = None) -> list[str]:
    """The names the registry stores these problem specs under (a name as given; a .py file or SOURCE#NAME
    as `evaluate` names it), in order; a name neither the registry nor the suite knows is `ProblemNotFound`,
    with the nearest known names offered (`best sofmax`: did you mean 'softmax'?)."""
    reg = open_registry(registry) or Registry()
    return resolve_names(specs, reg.problem_names(), f"registry {reg.path}")


def registry_stats(registry: RegistryArg = None) -> dict:
    """`tritongym registry stats`; a registry this user cannot write is read read-only."""
    if registry is None or isinstance(registry, (str, Path)):
        reg = Registry(registry, reading=True)
    else:
        reg = open_registry(registry) or Registry(reading=True)
    return reg.stats()


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


def advantages(
    turns: str | Path | Sequence,
    config: LearningConfig | str | Path | dict | None = None,
    step: int = 0,
    extra_plugins: Sequence[str] = (),
) -> AdvantageReport:
    """Advantages and keep decisions for a batch of turns (a JSONL path or `TurnRow`s/dicts): what a
    training step would learn from them under `config` (`tritongym advantages`)."""
    from tritongym.core.learn.learning import (
        LearningConfig,
        LearningSignalBuilder,
        load_learning_config,
        read_turn_rows,
    )
    from tritongym.core.turn_batch import TurnBatch

    if isinstance(config, LearningConfig):
        learning = config
    elif isinstance(config, dict):
        learning = load_learning_config(None, **config)
    else:
        learning = load_learning_config(config)
    builder = LearningSignalBuilder(learning, host=get_host(extra_plugins))
    rows = read_turn_rows(turns) if isinstance(turns, (str, Path)) else list(turns)
    try:
        batch = TurnBatch.from_rows(rows)
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"turns do not form a batch: {exc}") from None
    signal = builder.build(batch, step=step)
    return AdvantageReport(
        estimator=learning.estimator,
        filters=list(learning.filters),
        rows=[
            TurnAdvantage(
                group=int(batch.group[i]),
                trajectory=int(batch.trajectory[i]),
                turn=int(batch.turn[i]),
                reward=float(batch.reward[i]),
                advantage=float(signal.row_advantages[i]),
                kept=bool(signal.row_keep[i]),
                kept_tokens=int(signal.mask[i].sum()),
                policy_tokens=int(batch.tokens[i].sum()),
            )
            for i in range(batch.rows)
            if bool(batch.valid[i])
        ],
        metrics=signal.metrics,
    )


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


def rollouts(
    config: RunConfig | str | Path,
    steps: int = 1,
    out: str | Path | None = None,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> RolloutSummary:
    """Generate and evaluate multi-turn trajectories without training (`tritongym rollouts`); every turn
    is stored in the registry under a new run and appended to a JSONL file (`out`, default
    OUTPUT_DIR/trajectories.jsonl)."""
    from tritongym.core.learn.rollouts import RolloutRunner, RolloutTally, write_trajectories
    from tritongym.core.learn.run_setup import prepare_run

    run_config = _run_config(config)
    reg = open_registry(registry if registry is not None else run_config.registry)
    parts = prepare_run(run_config, registry=reg, extra_plugins=extra_plugins, training=False)
    path = Path(out) if out is not None else run_config.output_dir / "trajectories.jsonl"
    tally = RolloutTally()
    with RolloutRunner.session(parts, reg, "rollouts") as runner:
        for step in range(steps):
            batch = runner.collect(parts.problems_for_step(step), run_config.rollout.samples, step, progress)
            write_trajectories(path, batch.turns)
            tally.add(batch)
    return RolloutSummary(
        run_id=runner.run_id,
        trajectories_file=str(path),
        turns=tally.turns,
        statuses=tally.statuses,
        mean_reward=tally.mean_reward,
        evaluations=tally.evaluations,
        generate_s=tally.generate_s,
        evaluate_s=tally.evaluate_s,
    )


def train(
    config: RunConfig | str | Path,
    steps: int | None = None,
    resume: bool = False,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    on_step: Callable[[dict], None] | None = None,
    progress: Callable[[str], None] | None = None,
):
    """RL training with one config (`tritongym train`): returns a `TrainSummary` (core/learn/training.py)."""
    from tritongym.core.learn.training import train as run_training

    run_config = _run_config(config)
    reg = open_registry(registry if registry is not None else run_config.registry)
    return run_training(
        run_config, reg, steps=steps, resume=resume, extra_plugins=extra_plugins, on_step=on_step, progress=progress
    )


def sft(
    config: RunConfig | str | Path,
    data: Sequence[str | Path] | None = None,
    output: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
):
    """Cold-start SFT (`tritongym sft`): returns an `SFTSummary` (core/learn/sft.py)."""
    from tritongym.core.learn.sft import run_sft

    run_config = _run_config(config)
    return run_sft(
        run_config,
        data=[Path(p) for p in data] if data else None,
        output=Path(output) if output is not None else None,
        progress=progress,
    )


def tts(
    config: RunConfig | str | Path,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
):
    """Test-time scaling (`tritongym tts`): returns a `TTSSummary` (core/scaling/tts.py)."""
    from tritongym.core.scaling.tts import run_tts

    run_config = _run_config(config)
    reg = open_registry(registry if registry is not None else run_config.registry)
    return run_tts(run_config, reg, extra_plugins=extra_plugins, progress=progress)


# --- best kernels: leaderboard, export, history (`tritongym best`, `tritongym kernel`) -----------------


def leaderboard(
    problems: str | Sequence[str] | None = None,
    device: str | None = None,
    size: str | None = None,
    registry: RegistryArg = None,
    *,
    backend: str | None = None,
    precision: str | None = None,
    run: int | Sequence[int] | None = None,
    min_measurements: int | None = None,
    by: str = "runtime",
) -> list[BestKernel]:
    """`tritongym best` with no or several problems: the best honest kernel per problem (one each, by
    name) under the filters of `best`; problems with none are left out."""
    reg = open_registry(registry) or Registry()
    names = None if problems is None else problem_names([problems] if isinstance(problems, str) else problems, reg)
    _check_runs(reg, run)
    return _leaderboard(reg, names, device, size, _best_filters(backend, precision, run, min_measurements, by))


def _leaderboard(reg: Registry, names: list[str] | None, device, size, filters: dict) -> list[BestKernel]:
    """`leaderboard` of problems already named as stored (a file's name need not be in the registry yet)."""
    return [_best_kernel(reg, row) for row in reg.leaderboard(names, device, size, **filters)]


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


def _file_stem(problem: str, taken: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", problem).lstrip(".") or "problem"
    base, n = stem, 2
    while stem.lower() in taken:
        stem, n = f"{base}_{n}", n + 1
    taken.add(stem.lower())
    return stem


def export_best(
    directory: str | Path,
    problems: str | Sequence[str] | None = None,
    device: str | None = None,
    size: str | None = None,
    registry: RegistryArg = None,
    **filters,
) -> ExportManifest:
    """`tritongym best --export DIR`: write each problem's best kernel (the `leaderboard` under the same
    filters) as `DIR/<problem>.py`, and `DIR/manifest.json` saying which kernel and evaluation each is; where
    no kernel matches, nothing is written (the manifest returned says what was missing)."""
    reg = open_registry(registry) or Registry()
    asked = problem_names([problems] if isinstance(problems, str) else list(problems or []), reg)
    _check_runs(reg, filters.get("run"))
    kernels = _leaderboard(reg, asked or None, device, size, _best_filters(**_FILTER_DEFAULTS | filters))
    found = {k.problem_id for k in kernels}
    out_dir = Path(directory)
    if kernels:  # nothing matched: nothing written (an empty manifest would read as an export that worked)
        out_dir.mkdir(parents=True, exist_ok=True)
    taken: set[str] = {"manifest"}
    entries = []
    for k in kernels:
        path = out_dir / f"{_file_stem(k.problem_id, taken)}.py"
        path.write_text(k.source if k.source.endswith("\n") else k.source + "\n", encoding="utf-8")
        entries.append(
            ExportedKernel(
                problem=k.problem_id,
                file=path.name,
                **k.model_dump(
                    include={
                        "kernel_id",
                        "evaluation_id",
                        "speedup",
                        "compile_speedup",
                        "runtime_ms",
                        "device_class",
                        "backend",
                        "size",
                        "precision",
                        "run_ids",
                        "tuning",
                    }
                ),
            )
        )
    applied = {"device": device, "size": size, **filters}
    manifest = ExportManifest(
        directory=str(out_dir),
        filters={"problems": asked or None, **{k: v for k, v in applied.items() if v is not None}},
        kernels=entries,
        missing=[name for name in dict.fromkeys(asked) if name not in found],
    )
    if kernels:
        (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return manifest


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


def kernel_history(kernel_id: str, registry: RegistryArg = None) -> KernelHistory | None:
    """Where a kernel (its id, or a unique prefix of it) came from; None if the registry has not seen it."""
    reg = open_registry(registry) or Registry()
    found = reg.kernel_history(kernel_id)
    if found is None:
        return None
    kernel = found["kernel"]
    return KernelHistory(
        kernel_id=kernel["id"],
        origin=kernel["origin"],
        created_at=kernel["created_at"],
        source=kernel["source"],
        evaluations=[
            KernelEvaluation(
                evaluation_id=e["id"],
                problem=e["problem_name"],
                correct=bool(e["correct"]),
                hacked=bool(e["hacked"]),
                message=e["message"] or "",
                **{
                    k: e[k]
                    for k in KernelEvaluation.model_fields
                    if k in e and k not in ("correct", "hacked", "message")
                },
            )
            for e in found["evaluations"]
        ],
        turns=[
            KernelTurn(
                turn_id=t["id"], problem=t["problem_name"], **{k: t[k] for k in KernelTurn.model_fields if k in t}
            )
            for t in found["turns"]
        ],
    )


def report(run_id: int, registry: RegistryArg = None, reference: str = "eager"):
    """`tritongym report`: a run's last-turn and best-of-history Fast@p tables (`RunReport`,
    core/reports/run_report.py), against the eager reference or (`reference="compile"`) torch.compile(reference)."""
    from tritongym.core.reports.run_report import run_report

    return run_report(open_registry(registry) or Registry(), run_id, reference)


# --- tuning (`tritongym tune`) ------------------------------------------------------------------------


def tune(
    problems: str | Sequence[str] | None = None,
    *,
    file: str | Path | None = None,
    problem: str | None = None,
    strategy: str = "exhaustive",
    strategy_options: dict | None = None,
    budget: int = 16,
    time_budget: float | None = None,
    transfer: int = 2,
    config: EvalConfig | str | Path | None = None,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    on_plan: Callable[[str, int], None] | None = None,
    on_record: Callable[[str, TuningRecord], None] | None = None,
) -> TuneSummary:
    """`tritongym tune`: sweep the launch configurations of each problem's best honest kernel (or of `file`
    on `problem`), every variant judged by the full pipeline and recorded in the registry.

    `budget`: variants per problem besides the kernel as written; `time_budget`: seconds for the whole
    call (a batch holds what fits in the time left at the pace measured so far; none starts after);
    `transfer`: how many best configurations of the nearest earlier tuning (another device class or size)
    to try first.  Returns a `TuneSummary` (core/tune/summary.py)."""
    from tritongym.core.tune import Tuner, TuneSummary
    from tritongym.core.tune.sources import TuneTarget, from_registry

    started = time.perf_counter()
    names = [problems] if isinstance(problems, str) else list(problems or [])
    if file is not None and (problem is None or names):
        raise ConfigError("tune a file with --file PATH --problem NAME, and no PROBLEM arguments beside them")
    if file is None and problem is not None:
        raise ConfigError("--problem names the problem of --file; to tune the registry's best kernel, pass PROBLEM")
    if time_budget is not None and time_budget <= 0:
        raise ConfigError(f"the time budget must be a positive number of seconds, not {time_budget}")
    evaluator = make_evaluator(config, registry, extra_plugins)
    if evaluator.registry is None:
        raise ConfigError("tuning keeps its records in the registry: give it one (--registry PATH)")
    host = evaluator.host
    search = host.create("search_strategy", strategy, strategy_options)
    if file is not None:
        targets = [TuneTarget(load_problem(problem, evaluator.size), read_candidate(file), f"file {file}")]
    else:
        names = problem_names(names, evaluator.registry) if names else []
        targets = from_registry(evaluator.registry, names or None, evaluator.device_class, evaluator.size)
    deadline = None if time_budget is None else started + time_budget
    tuner = Tuner(evaluator, search, budget, deadline, transfer, on_record=on_record, on_plan=on_plan)
    with evaluator:
        tuned = [tuner.tune(t.problem, t.source, t.origin) for t in targets]
    return TuneSummary(
        strategy=strategy,
        strategy_options=search.options.model_dump(),
        budget=budget,
        time_budget_s=time_budget,
        transfer=transfer,
        backend=evaluator.backend_name,
        device_class=evaluator.device_class,
        size=evaluator.size,
        registry=str(evaluator.registry.path),
        problems=tuned,
        wall_s=time.perf_counter() - started,
    )
