"""What the registry holds, read back: `tritongym best` (one problem, a leaderboard, `--export`), `kernel`,
`registry stats` and `report`.  A problem is named as `tritongym eval --problem` takes it (`problem_names`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tritongym.api.registries import RegistryArg, existing_registry, stored_registry
from tritongym.api.results import (
    BestKernel,
    ExportedKernel,
    ExportManifest,
    KernelEvaluation,
    KernelHistory,
    KernelTurn,
    TunedFrom,
)
from tritongym.core.errors import ConfigError
from tritongym.core.problems import load_problem, names_a_file, resolve_names, suite_names
from tritongym.core.registry import Registry


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
    specs = [problem] if isinstance(problem, str) else list(problem)
    names = problem_names(specs, registry)  # a mistyped name is bad input before a missing registry
    reg = stored_registry(registry)
    _check_runs(reg, run)
    wanted = names[0] if isinstance(problem, str) else names
    filters = _best_filters(backend, precision, run, min_measurements, by)
    row = reg.best(wanted, device, size, problem_keys=problem_keys(specs), **filters)
    return None if row is None else _best_kernel(reg, row)


def problem_names(specs: Sequence[str], registry: RegistryArg = None) -> list[str]:
    """The names the registry stores these problem specs under (a name as given; a .py file or SOURCE#NAME
    as `evaluate` names it), in order; a name neither the registry nor the suite knows is `ProblemNotFound`,
    with the nearest known names offered (`best sofmax`: did you mean 'softmax'?)."""
    reg = existing_registry(registry)
    if reg is None:  # none there yet: the suite's names alone; a known name then finds no registry
        return resolve_names(specs, [], "the registry")
    return resolve_names(specs, reg.problem_names(), f"registry {reg.path}")


def problem_keys(specs: Sequence[str]) -> list[str]:
    """The content keys (`Problem.key`) of the specs that name a file or a suite problem: what `eval` stored their
    verdicts under, whatever name it gave them (`best kb/19_ReLU.py` after `run --problems kb`)."""
    keys = []
    for spec in specs:
        if names_a_file(spec) or spec in suite_names():
            keys.append(load_problem(spec).key)
    return list(dict.fromkeys(keys))


def registry_stats(registry: RegistryArg = None) -> dict:
    """`tritongym registry stats`; a registry this user cannot write is read read-only."""
    return stored_registry(registry, reading=True).stats()


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
    specs = None if problems is None else [problems] if isinstance(problems, str) else list(problems)
    names = None if specs is None else problem_names(specs, registry)
    reg = stored_registry(registry)
    _check_runs(reg, run)
    filters = _best_filters(backend, precision, run, min_measurements, by)
    if specs is not None:
        filters["problem_keys"] = problem_keys(specs)
    return _leaderboard(reg, names, device, size, filters)


def _leaderboard(reg: Registry, names: list[str] | None, device, size, filters: dict) -> list[BestKernel]:
    """`leaderboard` of problems already named as stored (a file's name need not be in the registry yet)."""
    return [_best_kernel(reg, row) for row in reg.leaderboard(names, device, size, **filters)]


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
    specs = [problems] if isinstance(problems, str) else list(problems or [])
    asked = problem_names(specs, registry)
    reg = stored_registry(registry)
    _check_runs(reg, filters.get("run"))
    chosen = _best_filters(**_FILTER_DEFAULTS | filters)
    if specs:
        chosen["problem_keys"] = problem_keys(specs)
    kernels = _leaderboard(reg, asked or None, device, size, chosen)
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


def kernel_history(kernel_id: str, registry: RegistryArg = None) -> KernelHistory | None:
    """Where a kernel (its id, or a unique prefix of it) came from; None if the registry has not seen it."""
    reg = stored_registry(registry)
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
    core/reports/run_report.py), against the eager reference or (`reference="compile"`) torch.compile(reference) or
    (`reference="field"`) the field's convention; `RunReport.overall_field` is always against the field's convention
    (fp32 eager, torch's TF32 defaults: comparable with KernelBench's and Dr. Kernel's Fast@p)."""
    from tritongym.core.reports.run_report import run_report

    return run_report(stored_registry(registry), run_id, reference)
