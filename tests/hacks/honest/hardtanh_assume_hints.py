"""Honest: HardTanh with compiler hints as vendor kernels write them: `tl.assume` on the sizes,
`tl.multiple_of` / `tl.max_contiguous` on the offsets, typed host code, module-level bounds and an
`__all__`."""

from __future__ import annotations

import torch
import torch.nn as nn
import triton
import triton.language as tl

__all__ = ["ModelNew", "hardtanh"]

MIN_VAL: float = -1.0
MAX_VAL: float = 1.0
BLOCK_SIZE: int = 1024


@triton.jit
def _hardtanh_kernel(x_ptr, y_ptr, n_elements, min_val, max_val, BLOCK_SIZE: tl.constexpr):
    tl.assume(n_elements > 0)
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    offsets = tl.max_contiguous(tl.multiple_of(offsets, BLOCK_SIZE), BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.minimum(tl.maximum(x, min_val), max_val)
    tl.store(y_ptr + offsets, y, mask=mask)


def hardtanh(x: torch.Tensor, min_val: float = MIN_VAL, max_val: float = MAX_VAL) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n_elements: int = x.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _hardtanh_kernel[grid](x, y, n_elements, min_val, max_val, BLOCK_SIZE=BLOCK_SIZE)
    return y


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hardtanh(x)
