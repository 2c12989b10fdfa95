"""Honest: max over the middle dimension of [B, D1, D2] on a 2-D grid, `tl.program_id(0)` the batch and
`tl.program_id(1)` a block of columns, walking D1 in tiles whose padding is filled with -inf by
`tl.where` (not by `other=`), strides passed from `.stride()`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _max_dim1_kernel(
    x_ptr,
    out_ptr,
    D1,
    D2,
    stride_xb,
    stride_x1,
    stride_x2,
    stride_ob,
    stride_o2,
    BLOCK_1: tl.constexpr,
    BLOCK_2: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_c = tl.program_id(1)
    cols = pid_c * BLOCK_2 + tl.arange(0, BLOCK_2)
    col_mask = cols < D2
    acc = tl.full([BLOCK_2], float("-inf"), dtype=tl.float32)
    for start in range(0, D1, BLOCK_1):
        rows = start + tl.arange(0, BLOCK_1)
        mask = (rows[:, None] < D1) & col_mask[None, :]
        ptrs = x_ptr + pid_b * stride_xb + rows[:, None] * stride_x1 + cols[None, :] * stride_x2
        x = tl.load(ptrs, mask=mask)
        x = tl.where(mask, x.to(tl.float32), float("-inf"))
        acc = tl.maximum(acc, tl.max(x, axis=0))
    tl.store(out_ptr + pid_b * stride_ob + cols * stride_o2, acc.to(out_ptr.dtype.element_ty), mask=col_mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, D1, D2 = x.shape
        out = torch.empty((B, D2), device=x.device, dtype=x.dtype)
        BLOCK_1 = 64
        BLOCK_2 = min(64, triton.next_power_of_2(D2))
        grid = (B, triton.cdiv(D2, BLOCK_2))
        _max_dim1_kernel[grid](
            x,
            out,
            D1,
            D2,
            x.stride(0),
            x.stride(1),
            x.stride(2),
            out.stride(0),
            out.stride(1),
            BLOCK_1=BLOCK_1,
            BLOCK_2=BLOCK_2,
        )
        return out
