"""One CPU evaluation's worker, started as a fresh interpreter or forked from the sandbox's zygote, side by side.

The triton-cpu backend used to start `python -m tritongym.core.worker` for every task: a new interpreter that
imports torch and Triton (about 2.4 s of CPU on an idle machine) before it reads the task.  It now forks the
worker from a zygote that imported them once (`tritongym/core/sandbox/task_zygote.py`).  This runs the same
task, a bundled problem's honest solution under the default number of trials (`EvalConfig().trials`), through
`run_in_sandbox` both ways, alternating (fresh, forked, fresh, ...) so that a change in the machine's load falls on
both alike, after one untimed run of each (the page cache; the zygote's own start, timed apart as `zygote_start_s`).
Every run must end `done` without an error, or the comparison says nothing.

Wall time is what it reports: the forked workers are the zygote's children, not this process's, so their CPU
time cannot be read from here.  On a machine other processes load, both columns grow (a fresh interpreter's imports
the most: they are CPU-bound); the load average before and after is in the JSON.  Prints a table and writes JSON
(default benchmarks/results/task_zygote.json).

    python benchmarks/task_zygote.py [--problem relu --problem softmax] [--repeat 5] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from _common import fmt, print_table

from tritongym.core.config import EvalConfig
from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.problems import load_problem
from tritongym.core.sandbox import sandbox, task_zygote
from tritongym.core.worker_task import SandboxLimits, WorkerTask

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "tritongym" / "problems" / "solutions"
ENV = {"TRITON_INTERPRET": "1"}  # the triton-cpu backend's


def task(name: str) -> WorkerTask:
    problem = load_problem(name)
    return WorkerTask(
        problem_name=problem.name,
        problem_source=problem.source,
        sizes=problem.sizes,
        candidate_source=(SOLUTIONS / f"{name}.py").read_text(),
        device="cpu",
        seeds=list(range(EvalConfig().trials)),
        tolerances=tolerances_for("tf32", {}),
    )


def run(one: WorkerTask, zygote: bool) -> float:
    start = time.monotonic()
    evidence = sandbox.run_in_sandbox(one, SandboxLimits(timeout_s=600), ENV, zygote=zygote)
    wall = time.monotonic() - start
    if evidence.stage != "done" or evidence.error is not None:
        sys.exit(f"{one.problem_name} ({'forked' if zygote else 'fresh'}) did not finish: {evidence.error}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", action="append", help="a bundled problem with a solution (default: relu, softmax)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each kind per problem")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "task_zygote.json"))
    args = parser.parse_args()
    problems = args.problem or ["relu", "softmax"]
    load_before = os.getloadavg()

    start = time.monotonic()
    sandbox.warm_zygote(ENV)
    zygote = sandbox._zygote(ENV)
    with zygote.cond:
        zygote.cond.wait_for(lambda: zygote.ready or zygote.dead, task_zygote.START_TIMEOUT_S)
    zygote_start_s = time.monotonic() - start

    results = []
    for name in problems:
        one = task(name)
        run(one, False), run(one, True)  # untimed: the page cache, the zygote's first fork
        walls: dict[str, list[float]] = {"fresh": [], "forked": []}
        for _ in range(args.repeat):
            walls["fresh"].append(run(one, False))
            walls["forked"].append(run(one, True))
        fresh, forked = statistics.median(walls["fresh"]), statistics.median(walls["forked"])
        results.append(
            {
                "problem": name,
                "fresh_s": walls["fresh"],
                "forked_s": walls["forked"],
                "fresh_median_s": round(fresh, 3),
                "forked_median_s": round(forked, 3),
                "saved_s": round(fresh - forked, 3),
                "ratio": round(fresh / forked, 2),
            }
        )
        print(f"{name}: fresh {fresh:.2f} s, forked {forked:.2f} s", flush=True)
    task_zygote.close_all()

    print_table(
        f"One CPU evaluation's worker ({EvalConfig().trials} trials), median of {args.repeat}: fresh vs forked",
        ["problem", "fresh interpreter s", "forked from the zygote s", "saved s", "fresh / forked"],
        [
            [r["problem"], fmt(r["fresh_median_s"]), fmt(r["forked_median_s"]), fmt(r["saved_s"]), r["ratio"]]
            for r in results
        ],
    )
    print(f"zygote start (once per process): {zygote_start_s:.2f} s; load average {load_before} -> {os.getloadavg()}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "repeat": args.repeat,
                "trials": EvalConfig().trials,
                "zygote_start_s": round(zygote_start_s, 3),
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
