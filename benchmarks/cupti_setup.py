"""What a fresh GPU worker's ~4 s of CUPTI set-up is made of, activity kind by activity kind (issue 40, one GPU).

Why: a cold `tritongym eval` on an H200 waited 4.1-4.6 s for its worker's profiler set-up (`worker_startup_profiler`,
`eval_latency-h200-stop49.json`), the largest part of its 12.8-14.6 s, and every fresh worker of an RL batch pays
it too.  `profiler_warmup.py` timed torch.profiler's first session as a whole; this asks CUPTI directly (ctypes, the
library torch itself loaded), so that the next step is a measurement, not a guess:

1. the CUDA context (`torch.empty(1, device="cuda")`), then a Triton kernel run once (its module loaded *before*
   CUPTI: "set up later, CUPTI apparently missed the kernels of modules loaded before it", `pool_options.py`);
2. CUPTI's buffer callbacks registered, then each activity kind of the variant enabled one at a time, each
   `cuptiActivityEnable` timed;
3. that Triton kernel run again three times, then a second Triton kernel (a module loaded *after* CUPTI) three
   times and a torch kernel three times, each group flushed and its `CONCURRENT_KERNEL` records counted: whether
   kernels of modules loaded before the set-up are seen;
4. torch.profiler's first session (`ProfilerActivity.CUDA`, no kernel: what `gpu_profile.set_up_profiler` does)
   after all that: whether Kineto still pays seconds once CUPTI is up.

Variants (`--variants`): `kernel` (`CONCURRENT_KERNEL` alone: all the kernel table and PR read), `kineto` (the
kinds Kineto enables for `ProfilerActivity.CUDA`: concurrent kernel, memcpy, memset, runtime, driver, external
correlation, overhead; in that order), `driver-first` (the same with runtime and driver API tracing first), and
`profiler` (no ctypes: torch.profiler's first session alone, today's set-up, for the baseline in the same run).

Each variant runs `--repeats` times, each in a fresh process (`--child`).  Prints a table (median seconds per
step) and writes JSON:

    python benchmarks/cupti_setup.py [--repeats 3] [--variants kernel kineto profiler] [--out PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from _common import fmt, print_table  # noqa: E402

from tritongym.core.measure.cupti_activity import ActivityTrace  # noqa: E402

MEMCPY, MEMSET, DRIVER, RUNTIME, CONCURRENT_KERNEL, OVERHEAD, EXTERNAL_CORRELATION = 1, 2, 4, 5, 10, 17, 39
KIND_NAMES = {
    MEMCPY: "memcpy",
    MEMSET: "memset",
    DRIVER: "driver",
    RUNTIME: "runtime",
    CONCURRENT_KERNEL: "concurrent_kernel",
    OVERHEAD: "overhead",
    EXTERNAL_CORRELATION: "external_correlation",
}
KINETO = (CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, EXTERNAL_CORRELATION, OVERHEAD)
VARIANTS = {
    "kernel": (CONCURRENT_KERNEL,),
    "kineto": KINETO,
    "driver-first": (RUNTIME, DRIVER, CONCURRENT_KERNEL, MEMCPY, MEMSET, EXTERNAL_CORRELATION, OVERHEAD),
    "profiler": (),
}


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.jit
def times_two(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def kernels_seen(trace: ActivityTrace) -> int:
    """Kernel records CUPTI delivered since the last call (memcpy and memset records left out)."""
    return sum(not e.name.startswith(("Memcpy", "Memset")) for e in trace.take())


def child(variant: str) -> dict:
    """One fresh process's measurements (see the module docstring); printed as one JSON line."""
    began = time.perf_counter()  # torch, Triton and this module already imported (the worker's zygote has them)
    import torch

    out: dict = {"variant": variant, "imports_s": time.perf_counter() - began}
    if not torch.cuda.is_available():
        raise SystemExit("cupti_setup.py needs a CUDA GPU")
    step = time.perf_counter()
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    out["context_s"] = time.perf_counter() - step
    step = time.perf_counter()
    add_one[(1,)](x, x.numel(), BLOCK=1024)  # compiled and its module loaded before CUPTI
    torch.cuda.synchronize()
    out["first_triton_s"] = time.perf_counter() - step
    activity = None
    if VARIANTS[variant]:
        step = time.perf_counter()
        activity = ActivityTrace()
        out["load_and_register_s"] = time.perf_counter() - step
        out["enable_s"] = {}
        for kind in VARIANTS[variant]:
            step = time.perf_counter()
            activity.check("cuptiActivityEnable", ctypes.c_int(kind))
            out["enable_s"][KIND_NAMES[kind]] = time.perf_counter() - step
        for name, launch in (
            ("loaded_before", lambda: add_one[(1,)](x, x.numel(), BLOCK=1024)),
            ("loaded_after", lambda: times_two[(1,)](x, x.numel(), BLOCK=1024)),
            ("torch", lambda: x.mul_(1.0)),
        ):
            step = time.perf_counter()
            for _ in range(3):
                launch()
            torch.cuda.synchronize()
            out[f"{name}_s"] = time.perf_counter() - step
            out[f"{name}_kernels_seen"] = kernels_seen(activity)
        for kind in VARIANTS[variant]:
            activity.check("cuptiActivityDisable", ctypes.c_int(kind))
        activity.take()
    from torch.profiler import ProfilerActivity, profile

    step = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]):
        pass
    out["profiler_first_s"] = time.perf_counter() - step
    step = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        times_two[(1,)](x, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
    out["profiler_second_s"] = time.perf_counter() - step
    out["profiler_kernels_seen"] = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    out["whole_s"] = time.perf_counter() - began
    return out


def run(variant: str, timeout: float, gpu: str | None) -> dict:
    env = {**os.environ, **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {})}
    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", variant],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"variant": variant, "error": f"timed out after {timeout:g} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"variant": variant, "error": (done.stderr or done.stdout)[-600:].strip()}
    return json.loads(lines[-1])


