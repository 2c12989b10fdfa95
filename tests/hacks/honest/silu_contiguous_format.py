"""Honest: SiLU whose host code follows torch-extension habits: the output allocated with
`torch.empty_like(x, memory_format=torch.contiguous_format)`, a non-contiguous input copied with
`.contiguous()` after a `warnings.warn`, the element count from `math.prod(x.shape)`, and the kernel
dispatched on the element dtype for its compute precision."""

import math
import warnings

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_kernel(x_ptr, y_ptr, n_elements, UPCAST: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    y = x / (1.0 + tl.exp(-x))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def silu(x: torch.Tensor) -> torch.Tensor:
    if not x.is_contiguous():
        warnings.warn("silu: input is not contiguous, copying it", stacklevel=2)
        x = x.contiguous()
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    n_elements = math.prod(x.shape)
    if n_elements == 0:
        return y
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _silu_kernel[grid](x, y, n_elements, UPCAST=x.dtype in (torch.float16, torch.bfloat16), BLOCK_SIZE=BLOCK_SIZE)
    return y


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return silu(x)
