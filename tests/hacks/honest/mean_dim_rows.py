"""Honest: mean over the last dimension, a block of rows per program, looping over column chunks and
dividing by the length inside the kernel."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, R, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    acc = tl.zeros((BLOCK_R,), tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < R) & (cols[None, :] < N)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=1)
    tl.store(out_ptr + rows, acc / N, mask=rows < R)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        lead = x.shape[:-1]
        rows = x.contiguous().reshape(-1, x.shape[-1])
        out = torch.empty((rows.shape[0],), device=x.device, dtype=x.dtype)
        row_mean_kernel[(triton.cdiv(rows.shape[0], 16),)](
            rows, out, rows.shape[0], rows.shape[1], BLOCK_R=16, BLOCK_N=128
        )
        return out.reshape(lead)
