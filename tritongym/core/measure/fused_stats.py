"""The comparison's sums in one pass over the two outputs: a Triton kernel for the keeper's comparisons on a GPU.

`compare._float_stats` works in float64 with torch: about thirty elementwise passes per chunk (two float64
copies, NaN and infinity masks, the difference, its tolerance test, the where-masks and the sums), each reading
and writing a full float64 temporary.  In the GPU's keeper, which compares every trial's every output that a
worker lends it, one 64 MiB float32 output took 12-15 ms that way (an H200's eval timelines), thirteen times per relu
or softmax task, in a process that answers one request at a time.  Here each program reads its block of both
outputs once, does the same float64 arithmetic in registers, and writes its eleven partial sums; torch adds the
partials (and takes the maximum) in one read.  No float64 temporary exists, so no chunking either, except where
the reference is parked in host memory and comes over a chunk at a time.

The numbers are the same quantities: counts and the maximum are exact either way; the float64 sums differ from
torch's only in the order of their additions (last bits).  Only the keeper uses it (`compare_output(...,
fused=True)`): it runs no candidate code, so no candidate can patch Triton under it, and it lives long enough that
the kernel's compile (once per dtype, in its private Triton cache; `warm_up` starts float32's at the keeper's
start) is paid once per pool, not per task.  Workers keep the torch path: each is a fresh process that would
compile it again, inside the candidate's own Triton.
"""

from __future__ import annotations

import os
import threading

import torch
import triton
import triton.language as tl

STAT_NAMES = ("mismatched", "finite", "nan_differs", "max_abs", "sum_abs", "sum_sq", "ref_sq")
STAT_NAMES += ("out_nonzero", "out_short", "ref_nonzero", "ref_short")
_MAX = STAT_NAMES.index("max_abs")
BLOCK = 2048
_LAUNCH = {"num_warps": 8} if os.environ.get("TRITON_INTERPRET") == "1" else {"num_warps": 8, "enable_fp_fusion": False}


