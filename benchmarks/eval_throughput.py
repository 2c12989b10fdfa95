"""Evaluation throughput: candidates judged per minute by tritongym against a KernelBench-style harness.

One run, one device, three ways of judging the same candidate set (`candidate_set.py`: shipped solutions
plus slowed, wrong, crashing and unparseable variants, 8 per problem, 64 by default):

(a) tritongym, registry cache off: one `Evaluator.evaluate_many` over the distinct candidates;
(b) tritongym, registry cache on: every candidate 4 times, shuffled, into a fresh registry, in batches of 64
    (one `evaluate_many` per batch, like RL steps; a duplicate inside one batch may still run twice, since
    lookups happen before the batch runs);
(c) the baseline harness (`baseline_harness.py`): two fresh processes per candidate, one at a time.

Wall time is measured around the `evaluate_many` calls (Evaluator construction is reported apart, as
setup) and around the baseline's task loop; imports are excluded.  Reported: candidates per minute for
each ((b) counts duplicates), the ratios (a)/(c) and (b)/(c), status counts, and how often (a) and (c)
reach the same ok / not-ok verdict.  The baseline stops starting tasks when the run's time budget is
spent, over a prefix that mixes problems and variants evenly, and reports its rate over what it ran.
Prints a table and writes JSON (default benchmarks/results/eval_throughput.json).

    python benchmarks/eval_throughput.py [--backend triton-cuda] [--size gpu] [--problems 8]
    TRITON_INTERPRET=1 python benchmarks/eval_throughput.py --backend triton-cpu --size cpu --limit 8 \\
        --baseline-device cpu --baseline-trials 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import fmt, print_table
from baseline_harness import run_baseline
from candidate_set import CORRECT_VARIANTS, build_candidate_set, duplicated, interleaved

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate, EvaluationResult
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

PROGRESS_EVERY = 16
MIN_BASELINE_S = 120.0  # the baseline always gets this long, however long (a) and (b) took


def run_tritongym(
    label: str, cands: list[tuple[str, str, str]], config: EvalConfig, db: Path, plugins: list[str], batch: int | None
) -> dict:
    """Evaluate `cands` in batches (None: one batch) with a fresh Evaluator and registry; summary + results."""
    problems = {name: load_problem(name, config.size) for name in dict.fromkeys(c[0] for c in cands)}
    started = time.perf_counter()
    evaluator = Evaluator(
        config, registry=Registry(db), host=PluginHost(extra_plugins=plugins, load_entry_points=False)
    )
    setup_s = time.perf_counter() - started
    print(f"({label}) {evaluator.backend_name} on {evaluator.device}, setup {setup_s:.1f} s", flush=True)
    done: list[EvaluationResult] = []
    clock = time.perf_counter()

    def progress(result: EvaluationResult) -> None:
        done.append(result)
        if len(done) % PROGRESS_EVERY == 0 or len(done) == len(cands):
            counts = Counter(r.status.value for r in done)
            print(
                f"({label}) {len(done)}/{len(cands)} in {time.perf_counter() - clock:.1f} s: {dict(counts)}",
                flush=True,
            )

    results: list[EvaluationResult] = []
    wall_s = 0.0
    size = batch or len(cands)
    try:
        for i in range(0, len(cands), size):
            pairs = [(Candidate(source=src), problems[name]) for name, _, src in cands[i : i + size]]
            started = time.perf_counter()
            results += evaluator.evaluate_many(pairs, on_result=progress)
            wall_s += time.perf_counter() - started
    finally:
        lock_fn = getattr(evaluator.backend, "lock_seconds", None)
        lock_s = lock_fn() if lock_fn else {}  # before close: how the GPU lock's time split
        evaluator.close()
    if lock_s:
        print(f"({label}) GPU lock seconds: {lock_s}", flush=True)
    statuses = Counter(r.status.value for r in results)
    phases: Counter = Counter()  # seconds
    counts: Counter = Counter()  # events, and how many evaluations each flag was set for
    for r in results:
        if not r.cached:
            phases.update(r.phases)
            counts.update(r.counts)
            counts.update({name: 1 for name, flag in r.flags.items() if flag})
    return {
        "summary": {
            "candidates": len(results),
            "wall_s": wall_s,
            "setup_s": setup_s,
            "per_min": len(results) / wall_s * 60 if wall_s else None,
            "per_min_with_setup": len(results) / (wall_s + setup_s) * 60,
            "statuses": dict(statuses),
            "cached": sum(r.cached for r in results),
            "worker_evaluations": sum(not r.cached for r in results),
            "phases_s": {k: round(v, 2) for k, v in phases.most_common()},  # summed over worker evaluations
            "counts": dict(counts.most_common()),  # counts summed, flags as how many evaluations had them
            "gpu_lock_s": lock_s,
            "backend": evaluator.backend_name,
            "device": evaluator.device,
            "config": config.model_dump(),
        },
        "results": results,
    }


def _expected(variant: str, ok: bool) -> bool:
    return ok == (variant in CORRECT_VARIANTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", help="tritongym backend for (a) and (b)")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"], help="problem size preset")
    parser.add_argument("--problems", type=int, default=8, help="problems in the candidate set (8 variants each)")
    parser.add_argument("--limit", type=int, default=None, help="use only N candidates (mixed), for smoke tests")
    parser.add_argument("--times", type=int, default=4, help="copies of each candidate in (b)")
    parser.add_argument("--batch", type=int, default=64, help="candidates per evaluate_many call in (b)")
    parser.add_argument("--gpus", type=lambda s: [int(g) for g in s.split(",")], default=None, help="e.g. 0,1")
    parser.add_argument("--workers-per-gpu", type=int, default=None, help="backend option, if the backend has it")
    parser.add_argument("--workers", type=int, default=None, help="EvalConfig.workers (parallel sandboxes)")
    parser.add_argument("--plugin", action="append", default=[], help="extra plugin module or file")
    parser.add_argument("--skip-baseline", action="store_true", help="measure (a) and (b) only")
    parser.add_argument("--baseline-device", default="cuda", help="cuda, cuda:N, or cpu (smoke test)")
    parser.add_argument("--baseline-trials", type=int, default=100, help="timed calls per baseline measurement")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=450.0,
        help=f"seconds for the whole run: the baseline starts no task after it, but runs at least "
        f"{MIN_BASELINE_S:g} s (0 = no limit)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "eval_throughput.json")
    args = parser.parse_args()
    run_started = time.perf_counter()

    cands = interleaved(build_candidate_set(args.size, args.problems))[: args.limit]
    print(f"{len(cands)} candidates over {len(dict.fromkeys(c[0] for c in cands))} problems", flush=True)
    options: dict = {}
    if args.gpus is not None:
        options["gpus"] = args.gpus
    if args.workers_per_gpu is not None:
        options["workers_per_gpu"] = args.workers_per_gpu
    common = {"backend": args.backend, "size": args.size, "backend_options": options}
    if args.workers is not None:
        common["workers"] = args.workers

    with tempfile.TemporaryDirectory(prefix="eval-throughput-") as tmp:
        a = run_tritongym("a", cands, EvalConfig(**common, use_cache=False), Path(tmp) / "a.db", args.plugin, None)
        dup = duplicated(cands, times=args.times)
        b = run_tritongym("b", dup, EvalConfig(**common, use_cache=True), Path(tmp) / "b.db", args.plugin, args.batch)

    c_results: list[dict] = []
    c_summary: dict | None = None
    if not args.skip_baseline:
        budget = None
        if args.time_budget:
            budget = max(MIN_BASELINE_S, args.time_budget - (time.perf_counter() - run_started))
        print(f"(c) baseline on {args.baseline_device}, budget {fmt(budget)} s", flush=True)
        clock = time.perf_counter()

        def collect(i: int, r: dict) -> None:
            c_results.append(r)
            if (i + 1) % (PROGRESS_EVERY // 2) == 0 or i + 1 == len(cands):
                counts = Counter(x["status"] for x in c_results)
                print(f"(c) {i + 1}/{len(cands)} in {time.perf_counter() - clock:.1f} s: {dict(counts)}", flush=True)

        started = time.perf_counter()
        run_baseline(
            [(p, s) for p, _, s in cands],
            args.size,
            args.baseline_device,
            collect,
            trials=args.baseline_trials,
            budget_s=budget,
        )
        wall_s = time.perf_counter() - started
        c_summary = {
            "candidates": len(c_results),
            "of": len(cands),
            "wall_s": wall_s,
            "per_min": len(c_results) / wall_s * 60 if wall_s else None,
            "statuses": dict(Counter(r["status"] for r in c_results)),
            "device": args.baseline_device,
            "budget_s": budget,
        }

    a_res: list[EvaluationResult] = a["results"]
    rows = []
    for i, (name, variant, _) in enumerate(cands):
        ra = a_res[i]
        rc = c_results[i] if i < len(c_results) else None
        rows.append(
            {
                "problem": name,
                "variant": variant,
                "kernel_id": ra.kernel_id,
                "a_status": ra.status.value,
                "a_runtime_ms": ra.runtime_ms,
                "a_speedup": ra.speedup,
                "a_message": ra.message[:300],
                "c_status": rc["status"] if rc else None,
                "c_runtime_ms": rc["runtime_ms"] if rc else None,
                "c_ref_runtime_ms": rc["ref_runtime_ms"] if rc else None,
                "c_speedup": rc["speedup"] if rc else None,
                "c_wall_s": rc["wall_s"] if rc else None,
                "c_message": rc["message"][:300] if rc else None,
            }
        )
    compared = [r for r in rows if r["c_status"] is not None]
    same = [r for r in compared if (r["a_status"] == "ok") == (r["c_status"] == "ok")]
    agreement = {
        "compared": len(compared),
        "same_verdict": len(same),
        "disagreements": [
            {k: r[k] for k in ("problem", "variant", "a_status", "c_status", "a_message", "c_message")}
            for r in compared
            if r not in same
        ],
        "a_as_designed": sum(_expected(r["variant"], r["a_status"] == "ok") for r in rows),
        "c_as_designed": sum(_expected(r["variant"], r["c_status"] == "ok") for r in compared),
    }
    kernel_of = {src: i for i, (_, _, src) in enumerate(cands)}
    copies: dict[int, set[str]] = {}
    for (_, _, src), r in zip(dup, b["results"]):
        copies.setdefault(kernel_of[src], set()).add("ok" if r.status.value == "ok" else "not ok")
    b["summary"]["inconsistent_candidates"] = sum(len(v) > 1 for v in copies.values())

    a_rate, b_rate = a["summary"]["per_min"], b["summary"]["per_min"]
    c_rate = c_summary["per_min"] if c_summary else None
    ratios = {
        "a_over_c": a_rate / c_rate if a_rate and c_rate else None,
        "b_over_c": b_rate / c_rate if b_rate and c_rate else None,
    }
    fingerprints = [r.fingerprint for r in a_res if r.fingerprint and r.fingerprint.device_name]
    device_name = (fingerprints[0].device_name if fingerprints else "") or next(
        (r["device_name"] for r in c_results if r.get("device_name")), ""
    )

    def status_text(counts: dict) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))

    table = [
        [
            "(a) tritongym, no cache",
            a["summary"]["candidates"],
            fmt(a["summary"]["wall_s"]),
            fmt(a_rate),
            fmt(ratios["a_over_c"]),
            status_text(a["summary"]["statuses"]),
        ],
        [
            f"(b) tritongym, cache, x{args.times}",
            b["summary"]["candidates"],
            fmt(b["summary"]["wall_s"]),
            fmt(b_rate),
            fmt(ratios["b_over_c"]),
            status_text(b["summary"]["statuses"]) + f" ({b['summary']['cached']} cached)",
        ],
    ]
    if c_summary:
        table.append(
            [
                "(c) baseline harness",
                f"{c_summary['candidates']}/{c_summary['of']}",
                fmt(c_summary["wall_s"]),
                fmt(c_rate),
                "1",
                status_text(c_summary["statuses"]),
            ]
        )
    print_table(
        f"evaluation throughput on {device_name or platform.node()}",
        ["", "candidates", "wall s", "per min", "x baseline", "statuses"],
        table,
    )
    print(
        f"setup (Evaluator construction): (a) {a['summary']['setup_s']:.1f} s, (b) {b['summary']['setup_s']:.1f} s; "
        f"verdicts as designed: (a) {agreement['a_as_designed']}/{len(rows)}"
        + (f", (c) {agreement['c_as_designed']}/{len(compared)}" if compared else "")
    )
    top = ", ".join(f"{k} {v:.0f}" for k, v in list(a["summary"]["phases_s"].items())[:8])
    print(f"(a) seconds per stage, summed over workers: {top}")
    if compared:
        print(f"same ok/not-ok verdict in (a) and (c): {agreement['same_verdict']}/{agreement['compared']}")
        for d in agreement["disagreements"]:
            print(f"  differs: {d['problem']}/{d['variant']}: (a) {d['a_status']}, (c) {d['c_status']}")
    if b["summary"]["inconsistent_candidates"]:
        print(f"(b) copies of {b['summary']['inconsistent_candidates']} candidate(s) got different verdicts")

    report = {
        "device_name": device_name,
        "host": platform.node(),
        "settings": {**vars(args), "out": str(args.out), "cpu_count": os.cpu_count()},
        "a": a["summary"],
        "b": b["summary"],
        "c": c_summary,
        "ratios": ratios,
        "agreement": agreement,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out} ({time.perf_counter() - run_started:.0f} s in all)")


if __name__ == "__main__":
    main()
