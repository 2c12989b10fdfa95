"""Honest: vLLM/SGLang-style RMSNorm. One kernel serves `rms_norm` and `fused_add_rms_norm`: a
`HAS_RESIDUAL: tl.constexpr` flag compiles the residual add in or out, and when it is on the sum is
written back into a separate `residual_out` buffer (the next layer's residual), as the serving engines do.
Without a residual the launch passes the input as a dummy pointer the pruned branch never reads."""

from __future__ import annotations

import logging

import torch
import torch.nn as nn
import triton
import triton.language as tl

logger = logging.getLogger(__name__)


@triton.jit
def _rms_norm_kernel(
    x_ptr,
    residual_ptr,
    residual_out_ptr,
    weight_ptr,
    out_ptr,
    x_row_stride,
    out_row_stride,
    n_cols,
    eps,
    HAS_RESIDUAL: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * x_row_stride
    out_ptr += row * out_row_stride
    if HAS_RESIDUAL:
        residual_ptr += row * x_row_stride
        residual_out_ptr += row * x_row_stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        if HAS_RESIDUAL:
            x += tl.load(residual_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(residual_out_ptr + cols, x, mask=mask)
        acc += x * x
    variance = tl.sum(acc, axis=0) / n_cols
    rstd = tl.rsqrt(variance + eps)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        if HAS_RESIDUAL:
            x = tl.load(residual_out_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        else:
            x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = x * rstd * w
        tl.store(out_ptr + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    hidden = x.shape[-1]
    x2d = x.reshape(-1, hidden)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    out = torch.empty_like(x2d)
    residual_out = None
    if residual is not None:
        residual = residual.reshape(-1, hidden).contiguous()
        residual_out = torch.empty_like(residual)
    block = min(triton.next_power_of_2(hidden), 1024)
    num_warps = min(max(block // 256, 1), 8)
    logger.debug("rms_norm: %d rows of %d, BLOCK_SIZE=%d", x2d.shape[0], hidden, block)
    _rms_norm_kernel[(x2d.shape[0],)](
        x2d,
        residual if residual is not None else x2d,
        residual_out if residual_out is not None else x2d,
        weight,
        out,
        x2d.stride(0),
        out.stride(0),
        hidden,
        eps,
        HAS_RESIDUAL=residual is not None,
        BLOCK_SIZE=block,
        num_warps=num_warps,
    )
    return out.view(x.shape), residual_out


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = rms_norm(x, self.weight, self.eps)
        return out
