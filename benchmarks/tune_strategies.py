"""Search strategies of `tritongym tune` compared: the speedup each finds over the kernel as written, per budget.

For each strategy (each in a fresh registry, so none inherits another's records or transfer seeds) and
each problem, the shipped solution is evaluated, then tuned with `--budget` variants; the best-so-far
speedup after each variant (the kernel as written's runtime over the fastest ok variant measured so far)
is the curve a better strategy lifts.  Then the tuning is repeated to show what a second `tune` costs
(it should judge nothing).  Prints a table and writes JSON (default benchmarks/results/tune_strategies.json).

On triton-cpu nothing is timed: the run still shows what each strategy explores and rejects, with no
speedup.  A new strategy (e.g. a cost model) ships only if it beats `random` here, on a GPU; until then it
is loaded as a plugin file, like the candidate in `benchmarks/strategies/surrogate.py`:

    python benchmarks/tune_strategies.py [PROBLEM ...] [--strategy exhaustive --strategy random]
        [--budget 16] [--seeds 3] [--first-seed 0] [--backend auto] [--out PATH]
    python benchmarks/tune_strategies.py --plugin benchmarks/strategies/surrogate.py \
        --strategy exhaustive --strategy random --strategy surrogate
    python benchmarks/tune_strategies.py --merge part1.json part2.json --out tune_strategies.json

The JSON is rewritten after every tuning, so a run cut off by a time limit keeps what it measured;
runs over different problems (one per call on a lent machine) are joined with `--merge`.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path

from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.problems import load_problem

DEFAULT_PROBLEMS = ["relu", "softmax", "matmul", "layer_norm", "sum_dim", "conv2d"]


def best_so_far(records: list[dict]) -> list[float | None]:
    """After each variant (the kernel as written first): its runtime over the fastest ok runtime so far."""
    written = records[0]["runtime_ms"]
    curve, fastest = [], None
    for r in records[1:]:
        if r["status"] == "ok" and r["runtime_ms"] is not None:
            fastest = r["runtime_ms"] if fastest is None else min(fastest, r["runtime_ms"])
        curve.append(written / min(fastest, written) if written and fastest else None)
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help=f"suite problems (default: {' '.join(DEFAULT_PROBLEMS)})")
    parser.add_argument("--strategy", action="append", help="strategy to compare (repeatable)")
    parser.add_argument("--budget", type=int, default=16, help="variants per problem")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds per tuning as well (strategies compared at equal wall time; no repeat run then, since a "
        "second tune would spend its own time budget going on)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the random strategy (one run each)")
    parser.add_argument("--first-seed", type=int, default=0, help="the random strategy's seeds start here")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--plugin", action="append", default=[], help="plugin module or .py file (repeatable)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "tune_strategies.json")
    parser.add_argument("--merge", type=Path, nargs="+", help="print and write one summary from these JSON results")
    args = parser.parse_args()
    if args.merge:
        parts = [json.loads(p.read_text()) for p in args.merge]
        budgets = {part["budget"] for part in parts}
        if len(budgets) != 1:
            parser.error(f"--merge: the runs used different budgets {sorted(budgets)}")
        rows = [row for part in parts for row in part["rows"]]
        problems = list(dict.fromkeys(p for part in parts for p in part["problems"]))
        write_summary(rows, budgets.pop(), problems, args.out)
        return
    problems = args.problems or DEFAULT_PROBLEMS
    runs = []
    for name in args.strategy or ["exhaustive", "random"]:
        seeds = range(args.first_seed, args.first_seed + args.seeds) if name == "random" else [None]
        runs += [(name, {} if seed is None else {"seed": seed}) for seed in seeds]

    config = EvalConfig(backend=args.backend, trials=3)
    rows = []
    for strategy, options in runs:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "registry.db"
            for problem_name in problems:
                problem = load_problem(problem_name, "cpu")
                assert problem.solution is not None, f"{problem_name} ships no solution"
                kernel = Path(tmp) / f"{problem_name}.py"
                kernel.write_text(problem.solution)
                tune = functools.partial(
                    api.tune,
                    file=kernel,
                    problem=problem_name,
                    strategy=strategy,
                    strategy_options=options,
                    budget=args.budget,
                    time_budget=args.time_budget,
                    config=config,
                    registry=db,
                    extra_plugins=args.plugin,
                )
                started = time.perf_counter()
                summary = tune()
                first_s = time.perf_counter() - started
                started = time.perf_counter()
                again = tune() if args.time_budget is None else None
                (tuned,) = summary.problems
                records = [r.model_dump() for r in tuned.records]
                rows.append(
                    {
                        "strategy": strategy,
                        "options": options,
                        "problem": problem_name,
                        "backend": summary.backend,
                        "device_class": summary.device_class,
                        "status": tuned.status,
                        "variants": tuned.variants,
                        "rejected": tuned.rejected,
                        "speedup": tuned.speedup,
                        "best_config": tuned.best_config,
                        "best_so_far": best_so_far(records) if records else [],
                        "tune_s": first_s,
                        "time_budget": args.time_budget,
                        "repeat_evaluated": None if again is None else again.problems[0].evaluated,
                        "repeat_s": time.perf_counter() - started,
                        "records": records,
                    }
                )
                repeat = (
                    ""
                    if again is None
                    else f", again {rows[-1]['repeat_s']:5.2f} s ({again.problems[0].evaluated} judged)"
                )
                print(
                    f"{strategy:12} {json.dumps(options):14} {problem_name:12} {tuned.status:14} "
                    f"variants {tuned.variants:3} rejected {tuned.rejected:3} speedup "
                    f"{'-' if tuned.speedup is None else f'{tuned.speedup:.3f}':>6} tune {first_s:6.1f} s{repeat}",
                    flush=True,
                )
                write_results(rows, args.budget, problems, args.out, {})
    write_summary(rows, args.budget, problems, args.out)


def write_results(rows: list[dict], budget: int, problems: list[str], out: Path, summary: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"budget": budget, "problems": problems, "summary": summary, "rows": rows}, indent=2) + "\n"
    )


def write_summary(rows: list[dict], budget: int, problems: list[str], out: Path) -> None:
    """Geometric mean per strategy over every (problem, run), and the mean best-so-far curve; then the JSON."""
    by_strategy: dict[str, list[float]] = {}
    for row in rows:
        if row["speedup"] is not None:
            by_strategy.setdefault(row["strategy"], []).append(row["speedup"])
    summary_rows = {
        s: {"geomean_speedup": statistics.geometric_mean(v), "n": len(v)} for s, v in by_strategy.items() if v
    }
    for strategy, stats in summary_rows.items():
        timed = [r for r in rows if r["strategy"] == strategy and r["speedup"] is not None]
        curves = [r["best_so_far"] for r in timed if r["best_so_far"]]
        stats["best_so_far_geomean"] = {}
        for n in [4, 8, budget]:
            values = [c[min(n, len(c)) - 1] or 1.0 for c in curves]
            if values:
                stats["best_so_far_geomean"][str(n)] = statistics.geometric_mean(values)
        stats["tune_s"] = sum(r["tune_s"] for r in timed)
        stats["variants"] = sum(r["variants"] for r in timed)
        stats["rejected"] = sum(r["rejected"] for r in timed)
        marks = ", ".join(f"after {n}: {g:.3f}" for n, g in stats["best_so_far_geomean"].items())
        marks += f"; {stats['tune_s']:.0f} s tuning, {stats['rejected']}/{stats['variants']} variants rejected"
        mean = stats["geomean_speedup"]
        print(f"{strategy:12} geometric-mean speedup {mean:.3f} over {stats['n']} tunings ({marks})")
    if not summary_rows:
        print("no speedup measured (an untimed backend): strategies compared by what they explored only")
    write_results(rows, budget, problems, out, summary_rows)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
