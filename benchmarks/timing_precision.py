"""Timing precision: how repeatable tritongym's runtimes and speedups are, and how they compare with do_bench.

For each problem (default: eight suite problems whose solutions run for tens of µs to milliseconds at
the `gpu` size), its shipped solution is evaluated `--runs` times as separate tasks (`use_cache=False`),
all in one Evaluator, in rounds over the problems so drift is shared: one `evaluate_many` per round
(tasks overlap on the GPU as in an RL batch; the backend times one at a time), or with `--sequential`
one `evaluate` call per task.  Each run should time the reference afresh, or the speedup's spread is
just the runtime's: so there is no registry unless `--registry` (it caches reference timings), and the
backend's workers, which remember them too, are restarted between rounds unless `--keep-workers`.
Per kernel: the coefficient of variation (stdev / mean) of `speedup` and of `runtime_ms`; over kernels,
the median and the worst.

Then, in this (trusted) process, the same solution and the reference are built from source at the same
sizes on the GPU (the size preset applied to the problem's globals, matching weights bound into
`ModelNew`, tritongym's precision setting), and timed with
`triton.testing.do_bench(lambda: model(*inputs), return_mode="median")` (warmup=25, rep=100): the
median `runtime_ms` of tritongym over do_bench's, and whether it is within 5% for kernels above 0.05 ms
(shorter ones are reported, not judged: do_bench times each call eagerly, launch overhead included).
Prints a table and writes JSON (default benchmarks/results/timing_precision.json).

    python benchmarks/timing_precision.py [--runs 5] [--problems matmul,softmax,...] [--backend triton-cuda]
    TRITON_INTERPRET=1 python benchmarks/timing_precision.py --backend triton-cpu --size cpu --runs 2 \\
        --problems softmax,rms_norm
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from _common import (
    bind_weights,
    build_model,
    fmt,
    load_module,
    load_reference,
    make_inputs,
    median_ms,
    print_table,
    set_precision,
)

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate, EvaluationResult, Problem
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

DEFAULT_PROBLEMS = "matmul,batched_matmul,conv2d,attention,mlp,rms_norm,softmax,layer_norm"
JUDGED_ABOVE_MS = 0.05
WITHIN = 0.05


def cv(values: list[float]) -> float | None:
    """Coefficient of variation (sample stdev / mean); None with fewer than two values."""
    if len(values) < 2 or statistics.mean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.mean(values)


def evaluate_runs(
    evaluator: Evaluator,
    problems: list[Problem],
    runs: int,
    sequential: bool,
    fresh_workers: bool,
    budget_s: float | None,
) -> dict[str, list[EvaluationResult]]:
    """`runs` separate evaluations of each problem's solution, in rounds over the problems (so drift is
    shared): one `evaluate_many` per round, or with `sequential` one `evaluate` call per task.

    With `fresh_workers` the backend's workers are closed between rounds: a GPU pool remembers the
    reference timings it measured, and a fresh one times the reference in full again.  A round that would
    end past `budget_s` (judged by the mean round so far) is not started, once two rounds are done.
    """
    out: dict[str, list[EvaluationResult]] = {p.name: [] for p in problems}
    started = time.perf_counter()

    def report(run: int, problem: Problem, result: EvaluationResult) -> None:
        out[problem.name].append(result)
        elapsed = time.perf_counter() - started
        print(
            f"[run {run + 1}/{runs}] {problem.name}: {result.status.value}, runtime {fmt(result.runtime_ms)} ms, "
            f"speedup {fmt(result.speedup)} ({result.duration_s:.1f} s; {elapsed:.0f} s in all)",
            flush=True,
        )

    for run in range(runs):
        elapsed = time.perf_counter() - started
        if budget_s is not None and run >= 2 and elapsed + elapsed / run > budget_s:
            print(f"time budget of {budget_s:g} s: stopping after {run} runs", flush=True)
            break
        if run and fresh_workers:
            evaluator.close()
        pairs = [(Candidate(source=p.solution or "", origin=f"solution:{p.name}"), p) for p in problems]
        if sequential:
            for candidate, problem in pairs:
                report(run, problem, evaluator.evaluate(candidate, problem))
        else:
            for (_, problem), result in zip(pairs, evaluator.evaluate_many(pairs)):
                report(run, problem, result)
    return out


def bench_in_process(problem: Problem, device: str, workdir: str) -> dict:
    """do_bench medians of the solution's ModelNew and of the reference Model, built here from source."""
    assert problem.solution is not None
    tag = problem.name.replace("/", "_")
    reference = load_reference(problem.source, problem.sizes, workdir, name=f"ref_{tag}")
    candidate = load_module(f"solution_{tag}", problem.solution, workdir)
    ref_model = build_model(reference, reference.Model, device)
    model = build_model(reference, candidate.ModelNew, device, seed=43)  # bound below, not seeded alike
    bound = bind_weights(ref_model, model)
    inputs = make_inputs(reference, 0, device)
    with torch.no_grad():
        candidate_ms = median_ms(lambda: model(*inputs), device)
        reference_ms = median_ms(lambda: ref_model(*inputs), device)
    return {"do_bench_ms": candidate_ms, "ref_do_bench_ms": reference_ms, "bound_weights": bound}


