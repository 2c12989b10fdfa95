"""Judging candidates: `tritongym eval`, `run`, `problems check` and `plugins`, and what every other API
module builds on (the registry argument, the evaluator, reading a candidate file)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tritongym.api.registries import RegistryArg, open_registry  # noqa: F401 - re-exported: api.RegistryArg
from tritongym.core.config import EvalConfig, load_config
from tritongym.core.errors import CandidateFileError, ConfigError, ProblemNotFound, RegistryNotStored
from tritongym.core.models import Candidate, EvaluationResult, Problem
from tritongym.core.problems import load_problem, load_problems, select

if TYPE_CHECKING:
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.eval.screen import ScreenResult
    from tritongym.core.plugins import Registered
    from tritongym.core.registry import Registry


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


def plugins(extra_plugins: Sequence[str] = ()) -> list[Registered]:
    """Every registered backend, check, reward, estimator, sample filter, engine and search strategy."""
    from tritongym.core.plugins import get_host

    return get_host(extra_plugins).all()


def make_evaluator(
    config: EvalConfig | str | Path | None = None, registry: RegistryArg = None, extra_plugins: Sequence[str] = ()
) -> Evaluator:
    # the judge's modules and the plugins load when an evaluator is made: a warm `eval` hands over without one
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.plugins import get_host

    return Evaluator(_config(config), registry=open_registry(registry), host=get_host(extra_plugins))


def evaluate(
    candidate: str | Path | Candidate,
    problem: str | Problem,
    config: EvalConfig | str | Path | None = None,
    registry: RegistryArg = None,
    extra_plugins: Sequence[str] = (),
    pool: str = "auto",
) -> EvaluationResult:
    """`tritongym eval`: judge one candidate (a file path, or a Candidate) on one problem.

    `pool`: "auto" hands the candidate to a `tritongym serve` running on this machine that judges as this call
    would, into the same registry, when there is one (`api/warm_pool.py`; its result has the phase `warm_pool_s`),
    and otherwise evaluates here; "off" always evaluates here; "require" raises `NoWarmPool` when no such service
    judges it.  Here, the backend starts only what one candidate needs (`Evaluator.size_to`)."""
    from tritongym.api.warm_pool import POOL_CHOICES, announced
    from tritongym.core.timeline import mark

    if pool not in POOL_CHOICES:
        raise ConfigError(f"pool takes {', '.join(POOL_CHOICES)}; got {pool!r}")
    mark("evaluate_called", pool=pool)
    if not isinstance(candidate, Candidate):
        candidate = read_candidate(candidate)
    if pool == "require" or (pool == "auto" and announced()):
        handed = _hand_over(candidate, problem, config, registry, extra_plugins, required=pool == "require")
        if handed is not None:
            return handed
    with make_evaluator(config, registry, extra_plugins) as evaluator:
        mark("evaluator_made")
        if not isinstance(problem, Problem):
            problem = load_problem(problem, evaluator.size)
        mark("problem_loaded")
        evaluator.size_to(1)
        mark("backend_sized")
        with _keeping_verdicts(evaluator.registry) as kept:
            kept.append(evaluator.evaluate(candidate, problem))
        mark("evaluated", status=kept[0].status)
        return kept[0]


def _hand_over(
    candidate: Candidate,
    problem: str | Problem,
    config: EvalConfig | str | Path | None,
    registry: RegistryArg,
    extra_plugins: Sequence[str],
    required: bool,
) -> EvaluationResult | None:
    """A warm pool's verdict (`warm_pool`), or None.  First a service announced with this very config in this
    environment (`quick_find`: no evaluator made); else one whose terms equal those of an evaluator made here,
    which only says how this call judges (`warm_pool.terms`).  Neither opens the registry, so a hand-over never
    loads the store (sqlite-utils and numpy, 0.35-0.4 s on the lent H200's image), and neither starts anything."""
    from tritongym.api.registries import registry_path
    from tritongym.api.warm_pool import hand_over, hand_over_to, quick_find
    from tritongym.core.timeline import mark

    path = registry_path(registry)
    registry_file = None if path is None else str(path)
    settings = _config(config)
    record = quick_find(settings, registry_file, extra_plugins)
    if record is not None:
        mark("quick_found")
        if not isinstance(problem, Problem):
            problem = load_problem(problem, record.size)
        asked = (problem.key, candidate.kernel_id, record.protocol, record.backend, record.device_class)
        handed = hand_over_to(record, candidate, problem, asked, required=required)
        mark("hand_over_tried", handed=handed is not None, quick=True)
        return handed  # None: the pool that fits failed, and `find` would find it again; evaluated here
    with make_evaluator(settings, False, extra_plugins) as judge:
        mark("evaluator_made", registry=False)
        if not isinstance(problem, Problem):
            problem = load_problem(problem, judge.size)
        mark("problem_loaded")
        handed = hand_over(judge, candidate, problem, registry_file, required=required)
        mark("hand_over_tried", handed=handed is not None)
        return handed


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
    on_run: Callable[[int], None] | None = None,
) -> list[EvaluationResult]:
    """`tritongym run`: evaluate many candidates in parallel sandboxes, recorded as one run in the registry.
    `on_run` is told the run's id as soon as the run is recorded (`report RUN_ID` and `best --run` take it)."""
    evaluator = make_evaluator(config, registry, extra_plugins)
    selected = select(load_problems(problems, evaluator.size), only, problems)
    pairs = pair_candidates(selected, candidates_dir)
    if on_plan:
        on_plan(len(pairs))
    reg = evaluator.registry
    with evaluator, _keeping_verdicts(reg) as results:
        run_id = reg.start_run("eval", f"run {problems or 'suite'}", evaluator.config.model_dump()) if reg else None
        if on_run is not None and run_id is not None:
            on_run(run_id)
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
    from tritongym.core.eval.evaluate import trial_seeds
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
