"""Honest: isnan as a pointwise Triton kernel writing a fresh boolean output (`x != x` is true only for NaN)."""

import torch
import triton
import triton.language as tl


@triton.jit
def isnan_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x != x, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, dtype=torch.bool, device=x.device)
        n = x.numel()
        isnan_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
