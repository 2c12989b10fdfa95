"""What one CUDA IPC handout costs, and whether it costs more when many processes make them at once (issue 40).

Why: a candidate's outputs reach the reference keeper through handouts (`worker/handouts.py`): per output the
keeper allocates a buffer outside torch's cache (`cuMemAlloc`), fills it with 0xFF, exports it
(`cuIpcGetMemHandle`) and synchronises; the candidate's worker opens it (`cuIpcOpenMemHandle`), copies its output
in, synchronises and closes it; the keeper compares it and frees it (`cuMemFree`).  A warm `eval` of relu (a 64 MiB
output) made 13 such lends of ~15 ms each in the keeper, and an RL batch of 128 candidates 1,440.  On two GPUs
every step of a task was ~1.5x slower than on one with the same tasks per GPU, while 8 tasks on the host, spread
over two GPUs, ran at one GPU's speed: the lead is driver work the host's processes share.

This starts `--pairs` keeper/worker process pairs (spawned: a CUDA context each, as the pool's processes have),
spread over `--gpus`, all beginning together, and times each driver step of `--iterations` handouts per pair, in
two modes:

* `fresh`: today's handout, a new allocation per lend (alloc, fill + sync, export; open, copy + sync, close;
  the keeper's compare; free);
* `reused`: one allocation per pair, exported and opened once, then per lend only the fill + sync, the copy + sync
  and the compare: what a per-task arena would cost.

`--churn K ...` runs each case again beside K processes that create CUDA contexts one after another (a spawned
child each, exiting once its context exists), as the pool's worker starts do: whether a context's creation holds
up the other processes' driver calls (a context alone takes ~0.2 s of the driver, 16 at once ~3 s each).

Per mode, size, pair count and churn: each step's median and p90 (ms), one lend's round trip as the keeper sees it, and
the handouts per second of all pairs together.  If a step's median grows with the pairs on one GPU and as much
with the same pairs over two GPUs, the driver serialises it host-wide.

    python benchmarks/handout_cost.py --pairs 1 4 8 16 --mib 64 --gpus 0 --out $OUT/handouts.json
    python benchmarks/handout_cost.py --pairs 8 16 --gpus 0,1       # two GPUs of one host
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

from _common import print_table

STEPS = {
    "fresh": ("alloc", "fill_sync", "export", "open", "copy_sync", "close", "compare", "free", "round_trip"),
    "reused": ("fill_sync", "copy_sync", "compare", "round_trip"),
}


def _driver():
    from tritongym.core.worker import handouts

    return handouts


def _values(nbytes: int):
    """The output both sides hold: the keeper's reference, the worker's output (the same seed, on the CPU)."""
    import torch

    return torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(0))


def _keeper(gpu: str, mode: str, nbytes: int, iterations: int, conn, barrier, results) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # before CUDA starts in this spawned process
    import ctypes

    import torch

    h = _driver()
    numel = nbytes // 4
    reference = _values(nbytes).cuda()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {step: [] for step in STEPS[mode]}

    def clock(step: str, began: float) -> float:
        now = time.perf_counter()
        times[step].append((now - began) * 1e3)
        return now

    arena = None
    address = ctypes.c_uint64()
    barrier.wait()
    for _ in range(iterations):
        began = t = time.perf_counter()
        if arena is None:
            h._call("cuMemAlloc_v2", ctypes.byref(address), nbytes)
            if mode == "fresh":
                t = clock("alloc", t)
        h._call("cuMemsetD8_v2", address.value, 0xFF, nbytes)
        h.synchronize()
        t = clock("fill_sync", t)
        if arena is None:
            handle = h._IpcHandle()
            h._call("cuIpcGetMemHandle", ctypes.byref(handle), address.value)
            arena = h.encode_handle(handle)
            if mode == "fresh":
                t = clock("export", t)
        conn.send(arena)
        for step, ms in conn.recv().items():
            times[step].append(ms)
        t = time.perf_counter()
        lent = h.wrap(address.value, nbytes, torch.float32, [numel])
        same = bool(torch.equal(lent, reference))
        t = clock("compare", t)
        del lent
        if mode == "fresh":
            h._call("cuMemFree_v2", address.value)
            t = clock("free", t)
            arena = None
        clock("round_trip", began)
        if not same:
            raise RuntimeError("the worker's copy did not arrive whole")
    conn.send(None)
    results.put(times)


def _worker(gpu: str, mode: str, nbytes: int, conn) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    import ctypes

    import torch

    h = _driver()
    numel = nbytes // 4
    output = _values(nbytes).cuda()
    torch.cuda.synchronize()
    mapped = None
    while (text := conn.recv()) is not None:
        times = {}
        t = time.perf_counter()
        if mapped is None:
            address = ctypes.c_uint64()
            h._call("cuIpcOpenMemHandle_v2", ctypes.byref(address), h.decode_handle(text), 1)
            mapped = address.value
            if mode == "fresh":
                times["open"] = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        h.wrap(mapped, nbytes, torch.float32, [numel]).copy_(output)
        h.synchronize()
        times["copy_sync"] = (time.perf_counter() - t) * 1e3
        if mode == "fresh":
            t = time.perf_counter()
            h._call("cuIpcCloseMemHandle", mapped)
            times["close"] = (time.perf_counter() - t) * 1e3
            mapped = None
        conn.send(times)


def _context_once(gpu: str) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    import torch

    torch.empty(1, device="cuda")


def _churn(gpu: str, stop, made) -> None:
    """Fresh processes one after another, each creating its CUDA context and exiting, until `stop` is set: the
    pool's worker starts, beside the handouts (`made` counts the contexts)."""
    ctx = mp.get_context("spawn")
    while not stop.is_set():
        child = ctx.Process(target=_context_once, args=(gpu,))
        child.start()
        child.join()
        with made.get_lock():
            made.value += 1


