"""What a fresh worker's start costs when other workers start beside it, on one GPU and across GPUs of one host.

Issue 40 item 2: two GPUs judge the RL-like batch only 1.5x faster than one, and two independent pools side by
side (one per GPU, sharing nothing but the host) were each 2.3x slower than alone.  Every candidate gets a fresh
process forked from the zygote, so what a fork costs, and whether that cost grows with the forks running on *other*
GPUs, is a lead: a lock or a page-fault path shared by the whole host (the VM's memory, the driver) would slow
every GPU's workers together.  This script forks children from a parent that imported what the zygote imports
(`zygote._preload`), each child pinned to one GPU by `CUDA_VISIBLE_DEVICES`, and times in each child:

* `ctx_s`: the CUDA context (`torch.cuda.init`, one allocation, a synchronise);
* `gc_s` and `minflt_gc`: a full `gc.collect()` and the page faults it takes (a collection writes into every
  tracked object's header: the whole inherited heap copied on write, unless the parent called `gc.freeze()`);
* `touch_s`: 256 MiB of fresh anonymous memory written once (a first touch: the VM's memory path);
* `alloc_s`: 256 MiB of device memory taken from the driver and given back, and 64 MiB of pinned host memory;
* `sync_us`: one tiny kernel and a synchronise, the mean of 300.

Layouts: `seq` (one child at a time on GPU 0), `8x0` (eight at once on GPU 0), `8x0+8x1` (eight on each of two
GPUs at once), `16x0`; each with and without `gc.freeze()` in the parent before it forks.  A cost that grows
from `8x0` to `8x0+8x1` is shared across GPUs.

    python benchmarks/fork_contention.py --out $OUT/fork.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import time
from pathlib import Path

from _common import fmt, print_table

RESULTS = Path(__file__).parent / "results"


def _child(gpu: str, write_fd: int) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    out: dict = {"gpu": gpu}
    began = time.perf_counter()
    import torch

    flt0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    gc.collect()
    out["gc_s"] = time.perf_counter() - t
    out["minflt_gc"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt0
    t = time.perf_counter()
    torch.cuda.init()
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    out["ctx_s"] = time.perf_counter() - t
    t = time.perf_counter()
    buf = bytearray(256 << 20)
    view = memoryview(buf)
    for offset in range(0, len(buf), 4096):
        view[offset] = 1
    del view, buf
    out["touch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    del big
    torch.cuda.empty_cache()
    pinned = torch.empty(64 << 20, dtype=torch.uint8, pin_memory=True)
    del pinned
    out["alloc_s"] = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(300):
        x.add_(1)
        torch.cuda.synchronize()
    out["sync_us"] = (time.perf_counter() - t) / 300 * 1e6
    out["total_s"] = time.perf_counter() - began
    out["minflt"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt0
    os.write(write_fd, json.dumps(out).encode())


def run_layout(gpus: list[str]) -> list[dict]:
    """Fork one child per entry of `gpus` at once (a list of one: a single child); their reports."""
    started = []
    for gpu in gpus:
        read_fd, write_fd = os.pipe()
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            try:
                _child(gpu, write_fd)
            finally:
                os._exit(0)
        fork_s = time.perf_counter() - t
        os.close(write_fd)
        started.append((pid, read_fd, fork_s))
    reports = []
    for pid, read_fd, fork_s in started:
        chunks = []
        while chunk := os.read(read_fd, 1 << 16):
            chunks.append(chunk)
        os.close(read_fd)
        os.waitpid(pid, 0)
        if chunks:
            reports.append(json.loads(b"".join(chunks)) | {"fork_s": fork_s})
    return reports


LAYOUTS = {"seq": None, "8x0": ["0"] * 8, "8x0+8x1": ["0", "1"] * 8, "16x0": ["0"] * 16}
KEYS = ("fork_s", "ctx_s", "gc_s", "minflt_gc", "touch_s", "alloc_s", "sync_us", "total_s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--out", type=Path, default=RESULTS / "fork_contention.json")
    args = parser.parse_args()
    from tritongym.core.worker import zygote

    t = time.perf_counter()
    zygote._preload()
    report: dict = {"preload_s": time.perf_counter() - t, "rows": []}
    rows = []
    for freeze in (False, True):
        if freeze:
            gc.collect()
            gc.freeze()
        for name in args.layouts:
            began = time.perf_counter()
            if LAYOUTS[name] is None:
                reports = [r for _ in range(4) for r in run_layout(["0"])]
            else:
                reports = run_layout(LAYOUTS[name])
            wall = time.perf_counter() - began
            medians = {k: statistics.median(r[k] for r in reports) for k in KEYS}
            report["rows"].append({"freeze": freeze, "layout": name, "wall_s": wall, "children": reports})
            rows.append([str(freeze), name, fmt(wall)] + [fmt(medians[k]) for k in KEYS])
            print(" | ".join(rows[-1]), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1))
    print_table("Fresh workers' start beside others (medians per child)", ["freeze", "layout", "wall s", *KEYS], rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
