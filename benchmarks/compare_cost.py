"""What one keeper comparison costs: torch's float64 passes (`compare._float_stats`) against the one-pass Triton
kernel (`measure/fused_stats.py`), side by side in one process, on one GPU.

Why: the keeper compares every lent output of every trial, one request at a time; a warm `eval` of relu made 13
lends of 12-15 ms each (stop 57), most of it this comparison.  Per dtype and size: the median and p90 of a whole
`compare_output` (ms) both ways, the speedup, the one-pass kernel's first call (its compile, in this process's
Triton cache), and whether the two report the same numbers (counts and maximum equal, sums to 1e-12).

    python benchmarks/compare_cost.py --sizes 1 16 64 --dtypes float32 bfloat16 --out $OUT/compare_cost.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _common import print_table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _timed(fn, repeats: int) -> list[float]:
    import torch

    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()  # reads its numbers back: synchronised by the read
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def _same(a, b) -> bool:
    exact = ("mismatched", "max_abs_err", "note", "short_significands", "ref_short_significands")
    close = ("mean_abs_err", "rel_norm_err")
    one, two = a.model_dump(), b.model_dump()
    if any(one[k] != two[k] for k in exact):
        return False
    return all(
        (one[k] is None and two[k] is None) or abs(one[k] - two[k]) <= 1e-12 * max(abs(one[k]), 1e-300) for k in close
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 16, 64], help="output sizes in MiB")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import torch

    from tritongym.core.measure import compare
    from tritongym.core.worker_task import Tolerance

    if not torch.cuda.is_available():
        print("compare_cost: needs a CUDA GPU", file=sys.stderr)
        return 2
    rows, records = [], []
    for name in args.dtypes:
        dtype = getattr(torch, name)
        tol = {str(dtype): Tolerance(atol=1e-2, rtol=1e-2, rel_norm=0.0)}
        for mib in args.sizes:
            n = int(mib * 2**20) // torch.tensor([], dtype=dtype).element_size()
            g = torch.Generator(device="cuda").manual_seed(0)
            ref = torch.randn(n, device="cuda", generator=g).to(dtype)
            out = (ref.float() + 1e-3 * torch.randn(n, device="cuda", generator=g)).to(dtype)
            start = time.perf_counter()
            fused_first = compare.compare_output(0, out, ref, tol, fused=True)
            first_ms = (time.perf_counter() - start) * 1e3
            plain_first = compare.compare_output(0, out, ref, tol)
            plain = _timed(lambda o=out, r=ref, t=tol: compare.compare_output(0, o, r, t), args.repeats)
            fused = _timed(lambda o=out, r=ref, t=tol: compare.compare_output(0, o, r, t, fused=True), args.repeats)
            record = {
                "dtype": name,
                "mib": mib,
                "elements": n,
                "torch_median_ms": statistics.median(plain),
                "torch_p90_ms": sorted(plain)[int(0.9 * (len(plain) - 1))],
                "fused_median_ms": statistics.median(fused),
                "fused_p90_ms": sorted(fused)[int(0.9 * (len(fused) - 1))],
                "fused_first_call_ms": first_ms,
                "same_numbers": _same(plain_first, fused_first),
            }
            record["speedup"] = record["torch_median_ms"] / record["fused_median_ms"]
            records.append(record)
            rows.append(
                [
                    name,
                    mib,
                    f"{record['torch_median_ms']:.2f}",
                    f"{record['fused_median_ms']:.3f}",
                    f"{record['speedup']:.1f}x",
                    f"{first_ms:.0f}",
                    "yes" if record["same_numbers"] else "NO",
                ]
            )
    print_table(
        f"one keeper comparison on {torch.cuda.get_device_name()} ({args.repeats} repeats)",
        ["dtype", "MiB", "torch ms", "one pass ms", "speedup", "first call ms", "same numbers"],
        rows,
    )
    if args.out:
        info = {"device": torch.cuda.get_device_name(), "repeats": args.repeats, "results": records}
        Path(args.out).write_text(json.dumps(info, indent=2))
        print(f"wrote {args.out}")
    return 0 if all(r["same_numbers"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