def run_case(mode: str, pairs: int, mib: int, gpus: list[str], iterations: int, churn: int = 0) -> dict:
    ctx = mp.get_context("spawn")
    nbytes = mib << 20
    stop, made = ctx.Event(), ctx.Value("i", 0)
    churners = [ctx.Process(target=_churn, args=(gpus[c % len(gpus)], stop, made)) for c in range(churn)]
    for churner in churners:
        churner.start()
    if churn:
        time.sleep(5.0)  # the churn under way (its first contexts made) before the handouts begin
    made_before = made.value
    barrier = ctx.Barrier(pairs)
    results = ctx.Queue()
    procs = []
    for p in range(pairs):
        gpu = gpus[p % len(gpus)]
        keeper_end, worker_end = ctx.Pipe()
        procs.append(ctx.Process(target=_keeper, args=(gpu, mode, nbytes, iterations, keeper_end, barrier, results)))
        procs.append(ctx.Process(target=_worker, args=(gpu, mode, nbytes, worker_end)))
    began = time.perf_counter()
    for proc in procs:
        proc.start()
    gathered = [results.get(timeout=300) for _ in range(pairs)]
    contexts = made.value - made_before
    wall = time.perf_counter() - began
    stop.set()
    for proc in procs + churners:
        proc.join(timeout=60)
    merged: dict[str, list[float]] = {step: [] for step in STEPS[mode]}
    for times in gathered:
        for step, values in times.items():
            merged[step].extend(values)
    lends_s = sum(statistics.fmean(t["round_trip"]) for t in gathered) / pairs / 1e3
    row = {
        "mode": mode,
        "pairs": pairs,
        "mib": mib,
        "gpus": ",".join(gpus),
        "iterations": iterations,
        "churn": churn,
        "contexts_per_s": round(contexts / wall, 2),
        "wall_s": round(wall, 2),
        "handouts_per_s": round(pairs / lends_s, 1),
    }
    for step, values in merged.items():
        values.sort()
        row[f"{step}_ms"] = round(statistics.median(values), 3)
        row[f"{step}_p90_ms"] = round(values[int(0.9 * (len(values) - 1))], 3)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--mib", type=int, nargs="+", default=[64])
    parser.add_argument("--gpus", default="0", help="comma-separated GPU indices the pairs are spread over")
    parser.add_argument("--modes", nargs="+", default=["fresh", "reused"], choices=sorted(STEPS))
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument(
        "--churn",
        type=int,
        nargs="+",
        default=[0],
        help="processes creating CUDA contexts one after another beside the handouts (the pool's worker starts)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "handout_cost.json")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("handout_cost.py measures CUDA IPC: it needs a GPU (none is visible here)", file=sys.stderr)
        return 2
    gpus = args.gpus.split(",")
    rows = []
    for mib in args.mib:
        for mode in args.modes:
            for pairs in args.pairs:
                for churn in args.churn:
                    rows.append(run_case(mode, pairs, mib, gpus, args.iterations, churn))
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    device = torch.cuda.get_device_name(0)
                    args.out.write_text(json.dumps({"device": device, "rows": rows}, indent=1))
                    print(json.dumps(rows[-1]), flush=True)
    columns = ["mode", "pairs", "mib", "gpus", "churn", "contexts_per_s", "handouts_per_s"]
    columns += [f"{step}_ms" for step in STEPS["fresh"]]
    print_table("CUDA IPC handouts (median ms per step)", columns, [[r.get(c, "") for c in columns] for r in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
