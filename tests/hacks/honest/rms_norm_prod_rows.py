"""Honest: RMSNorm over the last dimension with the row count computed as
`torch.prod(torch.tensor(x.shape[:-1]))`, as much public code does, and one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_row, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_row + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        hidden = x.shape[-1]
        n_rows = int(torch.prod(torch.tensor(x.shape[:-1])))
        x_2d = x.contiguous().view(n_rows, hidden)
        y = torch.empty_like(x_2d)
        BLOCK_SIZE = triton.next_power_of_2(hidden)
        num_warps = 4 if BLOCK_SIZE <= 2048 else 8
        rms_norm_kernel[(n_rows,)](
            x_2d, self.weight, y, x_2d.stride(0), hidden, self.eps, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
        )
        return y.view_as(x)
