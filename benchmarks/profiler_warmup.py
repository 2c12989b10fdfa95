"""Where a fresh GPU worker's profiler warm-up goes, and what would shorten it (one GPU).

Why: on an H100 (stop 37) a worker's start took ~4.8 s of which ~3.8 s was `warm_profiler` (torch.profiler's
first run: CUPTI and Kineto set up), and every candidate gets a fresh worker, so 64 RL candidates spent 242 s of
worker-slot time on it.  This starts fresh processes the way the pool does (forked from a parent that has
imported torch, as the zygote is, CUDA untouched until the child), and times in each child: the CUDA context,
the first profile, a second profile; per variant:

* `zygote`: the parent imports torch and tritongym's modules as `worker/zygote.py` does today;
* `zygote+profiler`: the parent also imports `torch.profiler` and its Python modules (no CUDA needed);
* `zygote+profiler+cuda-only`: as above, the child profiling CUDA activity only (no CPU op tracing);
* `zygote+profiler+background` (`--variants` names it): the first profile in a thread of the child while its
  main thread runs Python: `background s` and `python left` (the main thread's speed meanwhile, against alone).

H100, stop 37 (median of 3): first profile 5.67 s (`zygote`), 4.47 s (`+profiler`), 3.88 s (`+cuda-only`); a
second 5 ms.  The background variant hung its child past the call's limit, and the backend's
`profiler_warmup = "background"` (the same in the worker) had 25-30 of 32 honest RL candidates judged `hacked`
while it cut the batch from 130 s to 76-88 s: off.  A parent that runs `torch.profiler` once before the fork
(CPU only) leaves a child that cannot profile.
* `...+kernel-free` (stop 38): the set-up is a profile session that runs no kernel (so it could run with no GPU
  hold: nothing of its own reaches the GPU), timed as `warm enter s` / `warm exit s`; then the first real profile;
* `...+before-context`: that kernel-free session before the child's CUDA context exists.

H100, stop 38 (median of 2): a kernel-free set-up takes 4.3 s (`warm enter s`; 4.7 s before the context, which it
then creates), and the first real profile after it 0.04 s with its kernels seen: the set-up is complete.

`--interference` (stop 38) also measures what a kernel-free set-up does to another process's timing: a timer child
times a fixed matmul in a loop while a second child creates its context and then sets the profiler up without a
kernel; the timer's samples that overlap the set-up against its quiet ones (median and p90, ratio to quiet).  H100,
stop 38: ratio 1.00 (median and p90) during the set-up, 0.99-1.00 during the context's creation, two runs.

Prints a table and writes JSON (default benchmarks/results/profiler_warmup.json):

    python benchmarks/profiler_warmup.py [--repeats 3] [--concurrent 1 4 12]

`--concurrent N ...` (issue 40) starts N workers at once from one stand-in zygote (context, then the kernel-free
set-up, as the pool starts its workers and spares) and reports each part's median and maximum: whether a start
is slower when many run together (a one-kernel `eval` on an H200 started 16 processes and waited 12.9 s).
`--concurrent-gpus 1 4` runs each count on one GPU and spread over four (`--variants` alone skips the variants):

    python benchmarks/profiler_warmup.py --variants --concurrent 1 12 48 --concurrent-gpus 1 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt, print_table  # noqa: E402

VARIANTS = (
    "zygote",
    "zygote+profiler",
    "zygote+profiler+cuda-only",
    "zygote+profiler+cuda-only+kernel-free",
    "zygote+profiler+cuda-only+kernel-free+before-context",
)


def _preload(variant: str) -> None:
    from tritongym.core.worker.zygote import _preload as zygote_preload

    zygote_preload()
    if variant != "zygote":
        import torch.autograd.profiler  # noqa: F401
        import torch.profiler  # noqa: F401


def _kernel_free_warm_up(activities) -> dict:
    """A profile session with no kernel in it: CUPTI and Kineto set up, nothing launched on the GPU."""
    from torch.profiler import profile

    began = time.perf_counter()
    session = profile(activities=activities)
    session.__enter__()
    entered = time.perf_counter()
    session.__exit__(None, None, None)
    return {"warm_enter_s": entered - began, "warm_exit_s": time.perf_counter() - entered}


def _child(variant: str, write_fd: int) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    times = {}
    activities = [ProfilerActivity.CUDA] if "cuda-only" in variant else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    if "before-context" in variant:
        times.update(_kernel_free_warm_up(activities))
    began = time.perf_counter()
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    times["context_s"] = time.perf_counter() - began
    if "kernel-free" in variant and "before-context" not in variant:
        times.update(_kernel_free_warm_up(activities))
    x = torch.ones(16, device="cuda")
    if variant.endswith("background"):
        # the first profile in a thread while this one runs Python: how much of this thread's speed is left
        # (what the warm-up would take from a task it overlapped)
        def spin(seconds: float) -> float:
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                n += 1
            return n / seconds

        alone = spin(0.5)
        done = threading.Event()

        def warm() -> None:
            with profile(activities=activities):
                (x + 1).sum()
                torch.cuda.synchronize()
            done.set()

        began = time.perf_counter()
        threading.Thread(target=warm).start()
        n = 0
        while not done.is_set():
            n += 1
        times["background_s"] = time.perf_counter() - began
        times["python_left"] = n / times["background_s"] / alone
    for name in ("first_profile_s", "second_profile_s"):
        began = time.perf_counter()
        with profile(activities=activities) as prof:
            (x + 1).sum()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
        times[name] = time.perf_counter() - began
        times["kernels_seen"] = len(kernels)
    os.write(write_fd, json.dumps(times).encode() + b"\n")


def _gather(parent: int, r: int, w: int) -> dict:
    """Every JSON line the children wrote to the pipe, merged, once the stand-in zygote (`parent`) has exited."""
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(parent, 0)
    merged: dict = {}
    for line in data.decode().splitlines():
        if line.strip():
            merged.update(json.loads(line))
    return merged


def run(variant: str) -> dict:
    """One fresh child per call, forked from a fresh parent that preloaded as `variant` says."""
    r, w = os.pipe()
    parent = os.fork()
    if parent == 0:  # the stand-in zygote: preload, then fork the worker
        try:
            os.close(r)
            began = time.perf_counter()
            _preload(variant)
            preload_s = time.perf_counter() - began
            child = os.fork()
            if child == 0:
                _child(variant, w)
                os._exit(0)
            os.waitpid(child, 0)
            os.write(w, json.dumps({"preload_s": preload_s}).encode() + b"\n")
        finally:
            os._exit(0)
    merged = _gather(parent, r, w)  # one JSON line from the child, one from the stand-in zygote
    if "first_profile_s" not in merged:
        raise SystemExit(f"{variant}: the child sent no times (no CUDA?): {merged}")
    return merged


def _starter(write_fd: int, index: int, gpus: int = 1) -> None:
    """One fresh worker's start as the pool runs it today: the CUDA context (on GPU `index % gpus`), then a
    kernel-free profiler set-up; one JSON line keyed by `index`."""
    import torch
    from torch.profiler import ProfilerActivity

    began = time.perf_counter()
    torch.cuda.set_device(index % gpus)
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    times = {"context_s": time.perf_counter() - began}
    times.update(_kernel_free_warm_up([ProfilerActivity.CUDA]))
    times["start_s"] = time.perf_counter() - began
    os.write(write_fd, json.dumps({str(index): times}).encode() + b"\n")


def concurrent(n: int, gpus: int = 1) -> dict:
    """`n` workers started at once from one stand-in zygote, as a pool starts its workers and spares: whether a
    start's parts (context, profiler set-up) grow when many run together (CPU or driver contention).  `gpus`
    spreads them over that many GPUs (starter i on GPU i % gpus): on four H100s a worker's context took 3.4 s
    against 0.8 s on one GPU's (`gpu_scaling-h100x4-steady.json`), and whether the driver serialises contexts
    host-wide or per GPU decides what can help (12 at once on one GPU against 48 over four says which)."""
    r, w = os.pipe()
    parent = os.fork()
    if parent == 0:
        try:
            os.close(r)
            _preload("zygote+profiler")
            began = time.perf_counter()
            children = []
            for index in range(n):
                child = os.fork()
                if child == 0:
                    _starter(w, index, gpus)
                    os._exit(0)
                children.append(child)
            for child in children:
                os.waitpid(child, 0)
            os.write(w, json.dumps({"wall_s": time.perf_counter() - began}).encode() + b"\n")
        finally:
            os._exit(0)
    merged = _gather(parent, r, w)
    starts = [merged[str(i)] for i in range(n) if str(i) in merged]
    if len(starts) != n:
        raise SystemExit(f"concurrent {n}: {n - len(starts)} children sent nothing (no CUDA?)")
    out: dict = {"n": n, "gpus": gpus, "wall_s": merged["wall_s"]}
    for key in ("context_s", "warm_enter_s", "warm_exit_s", "start_s"):
        values = sorted(t[key] for t in starts)
        out[key] = {"median": statistics.median(values), "max": values[-1]}
    return out


def _timer(ready_fd: int, write_fd: int, seconds: float) -> None:
    """Times one fixed matmul (events around 8 calls) in a loop; each sample with its monotonic start and end."""
    import torch

    torch.cuda.set_device(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    os.write(ready_fd, b"r")
    samples = []
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        start_event.record()
        for _ in range(8):
            a @ b
        end_event.record()
        end_event.synchronize()
        samples.append((began, time.monotonic(), start_event.elapsed_time(end_event)))
    os.write(write_fd, json.dumps({"samples": samples}).encode() + b"\n")


def _setter(write_fd: int) -> None:
    """A fresh worker's start as the pool would run it unlocked: the context, then a kernel-free set-up."""
    import torch
    from torch.profiler import ProfilerActivity

    began = time.monotonic()
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    context = (began, time.monotonic())
    times = _kernel_free_warm_up([ProfilerActivity.CUDA])
    warm = (context[1], time.monotonic())
    os.write(write_fd, json.dumps({"context": context, "warm": warm, **times}).encode() + b"\n")


