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
        [--budget 16] [--seeds 3] [--backend auto] [--out PATH]
    python benchmarks/tune_strategies.py --plugin benchmarks/strategies/surrogate.py \
        --strategy exhaustive --strategy random --strategy surrogate
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from tritongym.core import api
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
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the random strategy (one run each)")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--plugin", action="append", default=[], help="plugin module or .py file (repeatable)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "tune_strategies.json")
    args = parser.parse_args()
    problems = args.problems or DEFAULT_PROBLEMS
    runs = []
    for name in args.strategy or ["exhaustive", "random"]:
        seeds = range(args.seeds) if name == "random" else [None]
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
                started = time.perf_counter()
                summary = api.tune(
                    file=kernel,
                    problem=problem_name,
                    strategy=strategy,
                    strategy_options=options,
                    budget=args.budget,
                    config=config,
                    registry=db,
                    extra_plugins=args.plugin,
                )
                first_s = time.perf_counter() - started
                started = time.perf_counter()
                again = api.tune(
                    file=kernel,
                    problem=problem_name,
                    strategy=strategy,
                    strategy_options=options,
                    budget=args.budget,
                    config=config,
                    registry=db,
                    extra_plugins=args.plugin,
                )
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
                        "repeat_evaluated": again.problems[0].evaluated,
                        "repeat_s": time.perf_counter() - started,
                        "records": records,
                    }
                )
                print(
                    f"{strategy:12} {json.dumps(options):14} {problem_name:12} {tuned.status:14} "
                    f"variants {tuned.variants:3} rejected {tuned.rejected:3} speedup "
                    f"{'-' if tuned.speedup is None else f'{tuned.speedup:.3f}':>6} "
                    f"tune {first_s:6.1f} s, again {rows[-1]['repeat_s']:5.2f} s "
                    f"({rows[-1]['repeat_evaluated']} judged)",
                    flush=True,
                )
    by_strategy: dict[str, list[float]] = {}
    for row in rows:
        if row["speedup"] is not None:
            by_strategy.setdefault(row["strategy"], []).append(row["speedup"])
    summary_rows = {
        s: {"geomean_speedup": statistics.geometric_mean(v), "n": len(v)} for s, v in by_strategy.items() if v
    }
    for strategy, stats in summary_rows.items():
        print(f"{strategy}: geometric-mean speedup {stats['geomean_speedup']:.3f} over {stats['n']} tunings")
    if not summary_rows:
        print("no speedup measured (an untimed backend): strategies compared by what they explored only")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"budget": args.budget, "problems": problems, "summary": summary_rows, "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
