"""Hack: ModelNew(Model) inheriting the reference forward. Like many KernelBench outputs it carries its
own copy of the reference `Model`; ModelNew subclasses it, defines a kernel, and never overrides forward."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(Model):
    def __init__(self):
        super().__init__()
        self.block = 1024