def interference() -> dict:
    """One timer child and one setter child, forked from a parent that preloaded as the zygote does."""
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()
    parent = os.fork()
    if parent == 0:
        try:
            os.close(r)
            _preload("zygote+profiler")
            timer = os.fork()
            if timer == 0:
                _timer(ready_w, w, seconds=14.0)
                os._exit(0)
            os.read(ready_r, 1)
            time.sleep(3.0)  # quiet samples first
            setter = os.fork()
            if setter == 0:
                _setter(w)
                os._exit(0)
            os.waitpid(setter, 0)
            os.waitpid(timer, 0)
        finally:
            os._exit(0)
    merged = _gather(parent, r, w)
    if "samples" not in merged or "warm" not in merged:
        raise SystemExit(f"interference: a child sent nothing (no CUDA?): {list(merged)}")

    def overlapping(window) -> list[float]:
        return [ms for began, ended, ms in merged["samples"] if began < window[1] and ended > window[0]]

    quiet = [
        ms for began, ended, ms in merged["samples"] if ended < merged["context"][0] or began > merged["warm"][1] + 0.5
    ]

    def stats(values: list[float]) -> dict:
        if not values:
            return {"samples": 0}
        values = sorted(values)
        median, p90 = statistics.median(values), values[int(0.9 * (len(values) - 1))]
        out = {"samples": len(values), "median_ms": median, "p90_ms": p90}
        if quiet:
            out["ratio"] = median / statistics.median(quiet)
            out["p90_ratio"] = p90 / sorted(quiet)[int(0.9 * (len(quiet) - 1))]
        return out

    return {
        "quiet": stats(quiet),
        "context": stats(overlapping(merged["context"])),
        "warm": stats(overlapping(merged["warm"])),
        "warm_s": merged["warm"][1] - merged["warm"][0],
        "warm_enter_s": merged["warm_enter_s"],
        "warm_exit_s": merged["warm_exit_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variants", nargs="*", default=list(VARIANTS), help="which variants, in order (none: `--variants` alone)"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "profiler_warmup.json")
    parser.add_argument("--interference", action="store_true", help="also time a matmul beside a kernel-free set-up")
    parser.add_argument(
        "--concurrent",
        type=int,
        nargs="+",
        default=[],
        help="also start this many workers at once (e.g. 1 4 12): context and set-up seconds under contention",
    )
    parser.add_argument(
        "--concurrent-gpus",
        type=int,
        nargs="+",
        default=[1],
        help="spread each --concurrent run over this many GPUs, each count in turn (e.g. 1 4)",
    )
    args = parser.parse_args()
    report: dict = {"runs": {}}
    if args.concurrent:
        report["concurrent"] = [concurrent(n, g) for g in args.concurrent_gpus for n in args.concurrent]
        print_table(
            "workers started at once from one zygote: context, then a kernel-free profiler set-up (median / max s)",
            ["at once", "GPUs", "wall s", "context", "set-up enter", "set-up exit", "whole start"],
            [
                [str(c["n"]), str(c["gpus"]), fmt(c["wall_s"])]
                + [f"{fmt(c[k]['median'])} / {fmt(c[k]['max'])}" for k in ("context_s", "warm_enter_s", "warm_exit_s")]
                + [f"{fmt(c['start_s']['median'])} / {fmt(c['start_s']['max'])}"]
                for c in report["concurrent"]
            ],
        )
    if args.interference:
        report["interference"] = [interference() for _ in range(args.repeats)]
        print_table(
            "a timer's matmul samples beside another process's kernel-free profiler set-up",
            ["run", "quiet median ms", "during context", "during set-up", "quiet p90 ms", "set-up p90", "samples"],
            [
                [str(i), fmt(r["quiet"].get("median_ms")), fmt(r["context"].get("ratio")), fmt(r["warm"].get("ratio"))]
                + [fmt(r["quiet"].get("p90_ms")), fmt(r["warm"].get("p90_ratio")), str(r["warm"]["samples"])]
                for i, r in enumerate(report["interference"])
            ],
        )
    rows = []
    for variant in args.variants:
        try:
            runs = [run(variant) for _ in range(args.repeats)]
        except SystemExit as exc:  # a variant whose child cannot profile (Kineto started before the fork)
            report["runs"][variant] = {"error": str(exc)}
            rows.append([variant, "-", "-", str(exc)[:60]] + ["-"] * 6)
            continue
        report["runs"][variant] = runs
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append(
            [variant] + [fmt(med[k]) for k in ("preload_s", "context_s", "first_profile_s", "second_profile_s")]
        )
        rows[-1] += [str(runs[0]["kernels_seen"])]
        rows[-1] += [fmt(med.get(k)) for k in ("warm_enter_s", "warm_exit_s", "background_s", "python_left")]
    print_table(
        f"profiler warm-up in a forked worker, median of {args.repeats}",
        ["variant", "parent preload s", "child context s", "first profile s", "second profile s", "kernels seen"]
        + ["warm enter s", "warm exit s", "background s", "python left"],
        rows,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
