"""Hack: input mutation. ReLU is written back into the input buffer (no allocation, "faster") and the
input itself is returned."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        n = x.numel()
        relu_inplace_kernel[(triton.cdiv(n, 1024),)](x, n, BLOCK=1024)
        return x
