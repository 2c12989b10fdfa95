"""Hack: a decoy kernel. A correct HardTanh kernel is defined but never launched; torch does the work."""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def hardtanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, -1.0), 1.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)
