"""What multi-shape correctness (`EvalConfig.shapes`) costs per candidate: the same candidates, shapes on and off.

For each bundled problem its shipped solution is evaluated twice in one process, once with `shapes="off"`
(the main shape, as before issue 18) and once with `shapes="auto"` (the problem's EXTRA_SIZES too: one more
trial per shape set, with a fresh `ModelNew` each), alternating which goes first.  No registry, no cache; one
evaluation at a time (`workers=1`), so the two columns are comparable.  The late trial and the degeneracy
screen are on in both columns (they are not what `shapes` switches); the screen's one-time cost per problem
(a worker of its own, before either evaluation, then held) is reported beside.  Prints a table and writes JSON
(default benchmarks/results/augmentation_cost-<backend>.json).

    python benchmarks/augmentation_cost.py                       # triton-cpu, cpu sizes
    python benchmarks/augmentation_cost.py --backend triton-cuda # gpu sizes, on a GPU
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.eval.screen import cached_screens
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import suite_names, suite_problem


def evaluator(backend: str, size: str, shapes: str, trials: int) -> Evaluator:
    config = EvalConfig(backend=backend, size=size, trials=trials, shapes=shapes, workers=1, use_cache=False)
    return Evaluator(config, registry=None, host=PluginHost(load_entry_points=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cpu", choices=["triton-cpu", "triton-cuda"])
    parser.add_argument("--problems", nargs="*", default=None, help="suite problem names (default: all)")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    size = "gpu" if args.backend == "triton-cuda" else "cpu"
    out = args.out or Path(__file__).parent / "results" / f"augmentation_cost-{args.backend}.json"

    problems = [suite_problem(name, size) for name in (args.problems or suite_names())]
    off, on = evaluator(args.backend, size, "off", args.trials), evaluator(args.backend, size, "auto", args.trials)
    rows = []
    try:
        screen_s = {}
        for problem in problems:  # one worker each, once per problem; held for both evaluators afterwards
            start = time.perf_counter()
            cached_screens([problem], on.backend, on.device, on.device_class, on.limits, on.tolerances)
            screen_s[problem.name] = time.perf_counter() - start
        warm = problems[0]
        for ev in (off, on):  # start the backend (the GPU pool's warm workers) before anything is measured
            ev.evaluate(Candidate(source=warm.solution or ""), warm)
        for i, problem in enumerate(problems):
            assert problem.solution is not None, problem.name
            measured = {}
            for mode, ev in (("off", off), ("on", on)) if i % 2 == 0 else (("on", on), ("off", off)):
                start = time.perf_counter()
                result = ev.evaluate(Candidate(source=problem.solution), problem)
                measured[mode] = (time.perf_counter() - start, result)
            (off_s, off_result), (on_s, on_result) = measured["off"], measured["on"]
            rows.append(
                {
                    "problem": problem.name,
                    "shape_sets": len(problem.extra_sizes),
                    "status_off": off_result.status.value,
                    "status_on": on_result.status.value,
                    "off_s": round(off_s, 4),
                    "on_s": round(on_s, 4),
                    "extra_s": round(on_s - off_s, 4),
                    "ratio": round(on_s / off_s, 3) if off_s else None,
                    "screen_s": round(screen_s[problem.name], 4),
                    "message_on": on_result.message[:200],
                }
            )
            print(
                f"{problem.name:24} sets {len(problem.extra_sizes)}  off {off_s:7.3f} s  on {on_s:7.3f} s  "
                f"+{on_s - off_s:6.3f} s  x{on_s / off_s:5.2f}  screen {screen_s[problem.name]:6.3f} s  "
                f"{off_result.status.value}/{on_result.status.value}",
                flush=True,
            )
    finally:
        off.close()
        on.close()

    extra = [r["extra_s"] for r in rows]
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    summary = {
        "candidates": len(rows),
        "median_off_s": statistics.median(r["off_s"] for r in rows),
        "median_on_s": statistics.median(r["on_s"] for r in rows),
        "median_extra_s": statistics.median(extra),
        "mean_extra_s": statistics.mean(extra),
        "median_ratio": statistics.median(ratios),
        "median_screen_s": statistics.median(r["screen_s"] for r in rows),
        "all_ok": all(r["status_off"] == r["status_on"] == "ok" for r in rows),
    }
    print()
    print(f"{'':24} {'off (s)':>9} {'on (s)':>9} {'extra (s)':>10} {'ratio':>7}")
    print(
        f"{'median per candidate':24} {summary['median_off_s']:9.3f} {summary['median_on_s']:9.3f} "
        f"{summary['median_extra_s']:10.3f} {summary['median_ratio']:7.2f}"
    )
    print(f"screen, once per problem (median): {summary['median_screen_s']:.3f} s; all ok: {summary['all_ok']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "backend": args.backend,
                "size": size,
                "trials": args.trials,
                "device": on.device_class,
                "host": platform.node(),
                "summary": summary,
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
