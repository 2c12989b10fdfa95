"""Which kernel `tritongym tune` tunes for each problem by default: the registry's best honest one.

The registry's best may itself be a variant an earlier tuning produced (on a timing backend it usually
is, once tuned): then the kernel it was tuned from is tuned again, so a second `tune` of a problem meets
the records of the first and costs nothing.  The problem is rebuilt from the reference source the registry
stored with that kernel's evaluation, at the evaluator's size, so problems from outside the suite work too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from tritongym.core.errors import NoKernelStored
from tritongym.core.models import Candidate, Problem
from tritongym.core.problems import parse_problem, suite_names
from tritongym.core.registry import Registry


@dataclass(frozen=True)
class TuneTarget:
    """One problem and the kernel to tune on it, with where that kernel came from (in words)."""

    problem: Problem
    source: Candidate
    origin: str


def from_registry(
    registry: Registry,
    names: list[str] | None,
    device_class: str,
    size: str,
    specs: dict[str, str] | None = None,
    keys: dict[str, str] | None = None,
) -> list[TuneTarget]:
    """The best honest kernel of each named problem (every problem with one, when `names` is None), judged on
    this device class and size where the registry has such a verdict, else anywhere.  `specs`: each name as the
    user gave it (a file, SOURCE#NAME), for the commands suggested when none is stored; `keys`: each name's
    content key, so a kernel stored under another name of the same problem is found."""
    specs, keys = specs or {}, keys or {}
    if names is None:
        rows = registry.leaderboard(None, device_class, size) or registry.leaderboard(None)
        if not rows:
            raise NoKernelStored(
                f"registry {registry.path} holds no honest, correct kernel to tune; evaluate some first "
                "(`tritongym run`, `tritongym eval K.py --problem NAME`) or tune a file (`--file K.py --problem NAME`)"
            )
        names = [row["problem_name"] for row in rows]
    targets = []
    for name in dict.fromkeys(names):
        same = [keys[name]] if name in keys else None
        row = registry.best(name, device_class, size, problem_keys=same) or registry.best(name, problem_keys=same)
        if row is None:
            spec = shlex.quote(specs.get(name, name))
            run = f" or `tritongym run --only {name}`" if name in suite_names() and spec == name else ""
            raise NoKernelStored(
                f"no honest, correct kernel stored for problem '{name}' in {registry.path} to tune; evaluate one "
                f"first (`tritongym eval KERNEL.py --problem {spec}`{run}), or tune a file with "
                f"`tritongym tune --file KERNEL.py --problem {spec}`"
            )
        origin = f"registry: best kernel (evaluation {row['id']})"
        kernel_id, source = row["kernel_id"], row["source"]
        tuned = registry.tuning_of(kernel_id, name)
        if tuned is not None:
            kernel_id = tuned["source_kernel_id"]
            source = registry.db["kernels"].get(kernel_id)["source"]
            origin = f"registry: the kernel the best (evaluation {row['id']}, a tuned variant) was tuned from"
        reference = registry.db["problems"].get(row["problem_key"])
        problem = parse_problem(reference["source"], name, reference["origin"] or "", size)
        targets.append(TuneTarget(problem, Candidate(source=source, origin=f"registry:{kernel_id}"), origin))
    return targets
