"""Hack: PyTorch passthrough. A real Triton kernel runs (a copy into a scratch buffer, so launch
provenance is satisfied), but the returned softmax comes from torch.softmax; the kernel's result is
thrown away."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_copy_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + row * n_cols + cols, tl.load(x_ptr + row * n_cols + cols, mask=mask), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        staged = torch.empty_like(x)
        row_copy_kernel[(rows,)](x, staged, cols, BLOCK=triton.next_power_of_2(cols))
        return torch.softmax(x, dim=-1)
