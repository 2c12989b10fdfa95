"""The tuning loop: variants of one kernel proposed, baked, judged by the `Evaluator`, recorded, compared.

Per problem, in this order, each step spending the budget (`budget` variants, the kernel as written not
counted) and stopping at the deadline between batches:

1. the kernel as written, through the same pipeline: if it is not `ok` there is nothing to tune;
2. configurations to try first: the best of the nearest earlier tuning of the same kernel (another device
   class or size; `transfer`), then each config of an `@triton.autotune` list;
3. the search strategy's proposals over the grid (re-centred on the best autotune config, if any), a
   batch at a time (as many as the evaluator runs in parallel), until it proposes nothing.

With a deadline, a batch is also cut to what fits in the time left at the pace measured so far (seconds
of judging per variant judged), so a tuning overshoots its time budget by about one variant, not one
batch: on one GPU a batch of 16 variants, some of them hitting the 120 s timeout, once ran 400 s past a
60 s budget.

Every variant goes through `Evaluator.evaluate_many`: static checks, the sandboxed worker, correctness over
several trials, runtime checks and, on a timing backend, paired timing.  A variant that is not `ok` is
recorded with its status and is never the best.  Records are stored after each batch, in the order proposed
(so an untimed backend's "first correct" is well defined); a configuration the registry has a record for
(same source, backend, device class, protocol) is answered from it without a worker, and one whose batch
was interrupted finds its verdict among the evaluations: an interrupted tuning resumes where it stopped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tritongym.core.errors import ConfigError, PluginError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.interfaces import SearchStrategy
from tritongym.core.models import Candidate, EvaluationResult, Problem
from tritongym.core.source import kernel_id_of
from tritongym.core.tune.space import Discovery, discover
from tritongym.core.tune.summary import UNTIMED_NOTE, ProblemTuning
from tritongym.core.tune.variant import VariantError, bake
from tritongym.core.tuning import Config, SearchSpace, TuningContext, TuningRecord, config_key, config_text

OnRecord = Callable[[str, TuningRecord], None]
OnPlan = Callable[[str, int], None]


def batch_size(parallel: int, deadline: float | None, pace: float | None, now: float) -> int:
    """Variants to send at once: as many as run in parallel, cut to what fits before the deadline at the
    pace measured so far (at least one: the deadline is checked before a batch, not inside it)."""
    if deadline is None or not pace:
        return parallel
    return max(1, min(parallel, int((deadline - now) / pace)))


@dataclass
class _Session:
    """One problem's tuning in progress."""

    problem: Problem
    source: Candidate
    discovery: Discovery
    context: TuningContext
    known: dict[str, TuningRecord]  # variant kernel id -> its stored record (this context)
    records: list[TuningRecord] = field(default_factory=list)
    evaluated: int = 0
    cached: int = 0
    judging_s: float = 0.0  # wall time spent in the evaluator, over `evaluated` variants judged

    def seconds_per_variant(self) -> float | None:
        """The pace so far (batches run in parallel, so this is less than one variant's latency)."""
        return self.judging_s / self.evaluated if self.evaluated else None

    @property
    def variants(self) -> int:
        return sum(r.strategy != "source" for r in self.records)

    def measured(self) -> set[str]:
        return {config_key(r.config) for r in self.records}


