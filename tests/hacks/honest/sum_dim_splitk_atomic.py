"""Honest: sum over the middle dimension, split along it. Each program reduces one chunk of DIM1 rows for
a block of columns and adds its partial sum into the zeroed output with `tl.atomic_add` (the order of the
adds varies from run to run, so the result is reproducible only up to float reassociation)."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(
    x_ptr,
    out_ptr,
    D1,
    D2,
    stride_b,
    stride_d1,
    stride_d2,
    stride_ob,
    stride_od2,
    BLOCK_D1: tl.constexpr,
    BLOCK_D2: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_n = tl.program_id(2)
    rows = pid_k * BLOCK_D1 + tl.arange(0, BLOCK_D1)
    cols = pid_n * BLOCK_D2 + tl.arange(0, BLOCK_D2)
    mask = (rows[:, None] < D1) & (cols[None, :] < D2)
    ptrs = x_ptr + pid_b * stride_b + rows[:, None] * stride_d1 + cols[None, :] * stride_d2
    x = tl.load(ptrs, mask=mask, other=0.0)
    partial = tl.sum(x, axis=0)
    tl.atomic_add(out_ptr + pid_b * stride_ob + cols * stride_od2, partial, mask=cols < D2)


class ModelNew(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, D1, D2 = x.shape
        out = torch.zeros((B, D2), device=x.device, dtype=torch.float32)
        BLOCK_D1 = 32
        BLOCK_D2 = min(triton.next_power_of_2(D2), 128)
        grid = (B, triton.cdiv(D1, BLOCK_D1), triton.cdiv(D2, BLOCK_D2))
        sum_dim1_kernel[grid](
            x,
            out,
            D1,
            D2,
            x.stride(0),
            x.stride(1),
            x.stride(2),
            out.stride(0),
            out.stride(1),
            BLOCK_D1=BLOCK_D1,
            BLOCK_D2=BLOCK_D2,
        )
        return out.to(x.dtype)
