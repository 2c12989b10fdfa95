"""`tritongym tune` on the bundled solutions: speedup over the eager reference before and after tuning.

For each problem, one fresh registry and one `api.tune(file=<bundled solution>, problem=<name>)` on
triton-cuda (gpu sizes): the kernel as written is judged first, then up to `--budget` variants proposed by
`--strategy`, every one through the full pipeline (correctness trials, hack checks, paired timing).
Reported per problem: the parameters found, variants measured and rejected, the speedup over the eager
reference of the kernel as written and of the best variant, the best configuration, and the tuning wall
time.  Side by side, the baseline: the same kernel under Triton's own `@triton.autotune` over the same
configurations (every configuration tune measured correct, the kernel as written first;
`tritongym.core.tune.autotuned` writes that source), evaluated once through the same pipeline; its speedup,
the config Triton picked and Triton's autotuning time (`bench_time`, spent before timing) are reported.
Then the geometric means overall and on the GEMM-type problems.  A second `tune` of the first problem
checks that a repeated tune is answered from the registry (no new evaluation rows).
Prints a table and writes JSON (default benchmarks/results/tune.json).

    python benchmarks/tune.py [--problems matmul,softmax] [--budget 8] [--strategy exhaustive]
    python benchmarks/tune.py --merge part1.json part2.json --out tune.json   # one table from several runs
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import tempfile
import time
from pathlib import Path

from _common import fmt, print_table

import tritongym
from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.problems import suite_names
from tritongym.core.tune.autotuned import autotuned_source
from tritongym.core.tune.space import discover
from tritongym.core.tune.variant import VariantError

GEMM_TYPE = {
    "matmul",
    "matmul_rect",
    "matmul_fp16",
    "matmul_gelu",
    "batched_matmul",
    "linear_bias_relu",
    "linear_scale_residual",
    "gemm_sigmoid_rowsum",
    "mlp",
}
SOLUTIONS = Path(tritongym.__file__).parent / "problems" / "solutions"


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def reference_speedup(db: Path, kernel_id: str | None) -> float | None:
    """Speedup over the eager reference stored with the kernel's triton-cuda evaluation."""
    if kernel_id is None:
        return None
    registry = tritongym.Registry(db)
    try:
        row = next(
            registry.db.query(
                "SELECT speedup FROM evaluations WHERE kernel_id = ? AND backend = 'triton-cuda' ORDER BY id DESC",
                [kernel_id],
            ),
            None,
        )
    finally:
        registry.close()
    return row["speedup"] if row else None


def evaluation_rows(db: Path) -> int:
    registry = tritongym.Registry(db)
    try:
        return registry.db["evaluations"].count
    finally:
        registry.close()


def vars_of(args) -> dict:
    """The settings a result file records (what `--merge` reads back)."""
    return {
        "python": platform.python_version(),
        "backend": args.backend,
        "size": args.size,
        "strategy": args.strategy,
        "budget": args.budget,
    }