def _median(runs: list[dict], key: str, sub: str | None = None) -> float | None:
    values = [r[key][sub] if sub else r[key] for r in runs if key in r and (sub is None or sub in r[key])]
    return statistics.median(values) if values else None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per fresh process")
    parser.add_argument("--gpu", default=None, help="a CUDA_VISIBLE_DEVICES entry for the children")
    parser.add_argument("--out", default="benchmarks/results/cupti_setup.json")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        return {}
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("cupti_setup.py needs a CUDA GPU (it times CUPTI's set-up on one)")
    report: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "runs": {}}
    rows = []
    for variant in args.variants:
        runs = [run(variant, args.timeout, args.gpu) for _ in range(args.repeats)]
        report["runs"][variant] = runs
        good = [r for r in runs if "error" not in r]
        if not good:
            rows.append([variant, runs[0]["error"][:80]] + ["-"] * 7)
            continue
        enables = {k: _median(good, "enable_s", k) for k in (good[0].get("enable_s") or {})}
        seen = "/".join(str(good[0].get(f"{n}_kernels_seen", "-")) for n in ("loaded_before", "loaded_after", "torch"))
        rows.append(
            [
                variant,
                fmt(_median(good, "context_s")),
                fmt(_median(good, "load_and_register_s")) if "load_and_register_s" in good[0] else "-",
                ", ".join(f"{k} {fmt(v)}" for k, v in enables.items()) or "-",
                seen,
                fmt(_median(good, "profiler_first_s")),
                fmt(_median(good, "profiler_second_s")),
                str(good[0]["profiler_kernels_seen"]),
                fmt(_median(good, "whole_s")),
            ]
        )
    print_table(
        f"CUPTI's set-up by activity kind, fresh processes, median of {args.repeats} ({report['device']})",
        [
            "variant",
            "context s",
            "load+register s",
            "cuptiActivityEnable s, by kind",
            "kernels seen (before/after/torch, of 3)",
            "torch.profiler first s",
            "second s",
            "its kernels",
            "whole s",
        ],
        rows,
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
