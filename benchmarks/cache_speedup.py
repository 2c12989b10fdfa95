"""Registry cache: the first evaluation of a kernel against a repeat of it, reformatted.

For each bundled problem, its solution is evaluated into a fresh registry (a sandboxed worker each), then
a copy with different whitespace and comments is evaluated again: the kernel id is the same, so the
registry answers without starting a worker.  Prints a table and writes JSON (default
benchmarks/results/cache_speedup.json).

    python benchmarks/cache_speedup.py [--problems N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import suite_problems
from tritongym.core.registry import Registry


def reformat(source: str) -> str:
    """Same code, different text: a header comment, doubled indentation, extra blank lines."""
    body = "\n\n".join(line.replace("    ", "        ") for line in source.splitlines())
    return "# reformatted copy\n" + body + "\n\n# end\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=8, help="how many suite problems")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cache_speedup.json")
    args = parser.parse_args()

    problems = suite_problems("cpu")[: args.problems]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(Path(tmp) / "registry.db")
        evaluator = Evaluator(
            EvalConfig(backend="triton-cpu", trials=5), registry=registry, host=PluginHost(load_entry_points=False)
        )
        for problem in problems:
            assert problem.solution is not None
            start = time.perf_counter()
            first = evaluator.evaluate(Candidate(source=problem.solution), problem)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            again = evaluator.evaluate(Candidate(source=reformat(problem.solution)), problem)
            warm = time.perf_counter() - start
            rows.append(
                {
                    "problem": problem.name,
                    "status": first.status.value,
                    "cold_s": cold,
                    "warm_s": warm,
                    "cached": again.cached,
                    "same_kernel_id": again.kernel_id == first.kernel_id,
                    "speedup": cold / warm,
                }
            )

    print(f"{'problem':24} {'status':8} {'first (s)':>10} {'repeat (ms)':>12} {'cached':>7} {'x faster':>10}")
    for r in rows:
        print(
            f"{r['problem']:24} {r['status']:8} {r['cold_s']:10.2f} {r['warm_s'] * 1e3:12.2f} "
            f"{str(r['cached']):>7} {r['speedup']:10.0f}"
        )
    summary = {
        "median_speedup": statistics.median(r["speedup"] for r in rows),
        "min_speedup": min(r["speedup"] for r in rows),
        "all_cached": all(r["cached"] and r["same_kernel_id"] for r in rows),
    }
    print(
        f"median {summary['median_speedup']:.0f}x, min {summary['min_speedup']:.0f}x, "
        f"all cached: {summary['all_cached']}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
