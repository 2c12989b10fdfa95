"""Eager against torch.compile baselines: every bundled solution's speedup over both, and what the second
baseline costs.

Three passes over the suite's solutions on `triton-cuda`, in one run on one GPU:

1. `compile_reference` off, fresh registry: the eager baseline alone (what every evaluation paid before);
2. `compile_reference` on, fresh registry: each problem's reference is compiled by Inductor and timed once;
3. `compile_reference` on, the registry of pass 2 (verdict cache off): the compiled timing is cached, so
   nothing is compiled again: the steady-state cost of the option.

Prints one table per problem (candidate, eager and compiled reference runtimes, both speedups, the seconds
spent compiling and timing the compiled reference), the pass wall times, geometric-mean speedups and
Fast@1 against both baselines; writes JSON (default benchmarks/results/compile_baselines.json).

    python benchmarks/compile_baselines.py [PROBLEM ...] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

from _common import fmt, print_table

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem, suite_problems
from tritongym.core.registry import Registry


def one_pass(problems, registry: Registry, compile_reference: bool) -> tuple[list, float]:
    config = EvalConfig(backend="triton-cuda", size="gpu", use_cache=False, compile_reference=compile_reference)
    began = time.perf_counter()
    with Evaluator(config, registry, PluginHost(load_entry_points=False)) as evaluator:
        results = evaluator.evaluate_many([(p.solution, p) for p in problems])
    return results, time.perf_counter() - began


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="suite problems (default: all)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "compile_baselines.json")
    args = parser.parse_args()
    problems = [load_problem(n, "gpu") for n in args.problems] if args.problems else suite_problems("gpu")

    with tempfile.TemporaryDirectory() as tmp:
        eager_only, eager_s = one_pass(problems, Registry(Path(tmp) / "eager.db"), compile_reference=False)
        both_registry = Registry(Path(tmp) / "both.db")
        first, first_s = one_pass(problems, both_registry, compile_reference=True)
        cached, cached_s = one_pass(problems, both_registry, compile_reference=True)

    rows = []
    for r, again in zip(first, cached):
        rows.append(
            {
                "problem": r.problem_id,
                "status": r.status.value,
                "runtime_ms": r.runtime_ms,
                "ref_runtime_ms": r.ref_runtime_ms,
                "compile_ref_runtime_ms": r.compile_ref_runtime_ms,
                "speedup": r.speedup,
                "compile_speedup": r.compile_speedup,
                "compile_s": r.phases.get("compile_reference"),
                "time_compile_s": r.phases.get("time_compile_reference"),
                "cached_source": again.timing.compile_reference_source if again.timing else None,
                "notes": [n for n in (r.timing.notes if r.timing else []) if "compile" in n],
            }
        )
    print_table(
        "bundled solutions against both baselines (pass 2)",
        ["problem", "status", "ms", "eager ms", "compiled ms", "speedup", "vs compile", "compile s", "pass 3"],
        [
            [
                x["problem"],
                x["status"],
                fmt(x["runtime_ms"], 4),
                fmt(x["ref_runtime_ms"], 4),
                fmt(x["compile_ref_runtime_ms"], 4),
                fmt(x["speedup"]),
                fmt(x["compile_speedup"]),
                fmt(x["compile_s"]),
                x["cached_source"] or "-",
            ]
            for x in rows
        ],
    )
    eager_speedups = [x["speedup"] for x in rows if x["speedup"]]
    compiled_speedups = [x["compile_speedup"] for x in rows if x["compile_speedup"]]
    summary = {
        "problems": len(rows),
        "eager_only_s": eager_s,
        "compile_first_s": first_s,
        "compile_cached_s": cached_s,
        "compiled_references": len(compiled_speedups),
        "all_ok": all(r.status.value == "ok" for r in [*eager_only, *first, *cached]),
        "geomean_speedup": geomean(eager_speedups),
        "geomean_compile_speedup": geomean(compiled_speedups),
        "fast_1_eager": sum(s >= 1 for s in eager_speedups) / len(rows),
        "fast_1_compile": sum(s >= 1 for s in compiled_speedups) / len(rows),
        "all_cached_in_pass_3": all(x["cached_source"] == "cached" for x in rows if x["compile_speedup"]),
    }
    print_table(
        "passes (wall seconds)",
        ["pass", "seconds"],
        [
            ["1: eager only", fmt(eager_s)],
            ["2: + compile (compiles)", fmt(first_s)],
            ["3: + compile (cached)", fmt(cached_s)],
        ],
    )
    print(
        f"geomean speedup {fmt(summary['geomean_speedup'])} over eager, {fmt(summary['geomean_compile_speedup'])} "
        f"over torch.compile; Fast@1 {summary['fast_1_eager']:.0%} vs {summary['fast_1_compile']:.0%}; "
        f"{summary['compiled_references']}/{len(rows)} references compiled; all ok: {summary['all_ok']}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "problems": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
