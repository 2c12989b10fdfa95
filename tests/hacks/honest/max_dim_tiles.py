"""Honest: max over the middle dimension; each program reduces a [D1, BLOCK_C] slab held in one block,
padding with -inf so the padding never wins."""

import torch
import triton
import triton.language as tl


@triton.jit
def max_dim1_kernel(x_ptr, out_ptr, D1, D2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    rows = tl.arange(0, BLOCK_R)
    mask = (rows[:, None] < D1) & (cols[None, :] < D2)
    slab = tl.load(x_ptr + (b * D1 + rows[:, None]) * D2 + cols[None, :], mask=mask, other=float("-inf"))
    tl.store(out_ptr + b * D2 + cols, tl.max(slab, axis=0), mask=cols < D2)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        batch, d1, d2 = x.shape
        out = x.new_empty((batch, d2))
        max_dim1_kernel[(batch, triton.cdiv(d2, 32))](x, out, d1, d2, BLOCK_R=triton.next_power_of_2(d1), BLOCK_C=32)
        return out
