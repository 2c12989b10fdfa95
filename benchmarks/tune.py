"""`tritongym tune` on the bundled solutions: speedup over the eager reference before and after tuning.

For each problem, one fresh registry and one `api.tune(file=<bundled solution>, problem=<name>)` on
triton-cuda (gpu sizes): the kernel as written is judged first, then up to `--budget` variants proposed by
`--strategy`, every one through the full pipeline (correctness trials, hack checks, paired timing).
Reported per problem: the parameters found, variants measured and rejected, the speedup over the eager
reference of the kernel as written and of the best variant, the best configuration, and the tuning wall
time; then the geometric means overall and on the GEMM-type problems.  A second `tune` of the first
problem checks that a repeated tune is answered from the registry (no new evaluation rows).
Prints a table and writes JSON (default benchmarks/results/tune.json).

Not in this script yet: the same kernels under Triton's own `@triton.autotune` over the same space.

    python benchmarks/tune.py [--problems matmul,softmax] [--budget 8] [--strategy exhaustive]
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
from tritongym.core import api
from tritongym.core.config import EvalConfig
from tritongym.core.problems import suite_names

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default=None, help="comma separated (default: every bundled solution)")
    parser.add_argument("--budget", type=int, default=8, help="variants per problem besides the kernel as written")
    parser.add_argument("--strategy", default="exhaustive")
    parser.add_argument("--backend", default="triton-cuda")
    parser.add_argument("--size", default="gpu")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "tune.json")
    args = parser.parse_args()
    names = (
        args.problems.split(",") if args.problems else [n for n in suite_names() if (SOLUTIONS / f"{n}.py").exists()]
    )
    config = EvalConfig(backend=args.backend, size=args.size)
    work = Path(tempfile.mkdtemp(prefix="tritongym-tune-bench-"))

    rows, records = [], []
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
        params = ", ".join(p.name for p in tuning.params) or "-"
        best = ", ".join(f"{k}={v}" for k, v in (tuning.best_config or {}).items()) or "-"
        print(f"{name}: {tuning.status}, before {fmt(before)}, after {fmt(after)} ({wall:.0f} s)", flush=True)
        rows.append(
            [
                name,
                params,
                tuning.variants,
                tuning.rejected,
                fmt(before),
                fmt(after),
                fmt(tuning.speedup),
                best,
                f"{wall:.0f}",
            ]
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
            }
        )

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

    ok = [r for r in records if "error" not in r]
    summary = {
        "geomean_before": geomean([r["speedup_before"] for r in ok]),
        "geomean_after": geomean([r["speedup_after"] for r in ok]),
        "geomean_before_gemm": geomean([r["speedup_before"] for r in ok if r["gemm_type"]]),
        "geomean_after_gemm": geomean([r["speedup_after"] for r in ok if r["gemm_type"]]),
        "tuning_wall_s_median": sorted(r["wall_s"] for r in ok)[len(ok) // 2] if ok else None,
    }
    device = ok[0]["device_class"] if ok else args.backend
    print_table(
        f"tritongym tune on {device}: {args.strategy}, budget {args.budget}",
        [
            "problem",
            "params",
            "variants",
            "rejected",
            "speedup before",
            "after",
            "tuned/source",
            "best config",
            "wall s",
        ],
        rows,
    )
    print(
        f"geomean speedup over eager: {fmt(summary['geomean_before'])} -> {fmt(summary['geomean_after'])}; "
        f"GEMM-type {fmt(summary['geomean_before_gemm'])} -> {fmt(summary['geomean_after_gemm'])}"
    )
    if repeat:
        rows_new, again_s = repeat["new_evaluation_rows"], repeat["wall_s"]
        print(f"repeated tune of {repeat['problem']}: {rows_new} new evaluation rows, {again_s:.1f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "python": platform.python_version(),
                "backend": args.backend,
                "size": args.size,
                "strategy": args.strategy,
                "budget": args.budget,
                "summary": summary,
                "repeat": repeat,
                "problems": records,
                "triton_autotune_baseline": "not measured by this version of the script",
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