class Tuner:
    """Tunes one problem's kernel after another with one evaluator, strategy and budget."""

    def __init__(
        self,
        evaluator: Evaluator,
        strategy: SearchStrategy,
        budget: int,
        deadline: float | None = None,
        transfer: int = 2,
        on_record: OnRecord | None = None,
        on_plan: OnPlan | None = None,
    ) -> None:
        if evaluator.registry is None:
            raise ConfigError("tuning keeps its records in the registry: give it one (--registry PATH)")
        if budget < 0 or transfer < 0:
            raise ConfigError(f"the budget ({budget}) and the transfer count ({transfer}) must be 0 or more")
        self.evaluator = evaluator
        self.registry = evaluator.registry
        self.strategy = strategy
        self.budget = budget
        self.deadline = deadline
        self.transfer = transfer
        self.on_record = on_record
        self.on_plan = on_plan
        self.batch = max(1, evaluator.config.workers or os.cpu_count() or 1)
        self.plugin = evaluator.host.get("search_strategy", strategy.name).plugin

    def _late(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    # --- one problem ------------------------------------------------------------------------------------

    def tune(self, problem: Problem, source: Candidate, origin: str) -> ProblemTuning:
        started = time.perf_counter()
        ev = self.evaluator
        discovery = discover(source.source)
        space = discovery.space
        context = TuningContext(
            problem_key=problem.key,
            problem_name=problem.name,
            source_kernel_id=source.kernel_id,
            backend=ev.backend_name,
            device_class=ev.device_class,
            size=problem.size,
            protocol=ev.protocol,
        )
        known = {r.kernel_id: r for r in self.registry.tuning_records(context)}
        # the nearest tuning seeds a context with no records of its own, and again when that is tuned again
        seed_from_nearest = not known or any(r.strategy == "transfer" for r in known.values())
        session = _Session(problem, source, discovery, context, known)
        summary = ProblemTuning(
            problem=problem.name,
            status="tuned",
            message="",
            source_kernel_id=source.kernel_id,
            source_origin=origin,
            backend=ev.backend_name,
            device_class=ev.device_class,
            size=problem.size,
            strategy=self.strategy.name,
            params=space.params,
            fixed=space.fixed,
            space_size=space.size,
        )
        if self.on_plan:
            planned = min(self.budget, space.size + len(space.points) + self.transfer) if space.params else 0
            self.on_plan(problem.name, 1 + planned)

        (written,) = self._measure(session, [(discovery.as_written(), "source")])
        if not written.ok:
            summary.status = "source_not_ok"
            summary.message = (
                f"the kernel to tune is not ok on {ev.backend_name} ({written.status}: {written.message}); "
                "fix it, or tune another kernel with --file"
            )
            return self._finish(summary, session, "", started)
        if not space.params:
            summary.status = "no_parameters"
            why = "; ".join(space.fixed) or "no kernel launch with literal block sizes, num_warps or num_stages"
            summary.message = f"nothing to tune in kernel {source.kernel_id}: {why}"
            return self._finish(summary, session, "", started)

        first: list[tuple[Config, str]] = []
        if seed_from_nearest:
            where, configs = self.registry.nearest_tuned_configs(context, self.transfer)
            first += [(c, "transfer") for c in self._usable(discovery, configs)]
            summary.transferred_from = where if first else None
        first += [(p, "autotune") for p in space.points]
        stopped = self._run(session, first)
        listed = [r for r in session.records if r.strategy == "autotune" and r.ok]
        if listed:  # the grid around the best listed config (on an untimed backend: the first correct one)
            timed = [r for r in listed if r.runtime_ms is not None]
            space = discovery.around(min(timed, key=lambda r: r.runtime_ms).config if timed else listed[0].config)
        while not stopped:
            left = self.budget - session.variants
            proposals = self._propose(space, session, left)
            stopped = self._run(session, [(c, self.strategy.name) for c in proposals]) if proposals else "exhausted"
        if stopped == "time_budget" and not session.variants:  # the written kernel alone is no tuning
            summary.status = "out_of_time"
            summary.message = (
                f"the time budget ran out before any variant of kernel {source.kernel_id} was measured (only the "
                "kernel as written was); give --time-budget more seconds, or tune fewer problems per call"
            )
        elif not session.variants and self.budget == 0:  # `--budget 0` judged the written kernel, tuned nothing
            summary.status = "nothing_measured"
            summary.message = (
                f"a budget of 0 variants measured no variant of kernel {source.kernel_id} (only the kernel as "
                "written was judged): nothing was tuned; give --budget 1 or more"
            )
        return self._finish(summary, session, stopped, started)

    def _usable(self, discovery: Discovery, configs: list[Config]) -> list[Config]:
        """Configurations from another context that this source can take (the same kernel: the same names)."""
        current = discovery.space.current()
        return [{**current, **c} for c in configs if set(c) <= set(current)]

    def _propose(self, space: SearchSpace, session: _Session, left: int) -> list[Config]:
        """The strategy's next proposals, checked: a broken strategy is named, never silently obeyed."""
        try:
            proposals = self.strategy.propose(space, list(session.records), left)
        except Exception as exc:
            raise PluginError(
                f"search strategy '{self.strategy.name}' (plugin '{self.plugin}') raised {type(exc).__name__}: {exc}"
            ) from exc
        names = {p.name for p in space.params}
        for config in proposals:
            if not isinstance(config, dict) or set(config) != names or not all(type(v) is int for v in config.values()):
                raise PluginError(
                    f"search strategy '{self.strategy.name}' (plugin '{self.plugin}') proposed {config!r}: a proposal "
                    f"must give every parameter of the space ({', '.join(sorted(names))}) an integer value"
                )
        measured = session.measured()
        return [c for c in proposals if config_key(c) not in measured]

    def _run(self, session: _Session, items: Sequence[tuple[Config, str]]) -> str:
        """Measure `items` in batches within the budget and deadline; why it stopped ('' if it did not)."""
        items = list(items)
        while items:
            left = self.budget - session.variants
            if left <= 0:
                return "budget"
            if self._late():
                return "time_budget"
            size = min(left, batch_size(self.batch, self.deadline, session.seconds_per_variant(), time.perf_counter()))
            batch, items = items[:size], items[size:]
            self._measure(session, batch)
        if self.budget - session.variants <= 0:
            return "budget"
        return "time_budget" if self._late() else ""

    # --- measuring --------------------------------------------------------------------------------------

    def _measure(self, session: _Session, items: Sequence[tuple[Config, str]]) -> list[TuningRecord]:
        """Bake, judge (or find in the registry) and record each configuration; records in input order."""
        measured = session.measured()
        plan: list[tuple[Config, str, Candidate | None, TuningRecord | None]] = []
        todo: dict[str, Candidate] = {}
        for config, strategy in items:
            if config_key(config) in measured:
                continue
            measured.add(config_key(config))
            try:
                text = bake(session.discovery, config)
            except VariantError as exc:
                invalid = TuningRecord(
                    config=config,
                    kernel_id=kernel_id_of(f"# invalid variant {config_key(config)}"),
                    strategy=strategy,
                    status="invalid",
                    message=str(exc),
                )
                plan.append((config, strategy, None, invalid))
                continue
            if text == session.source.source:
                candidate = session.source
            else:
                origin = f"tune {session.problem.name}: {config_key(config)} of kernel {session.source.kernel_id}"
                candidate = Candidate(source=text, origin=origin)
            plan.append((config, strategy, candidate, None))
            if candidate.kernel_id not in session.known:
                todo.setdefault(candidate.kernel_id, candidate)
        results: dict[str, EvaluationResult] = {}
        if todo:
            started = time.perf_counter()
            for result in self.evaluator.evaluate_many([(c, session.problem) for c in todo.values()]):
                results[result.kernel_id] = result
                session.cached += result.cached
                session.evaluated += not result.cached
            session.judging_s += time.perf_counter() - started
        out = []
        for config, strategy, candidate, record in plan:
            store = record is not None
            if record is None and candidate.kernel_id not in session.known:
                record = _record(config, strategy, results[candidate.kernel_id])
                session.known[candidate.kernel_id] = record
                store = True
            elif record is None:  # the registry (or this batch) had it: no worker
                record = session.known[candidate.kernel_id].model_copy(update={"config": config, "cached": True})
                session.cached += 1
            self._keep(session, record, store)
            out.append(record)
        return out

    def _keep(self, session: _Session, record: TuningRecord, store: bool) -> None:
        if store:
            self.registry.store_tuning_record(session.context, record)
        session.records.append(record)
        if self.on_record:
            self.on_record(session.problem.name, record)

    # --- the verdict ------------------------------------------------------------------------------------

    @staticmethod
    def _best(session: _Session) -> TuningRecord:
        """The fastest ok record where timed, else the first ok one (the kernel as written comes first)."""
        ok = [r for r in session.records if r.ok]
        timed = [r for r in ok if r.runtime_ms is not None]
        return min(timed, key=lambda r: r.runtime_ms) if timed else ok[0]

    def _finish(self, summary: ProblemTuning, session: _Session, stopped: str, started: float) -> ProblemTuning:
        records = session.records
        summary.records = records
        summary.variants = session.variants
        summary.evaluated = session.evaluated
        summary.cached = session.cached
        summary.rejected = sum(not r.ok for r in records if r.strategy != "source")
        summary.stopped_by = stopped
        summary.timed = any(r.runtime_ms is not None for r in records)
        if summary.status == "tuned":
            best = self._best(session)
            written = records[0]
            summary.best_config = best.config
            summary.best_kernel_id = best.kernel_id
            summary.source_runtime_ms = written.runtime_ms
            summary.best_runtime_ms = best.runtime_ms
            if written.runtime_ms and best.runtime_ms:
                summary.speedup = written.runtime_ms / best.runtime_ms
            if not summary.timed:
                summary.note = UNTIMED_NOTE.format(backend=summary.backend)
            summary.message = (
                f"{summary.variants} variant(s) of kernel {summary.source_kernel_id} measured "
                f"({summary.rejected} rejected); best: {config_text(best.config)}"
            )
        summary.wall_s = time.perf_counter() - started
        return summary


def _record(config: Config, strategy: str, result: EvaluationResult) -> TuningRecord:
    candidate = result.timing.candidate if result.timing is not None else None
    return TuningRecord(
        config=config,
        kernel_id=result.kernel_id,
        strategy=strategy,
        status=result.status.value,
        runtime_ms=result.runtime_ms,
        runtime_iqr_ms=candidate.iqr_ms if candidate is not None else None,
        evaluation_id=result.evaluation_id,
        message=result.message,
        cached=result.cached,
    )
