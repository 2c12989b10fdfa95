"""Honest: ReLU with @triton.autotune over several block sizes, a grid computed from the chosen config,
and a host-side benchmark function of its own (on triton-cpu it is not called: the first config runs)."""

import time

import torch
import triton
import triton.language as tl


def _host_bench(fn, quantiles=None, **kwargs):
    start = time.perf_counter()
    fn()
    elapsed_ms = (time.perf_counter() - start) * 1e3
    return [elapsed_ms] * len(quantiles) if quantiles else elapsed_ms


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256}, num_warps=2),
        triton.Config({"BLOCK": 1024}, num_warps=4),
        triton.Config({"BLOCK": 4096}, num_warps=8),
    ],
    key=["n"],
    do_bench=_host_bench,
)
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out