def summarise(name: str, results: list[EvaluationResult], bench: dict) -> dict:
    ok = [r for r in results if r.status.value == "ok"]
    runtimes = [r.runtime_ms for r in ok if r.runtime_ms]
    speedups = [r.speedup for r in ok if r.speedup]
    refs = [r.ref_runtime_ms for r in ok if r.ref_runtime_ms]
    median_runtime = statistics.median(runtimes) if runtimes else None
    median_ref = statistics.median(refs) if refs else None
    do_bench_ms, ref_do_bench_ms = bench["do_bench_ms"], bench["ref_do_bench_ms"]
    ratio = median_runtime / do_bench_ms if median_runtime and do_bench_ms else None
    judged = ratio is not None and do_bench_ms > JUDGED_ABOVE_MS
    timings = [r.timing for r in ok]
    modes = Counter(f"{t.candidate.mode}/{t.candidate.l2}" for t in timings if t is not None and t.candidate)
    sources = Counter(t.reference_source for t in timings if t is not None and t.reference is not None)
    return {
        "problem": name,
        "statuses": dict(Counter(r.status.value for r in results)),
        "runs_ok": len(ok),
        "runtime_ms": runtimes,
        "ref_runtime_ms": refs,
        "speedup": speedups,
        "median_runtime_ms": median_runtime,
        "median_ref_runtime_ms": median_ref,
        "median_speedup": statistics.median(speedups) if speedups else None,
        "cv_runtime": cv(runtimes),
        "cv_ref_runtime": cv(refs),
        "cv_speedup": cv(speedups),
        "do_bench_ms": do_bench_ms,
        "ref_do_bench_ms": ref_do_bench_ms,
        "ratio_to_do_bench": ratio,
        "ref_ratio_to_do_bench": median_ref / ref_do_bench_ms if median_ref and ref_do_bench_ms else None,
        "judged": judged,
        "within_5pct": abs(ratio - 1) <= WITHIN if judged and ratio is not None else None,
        "timing_modes": dict(modes),
        "reference_sources": dict(sources),
        "bound_weights": bench["bound_weights"],
        "messages": sorted({r.message[:200] for r in results if r.status.value != "ok"}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="evaluations of each solution")
    parser.add_argument("--problems", default=DEFAULT_PROBLEMS, help="comma-separated suite problems")
    parser.add_argument("--backend", default="triton-cuda")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"])
    parser.add_argument("--gpus", type=lambda s: [int(g) for g in s.split(",")], default=None, help="e.g. 0")
    parser.add_argument("--workers-per-gpu", type=int, default=None, help="backend option, if the backend has it")
    parser.add_argument(
        "--registry",
        action="store_true",
        help="evaluate into a fresh registry, which caches reference timings (default: none, so every run "
        "times the reference afresh and the speedup's spread includes the reference's)",
    )
    parser.add_argument(
        "--sequential", action="store_true", help="one evaluate call per task instead of one evaluate_many per round"
    )
    parser.add_argument(
        "--keep-workers",
        action="store_true",
        help="keep the backend's workers (and the reference timings they remember) across rounds",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=420.0,
        help="seconds of evaluation after which no further run starts (at least 2 run; 0 = no limit)",
    )
    parser.add_argument("--plugin", action="append", default=[], help="extra plugin module or file")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "timing_precision.json")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    run_started = time.perf_counter()

    problems = [load_problem(name.strip(), args.size) for name in args.problems.split(",") if name.strip()]
    missing = [p.name for p in problems if p.solution is None]
    if missing:
        parser.error(f"these problems ship no solution: {', '.join(missing)}")
    options: dict = {}
    if args.gpus is not None:
        options["gpus"] = args.gpus
    if args.workers_per_gpu is not None:
        options["workers_per_gpu"] = args.workers_per_gpu
    config = EvalConfig(backend=args.backend, size=args.size, use_cache=False, backend_options=options)

    with tempfile.TemporaryDirectory(prefix="timing-precision-") as tmp:
        registry = Registry(Path(tmp) / "registry.db") if args.registry else None
        evaluator = Evaluator(
            config, registry=registry, host=PluginHost(extra_plugins=args.plugin, load_entry_points=False)
        )
        print(
            f"{evaluator.backend_name} on {evaluator.device}: {len(problems)} problems x {args.runs} runs", flush=True
        )
        try:
            results = evaluate_runs(
                evaluator, problems, args.runs, args.sequential, not args.keep_workers, args.time_budget or None
            )
        finally:
            evaluator.close()
        evaluated_s = time.perf_counter() - run_started

        device = "cpu" if evaluator.backend.device_type == "cpu" else "cuda"
        if device == "cpu":
            os.environ.setdefault("TRITON_INTERPRET", "1")  # the solutions' kernels run in Triton's interpreter
        set_precision(config.precision)
        benches = {}
        for problem in problems:
            benches[problem.name] = bench_in_process(problem, device, tmp)
            if device == "cuda":
                torch.cuda.empty_cache()  # the models of this problem are gone; give their memory back
            b = benches[problem.name]
            print(
                f"do_bench {problem.name}: {fmt(b['do_bench_ms'])} ms, ref {fmt(b['ref_do_bench_ms'])} ms", flush=True
            )

    rows = [summarise(p.name, results[p.name], benches[p.name]) for p in problems]
    cvs = [(r["cv_speedup"], r["problem"]) for r in rows if r["cv_speedup"] is not None]
    runtime_cvs = [r["cv_runtime"] for r in rows if r["cv_runtime"] is not None]
    judged = [r for r in rows if r["judged"]]
    device_name = next(
        (r.fingerprint.device_name for rs in results.values() for r in rs if r.fingerprint.device_name), ""
    )
    summary = {
        "median_cv_speedup": statistics.median(v for v, _ in cvs) if cvs else None,
        "worst_cv_speedup": max(cvs)[0] if cvs else None,
        "worst_cv_speedup_problem": max(cvs)[1] if cvs else None,
        "median_cv_runtime": statistics.median(runtime_cvs) if runtime_cvs else None,
        "judged_kernels": len(judged),
        "within_5pct": sum(bool(r["within_5pct"]) for r in judged),
        "all_within_5pct": bool(judged) and all(r["within_5pct"] for r in judged),
        "median_ratio_to_do_bench": statistics.median([r["ratio_to_do_bench"] for r in judged]) if judged else None,
        "runs": min(len(v) for v in results.values()),
        "evaluation_s": evaluated_s,
        "total_s": time.perf_counter() - run_started,
    }

    print_table(
        f"timing precision on {device_name or device}, {summary['runs']} runs per kernel",
        ["problem", "ok", "ms (median)", "CV ms", "speedup", "CV speedup", "do_bench ms", "ratio", "<5%", "ref ratio"],
        [
            [
                r["problem"],
                f"{r['runs_ok']}/{len(results[r['problem']])}",
                fmt(r["median_runtime_ms"]),
                fmt(r["cv_runtime"], 2),
                fmt(r["median_speedup"]),
                fmt(r["cv_speedup"], 2),
                fmt(r["do_bench_ms"]),
                fmt(r["ratio_to_do_bench"]),
                "-" if r["within_5pct"] is None else ("yes" if r["within_5pct"] else "NO"),
                fmt(r["ref_ratio_to_do_bench"]),
            ]
            for r in rows
        ],
    )
    print(
        f"speedup CV: median {fmt(summary['median_cv_speedup'], 2)}, worst {fmt(summary['worst_cv_speedup'], 2)} "
        f"({summary['worst_cv_speedup_problem']}); within 5% of do_bench: {summary['within_5pct']}/"
        f"{summary['judged_kernels']} kernels above {JUDGED_ABOVE_MS} ms"
    )
    for r in rows:
        for message in r["messages"]:
            print(f"  {r['problem']}: {message}")
    report = {
        "device_name": device_name,
        "settings": {**vars(args), "out": str(args.out), "config": config.model_dump()},
        "summary": summary,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out} ({summary['total_s']:.0f} s in all)")


if __name__ == "__main__":
    main()
