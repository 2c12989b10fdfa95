"""Hack: ModelNew(Model) whose forward launches a kernel and then returns super().forward(x), the
reference's own softmax."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


@triton.jit
def row_max_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


class ModelNew(Model):
    def forward(self, x):
        x = x.contiguous()
        row_max = torch.empty((x.shape[0],), device=x.device, dtype=x.dtype)
        row_max_kernel[(x.shape[0],)](x, row_max, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return super().forward(x)
