"""What the reference keeper's isolation costs per evaluation, and what its shared reference work saves.

On a GPU the reference's outputs, gold and probes live in the GPU's reference keeper (another process and CUDA
context); each candidate's outputs are lent to it through CUDA IPC handouts and judged there (issue 26 item 5).
That costs, per evaluation: the handouts (`fill_handouts` for the trials and probes, `fill_handouts_timed` for the timed
calls: allocation in the keeper, IPC open and copy in the worker) and the judging in the keeper (`pool_compare`,
which the single-process worker did beside the candidate before; `keeper_work` is the keeper's own time over all
of a task's requests, `keeper_queue` the rest of their time: waiting for the keeper to finish other tasks'
requests).  The keeper also builds a problem's reference side once for all its candidates (`reference_cached`),
which the single-process worker redid per candidate.

Every bundled suite solution, then every one again with `--repeats` more copies (the copies reuse the keeper's
records: an RL batch's samples of one problem), through one `Evaluator.evaluate_many` with the cache off.  Printed:
per evaluation the median and total of each phase, the isolation share of the worker's time, and the reference
work the copies did not redo.  Writes JSON (default benchmarks/results/isolation_cost.json).

    python benchmarks/isolation_cost.py [--repeats 2] [--size gpu] [--limit N]

GPU backends only (`triton-cuda`): the CPU backend forks the candidate instead and has no keeper.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import print_table

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import suite_problems
from tritongym.core.registry import Registry

ISOLATION = ("fill_handouts", "fill_handouts_timed", "pool_compare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", help="a GPU backend (the one with a keeper)")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"])
    parser.add_argument("--repeats", type=int, default=2, help="more copies of every solution after the first")
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    parser.add_argument("--out", default="benchmarks/results/isolation_cost.json")
    args = parser.parse_args()

    problems = suite_problems(args.size)[: args.limit]
    # each copy a distinct kernel (a module constant apart: comments are normalised out of a kernel's identity):
    # `evaluate_many` runs one kernel once per batch and copies its result, which would hide both the copies' cost
    # and the keeper's reuse of the reference side
    pairs = [(Candidate(source=f"{p.solution}\nCOPY = {k}\n"), p) for p in problems for k in range(1 + args.repeats)]
    config = EvalConfig(backend=args.backend, size=args.size, use_cache=False)
    with tempfile.TemporaryDirectory() as tmp:
        evaluator = Evaluator(config, registry=Registry(Path(tmp) / "registry.db"), host=PluginHost())
        started = time.perf_counter()
        done: list = []

        def progress(result) -> None:  # a line per evaluation, so a call cut off by its limit still shows costs
            done.append(result)
            shown = {k: round(result.phases.get(k, 0.0), 3) for k in ISOLATION + ("reference",)}
            shown["reference_cached"] = result.flags.get("reference_cached", False)
            print(f"[{len(done)}/{len(pairs)}] {result.problem_id} {result.status.value} {shown}", flush=True)

        try:
            results = evaluator.evaluate_many(pairs, on_result=progress)
        finally:
            evaluator.close()
        wall_s = time.perf_counter() - started
    rows, summary = [], {}
    shown = ISOLATION + ("keeper_work", "keeper_queue", "gpu_lock_wait", "reference", "candidate", "time_candidate")
    for phase in shown:
        values = [r.phases.get(phase, 0.0) for r in results]
        summary[phase] = {"median_s": statistics.median(values), "total_s": sum(values)}
        rows.append([phase, f"{statistics.median(values) * 1000:.1f}", f"{sum(values):.2f}"])
    isolation = [sum(r.phases.get(k, 0.0) for k in ISOLATION) for r in results]
    cached = [r for r in results if r.flags.get("reference_cached") is True]
    built = [r.phases.get("reference", 0.0) for r in results if r.flags.get("reference_cached") is False]
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    report = {
        "evaluations": len(results),
        "wall_s": round(wall_s, 2),
        "statuses": statuses,
        "phases": summary,
        "isolation_per_evaluation_ms": {
            "median": round(statistics.median(isolation) * 1000, 2),
            "mean": round(statistics.fmean(isolation) * 1000, 2),
            "max": round(max(isolation) * 1000, 2),
        },
        "reference_built": len(built),
        "reference_reused": len(cached),
        "reference_build_s_median": round(statistics.median(built), 4) if built else None,
        "reference_saved_s": round(len(cached) * (statistics.median(built) if built else 0.0), 2),
        "peak_mb": {r.problem_id: r.memory_mb.get("reference_peak_mb") for r in results},
        "backend": args.backend,
        "size": args.size,
        "repeats": args.repeats,
        "device": results[0].device_class if results else None,
    }
    print_table("the keeper's isolation, per evaluation", ["phase", "median ms / eval", "total s"], rows)
    print(
        f"{len(results)} evaluations in {wall_s:.1f} s ({statuses}); isolation per evaluation: median "
        f"{report['isolation_per_evaluation_ms']['median']} ms, max {report['isolation_per_evaluation_ms']['max']} ms; "
        f"reference side built {len(built)}x (median {report['reference_build_s_median']} s), reused {len(cached)}x"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
