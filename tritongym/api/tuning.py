"""`tritongym tune`: launch configurations of stored kernels (or of a file), every variant judged by the
full pipeline and recorded in the registry."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tritongym.api.evaluation import RegistryArg, make_evaluator, read_candidate
from tritongym.api.kernels import problem_keys, problem_names
from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError
from tritongym.core.problems import load_problem, stored_name

if TYPE_CHECKING:
    from tritongym.core.tune import TuneSummary
    from tritongym.core.tuning import TuningRecord


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
        specs = {stored_name(spec): spec for spec in names}
        keys = {name: found[0] for name, spec in specs.items() if (found := problem_keys([spec]))}
        names = problem_names(names, evaluator.registry) if names else []
        targets = from_registry(
            evaluator.registry, names or None, evaluator.device_class, evaluator.size, specs=specs, keys=keys
        )
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