@triton.jit(do_not_specialize=["n"])  # one compiled variant per dtype: a shape set's odd length compiled anew
def _stats_kernel(a_ptr, b_ptr, tol_ptr, part_ptr, n, BLOCK: tl.constexpr, WIDTHS: tl.constexpr):
    """Partial sums of one block: the same float64 arithmetic as `compare._float_stats`, lane by lane."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a_raw = tl.load(a_ptr + offs, mask=inside, other=0.0)
    b_raw = tl.load(b_ptr + offs, mask=inside, other=0.0)
    a = a_raw.to(tl.float64)
    b = b_raw.to(tl.float64)
    atol = tl.load(tol_ptr)
    rtol = tl.load(tol_ptr + 1)
    a_nan = a != a
    b_nan = b != b
    b_inf = tl.abs(b) > 1.7976931348623157e308
    same_special = (a_nan & b_nan) | (b_inf & (a == b))
    diff = tl.abs(a - b)
    ok = (diff <= atol + rtol * tl.abs(b)) | same_special
    finite = (tl.abs(a) <= 1.7976931348623157e308) & (tl.abs(b) <= 1.7976931348623157e308) & inside
    d = tl.where(finite, diff, 0.0)
    bf = tl.where(finite, b, 0.0)
    base = part_ptr + pid.to(tl.int64) * 11
    tl.store(base + 0, tl.sum(tl.where(ok | ~inside, 0.0, 1.0), axis=0))
    tl.store(base + 1, tl.sum(tl.where(finite, 1.0, 0.0), axis=0))
    tl.store(base + 2, tl.sum(tl.where((a_nan != b_nan) & inside, 1.0, 0.0), axis=0))
    tl.store(base + 3, tl.max(d, axis=0))
    tl.store(base + 4, tl.sum(d, axis=0))
    tl.store(base + 5, tl.sum(d * d, axis=0))
    tl.store(base + 6, tl.sum(bf * bf, axis=0))
    if WIDTHS:  # float32 only: how many finite non-zero values have the 13 low mantissa bits all zero
        a_counted = (tl.abs(a_raw) <= 3.4028234663852886e38) & (a_raw != 0.0) & inside
        b_counted = (tl.abs(b_raw) <= 3.4028234663852886e38) & (b_raw != 0.0) & inside
        a_short = a_counted & ((a_raw.to(tl.int32, bitcast=True) & 8191) == 0)
        b_short = b_counted & ((b_raw.to(tl.int32, bitcast=True) & 8191) == 0)
        tl.store(base + 7, tl.sum(tl.where(a_counted, 1.0, 0.0), axis=0))
        tl.store(base + 8, tl.sum(tl.where(a_short, 1.0, 0.0), axis=0))
        tl.store(base + 9, tl.sum(tl.where(b_counted, 1.0, 0.0), axis=0))
        tl.store(base + 10, tl.sum(tl.where(b_short, 1.0, 0.0), axis=0))
    else:
        tl.store(base + 7, 0.0)
        tl.store(base + 8, 0.0)
        tl.store(base + 9, 0.0)
        tl.store(base + 10, 0.0)


def float_stats(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, chunk: int) -> dict[str, float]:
    """`compare._float_stats`'s numbers in one pass per chunk of `chunk` elements.  `ref` may be elsewhere (host
    memory): each chunk of it comes to `out`'s device in turn (`compare_output` chunks only then: with no float64
    temporaries, a reference on the device is compared whole)."""
    a_all, b_all = out.detach().reshape(-1), ref.detach().reshape(-1)
    n = b_all.numel()
    step = max(1, chunk)
    tol = torch.tensor([atol, rtol], dtype=torch.float64, device=a_all.device)
    widths = out.dtype == torch.float32
    partials = []
    for start in range(0, n, step):
        a, b = a_all[start : start + step], b_all[start : start + step].to(a_all.device)
        if not a.is_contiguous():
            a = a.contiguous()
        count = a.numel()
        blocks = triton.cdiv(count, BLOCK)
        part = torch.empty((blocks, len(STAT_NAMES)), dtype=torch.float64, device=a_all.device)
        # no fused multiply-add: the tolerance test rounds its product and its sum apart, as torch's does
        _stats_kernel[(blocks,)](a, b, tol, part, count, BLOCK=BLOCK, WIDTHS=widths, **_LAUNCH)
        partials.append(part)
    every = torch.cat(partials) if len(partials) > 1 else partials[0]
    sums = every.sum(dim=0)
    sums[_MAX] = every[:, _MAX].max()
    return dict(zip(STAT_NAMES, sums.tolist()))


_warmed: set[str] = set()


WARM_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
"""Compiled at the keeper's start, in this order (float32 first: most outputs; float64 compiles when first met)."""


def warm_up(device: torch.device) -> threading.Thread | None:
    """Compile the common variants in the background, without running them (the keeper calls this once it is ready:
    its first comparison would otherwise wait for the compile).  None where there is nothing to do."""
    key = str(device)
    if device.type != "cuda" or key in _warmed or os.environ.get("TRITON_INTERPRET") == "1":
        return None
    _warmed.add(key)

    def compile_once() -> None:
        try:
            with torch.cuda.device(device):
                tol = torch.empty(2, dtype=torch.float64, device=device)
                part = torch.empty((1, len(STAT_NAMES)), dtype=torch.float64, device=device)
                for dtype in WARM_DTYPES:  # allocations only: no kernel runs beside the keeper's work
                    x = torch.empty(BLOCK, dtype=dtype, device=device)
                    widths = dtype == torch.float32
                    compiled = _stats_kernel.warmup(
                        x, x, tol, part, BLOCK, BLOCK=BLOCK, WIDTHS=widths, grid=(1,), **_LAUNCH
                    )
                    load = getattr(compiled, "_init_handles", None)  # the module loaded, its launcher built
                    if callable(load):
                        load()
        except Exception:  # noqa: BLE001 - the first real comparison compiles (or fails) in the open instead
            _warmed.discard(key)

    thread = threading.Thread(target=compile_once, name="tritongym-compare-warm-up", daemon=True)
    thread.start()
    return thread
