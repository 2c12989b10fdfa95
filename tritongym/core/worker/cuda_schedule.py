"""How a pool process's CUDA context waits for its GPU: spin, yield the CPU, or block (`PoolOptions.device_schedule`).

By default (`auto`) the driver makes a context whose process has fewer contexts than the host has CPUs *spin*
while it waits for the GPU (a synchronise, an event, a blocking copy): a thread at 100% of a core until the GPU
answers.  Every worker and keeper of the pool is such a process, one context each, so on a host judging on two
GPUs some 24 processes spin through their synchronisations at once, beside the candidates' compiles, the keepers'
Python and the pool's relay threads.  On two H200s every step of a task took ~1.2x its one-GPU time and the CPU
seconds per task grew from 2.1 to 2.6 with the same work (`gpu_scaling-h200x2-stop61-*.json`): the signature of
CPU time taken by waiting, not by work.

`yield` spins but gives the core up between polls; `blocking` sleeps on a driver interrupt (tens of microseconds
later to wake).  A timing is unaffected either way: it is measured by CUDA events on the GPU, not by the host's
clock.  The flag must be set before the process's primary context exists (`apply`, called before torch's first
CUDA call), through the driver API, since torch exposes no setting for it.
"""

from __future__ import annotations

import ctypes
import os

ENV = "TRITONGYM_CUDA_SCHEDULE"
FLAGS = {"auto": 0, "spin": 1, "yield": 2, "blocking": 4}  # CU_CTX_SCHED_*
CHOICES = tuple(FLAGS)


def apply(device_index: int = 0) -> str | None:
    """Set the primary context's schedule named in this process's environment (`ENV`) on `device_index`, before
    the context exists: the schedule set, or None where none was asked or the driver refused (a context already
    made, no `libcuda`): that process keeps the driver's default, and judging is unchanged."""
    name = os.environ.get(ENV, "auto")
    if name not in FLAGS:
        raise ValueError(f"{ENV}={name!r}: the CUDA schedule is one of {', '.join(CHOICES)}")
    if name == "auto":
        return None
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device = ctypes.c_int()
    if lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(device), int(device_index)):
        return None
    set_flags = getattr(lib, "cuDevicePrimaryCtxSetFlags_v2", None) or lib.cuDevicePrimaryCtxSetFlags
    return name if set_flags(device, ctypes.c_uint(FLAGS[name])) == 0 else None
