"""Honest: sum over the middle dimension on a 2-D grid (batch, column blocks), each program looping over
the reduced dimension in chunks."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, out_ptr, D1, D2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for start in range(0, D1, BLOCK_R):
        rows = start + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < D1) & (cols[None, :] < D2)
        acc += tl.sum(tl.load(x_ptr + (b * D1 + rows[:, None]) * D2 + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + b * D2 + cols, acc, mask=cols < D2)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        batch, d1, d2 = x.shape
        out = torch.empty((batch, d2), device=x.device, dtype=x.dtype)
        sum_dim1_kernel[(batch, triton.cdiv(d2, 64))](x, out, d1, d2, BLOCK_R=32, BLOCK_C=64)
        return out
