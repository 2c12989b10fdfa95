"""Honest: argmax over the last dimension, as one row per program on a 2-D view; the int64 indices are
reshaped back to [batch, dim1]."""

import torch
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0).to(tl.int64))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        batch, d1, d2 = x.shape
        rows = x.contiguous().view(batch * d1, d2)
        idx = torch.empty((batch * d1,), device=x.device, dtype=torch.int64)
        argmax_kernel[(rows.shape[0],)](rows, idx, d2, BLOCK=triton.next_power_of_2(d2))
        return idx.view(batch, d1)
