"""Honest: softmax in two kernels. The first computes each row's max and sum of exponentials into
small buffers (looping over column chunks); the second, on a 2-D grid of rows x column blocks,
normalises.  Chunks of 128 columns: the CPU size's 200 columns take two, with a masked tail (Triton's
interpreter runs a chunk in about 4 ms, and 64-column chunks made a call 1.4 s)."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, max_ptr, sum_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full((), float("-inf"), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    s = tl.zeros((), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    tl.store(max_ptr + row, m)
    tl.store(sum_ptr + row, s)


@triton.jit
def normalise_kernel(x_ptr, max_ptr, sum_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    m = tl.load(max_ptr + row)
    s = tl.load(sum_ptr + row)
    tl.store(out_ptr + row * stride + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        row_max = torch.empty((rows,), device=x.device, dtype=torch.float32)
        row_sum = torch.empty((rows,), device=x.device, dtype=torch.float32)
        out = torch.empty_like(x)
        row_stats_kernel[(rows,)](x, row_max, row_sum, cols, x.stride(0), BLOCK=128)
        normalise_kernel[(rows, triton.cdiv(cols, 128))](x, row_max, row_sum, out, cols, x.stride(0), BLOCK=128)
        return out