def triton_autotune(name: str, tuning, config: EvalConfig, db: Path, work: Path) -> dict:
    """The bundled solution under `@triton.autotune` over the configurations tune measured correct,
    evaluated once through the same pipeline (correctness, checks, paired timing) into the same registry."""
    configs = [r.config for r in tuning.records if r.status == "ok"]
    try:
        source = autotuned_source(discover((SOLUTIONS / f"{name}.py").read_text()), configs)
    except VariantError as exc:
        return {"error": f"not comparable: {exc}"}
    path = work / f"{name}_autotuned.py"
    path.write_text(source)
    started = time.perf_counter()
    result = api.evaluate(path, name, config, db)
    wall = time.perf_counter() - started
    return {
        "configs": len(configs),
        "status": str(result.status.value if hasattr(result.status, "value") else result.status),
        "message": result.message if result.status != "ok" else "",
        "speedup": result.speedup,
        "runtime_ms": result.runtime_ms,
        "picked": [c.config for c in result.autotune],
        "autotune_s": sum(c.autotune_s or 0.0 for c in result.autotune),
        "how": [c.how for c in result.autotune],
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default=None, help="comma separated (default: every bundled solution)")
    parser.add_argument("--budget", type=int, default=8, help="variants per problem besides the kernel as written")
    parser.add_argument("--strategy", default="exhaustive")
    parser.add_argument("--backend", default="triton-cuda")
    parser.add_argument("--size", default="gpu")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "tune.json")
    parser.add_argument("--merge", type=Path, nargs="+", help="print and write one table from these JSON results")
    args = parser.parse_args()
    if args.merge:
        parts = [json.loads(p.read_text()) for p in args.merge]
        first = parts[0]
        for key in ("budget", "strategy", "backend", "size"):
            setattr(args, key, first[key])
        args.python = next((part["python"] for part in parts if part.get("python")), None)
        records = [r for part in parts for r in part["problems"]]
        repeat = next((part["repeat"] for part in parts if part.get("repeat")), None)
        report(records, repeat, args)
        return
    names = (
        args.problems.split(",") if args.problems else [n for n in suite_names() if (SOLUTIONS / f"{n}.py").exists()]
    )
    config = EvalConfig(backend=args.backend, size=args.size)
    work = Path(tempfile.mkdtemp(prefix="tritongym-tune-bench-"))

    records = []
    for name in names:
        db = work / f"{name}.db"
        started = time.perf_counter()
        try:
            summary = api.tune(
                file=SOLUTIONS / f"{name}.py",
                problem=name,
                strategy=args.strategy,
                budget=args.budget,
                config=config,
                registry=db,
            )
        except Exception as exc:  # a benchmark reports a failure and goes on
            print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
            records.append({"problem": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        wall = time.perf_counter() - started
        tuning = summary.problems[0]
        before = reference_speedup(db, tuning.source_kernel_id)
        after = reference_speedup(db, tuning.best_kernel_id) if tuning.best_kernel_id else before
        baseline = triton_autotune(name, tuning, config, db, work)
        print(
            f"{name}: {tuning.status}, before {fmt(before)}, after {fmt(after)} ({wall:.0f} s); "
            f"@triton.autotune {fmt(baseline.get('speedup'))} {baseline.get('error', '')}",
            flush=True,
        )
        records.append(
            {
                "problem": name,
                "gemm_type": name in GEMM_TYPE,
                "status": tuning.status,
                "params": [p.model_dump() for p in tuning.params],
                "variants": tuning.variants,
                "rejected": tuning.rejected,
                "speedup_before": before,
                "speedup_after": after,
                "tuned_over_source": tuning.speedup,
                "source_runtime_ms": tuning.source_runtime_ms,
                "best_runtime_ms": tuning.best_runtime_ms,
                "best_config": tuning.best_config,
                "wall_s": wall,
                "device_class": tuning.device_class,
                "triton_autotune": baseline,
            }
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)  # a run cut off by a time limit keeps what it measured
        args.out.with_suffix(".partial.json").write_text(json.dumps({**vars_of(args), "problems": records}) + "\n")

    repeat = None
    if records and "error" not in records[0]:
        first = records[0]["problem"]
        db = work / f"{first}.db"
        rows_before = evaluation_rows(db)
        started = time.perf_counter()
        again = api.tune(
            file=SOLUTIONS / f"{first}.py",
            problem=first,
            strategy=args.strategy,
            budget=args.budget,
            config=config,
            registry=db,
        )
        repeat = {
            "problem": first,
            "new_evaluation_rows": evaluation_rows(db) - rows_before,
            "cached": again.problems[0].cached,
            "wall_s": time.perf_counter() - started,
        }

    report(records, repeat, args)


def report(records: list[dict], repeat: dict | None, args) -> None:
    """The table, the geometric means and the JSON, from the per-problem records (of one run or merged)."""
    ok = [r for r in records if "error" not in r]
    autotuned = [r for r in ok if r["triton_autotune"].get("speedup")]
    rows = []
    for r in ok:
        baseline = r["triton_autotune"]
        picked = ", ".join(f"{k}={v}" for c in baseline.get("picked", []) for k, v in c.items() if v is not None)
        rows.append(
            [
                r["problem"],
                r["variants"],
                r["rejected"],
                fmt(r["speedup_before"]),
                fmt(r["speedup_after"]),
                ", ".join(f"{k}={v}" for k, v in (r["best_config"] or {}).items()) or "-",
                f"{r['wall_s']:.0f}",
                fmt(baseline.get("speedup")) if "error" not in baseline else "n/a",
                picked or baseline.get("error", baseline.get("status", "-")),
                f"{baseline['autotune_s']:.2f}" if baseline.get("autotune_s") is not None else "-",
            ]
        )
    summary = {
        "geomean_before": geomean([r["speedup_before"] for r in ok]),
        "geomean_after": geomean([r["speedup_after"] for r in ok]),
        "geomean_before_gemm": geomean([r["speedup_before"] for r in ok if r["gemm_type"]]),
        "geomean_after_gemm": geomean([r["speedup_after"] for r in ok if r["gemm_type"]]),
        "tuning_wall_s_median": sorted(r["wall_s"] for r in ok)[len(ok) // 2] if ok else None,
        # on the problems where both ran: tune's best against Triton's autotuner over the same configs
        "compared": len(autotuned),
        "geomean_tuned_where_compared": geomean([r["speedup_after"] for r in autotuned]),
        "geomean_triton_autotune": geomean([r["triton_autotune"]["speedup"] for r in autotuned]),
        "geomean_tuned_gemm_where_compared": geomean([r["speedup_after"] for r in autotuned if r["gemm_type"]]),
        "geomean_triton_autotune_gemm": geomean([r["triton_autotune"]["speedup"] for r in autotuned if r["gemm_type"]]),
    }
    device = ok[0]["device_class"] if ok else args.backend
    print_table(
        f"tritongym tune on {device}: {args.strategy}, budget {args.budget}",
        [
            "problem",
            "variants",
            "rejected",
            "speedup before",
            "after tune",
            "best config",
            "tune s",
            "@triton.autotune",
            "its pick",
            "autotune s",
        ],
        rows,
    )
    print(
        f"geomean speedup over eager: {fmt(summary['geomean_before'])} -> {fmt(summary['geomean_after'])}; "
        f"GEMM-type {fmt(summary['geomean_before_gemm'])} -> {fmt(summary['geomean_after_gemm'])}"
    )
    print(
        f"where both ran ({summary['compared']} problems): tune {fmt(summary['geomean_tuned_where_compared'])}, "
        f"@triton.autotune {fmt(summary['geomean_triton_autotune'])}; GEMM-type: tune "
        f"{fmt(summary['geomean_tuned_gemm_where_compared'])}, @triton.autotune "
        f"{fmt(summary['geomean_triton_autotune_gemm'])}"
    )
    for r in records:
        if "error" in r:
            print(f"{r['problem']}: {r['error']}")
    if repeat:
        rows_new, again_s = repeat["new_evaluation_rows"], repeat["wall_s"]
        print(f"repeated tune of {repeat['problem']}: {rows_new} new evaluation rows, {again_s:.1f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "python": getattr(args, "python", None) or platform.python_version(),
                "backend": args.backend,
                "size": args.size,
                "strategy": args.strategy,
                "budget": args.budget,
                "summary": summary,
                "repeat": repeat,
                "problems": records,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
