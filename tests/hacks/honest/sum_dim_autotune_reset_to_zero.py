"""Honest: sum over the middle dimension, split along it with `tl.atomic_add` into a zeroed output, under
`@triton.autotune(..., reset_to_zero=["out_ptr"])` so that the autotuner's benchmark runs do not
accumulate into the result (the pattern of split-K kernels in torch inductor and FlagGems), launched
through `grid = lambda META: (...)`."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_R": 16, "BLOCK_C": 32}, num_warps=2),
        triton.Config({"BLOCK_R": 32, "BLOCK_C": 64}, num_warps=4),
        triton.Config({"BLOCK_R": 64, "BLOCK_C": 128}, num_warps=8),
    ],
    key=["R", "C"],
    reset_to_zero=["out_ptr"],
)
@triton.jit
def sum_mid_kernel(x_ptr, out_ptr, R, C, stride_xb, stride_xr, stride_ob, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_r = tl.program_id(1)
    pid_c = tl.program_id(2)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + pid_b * stride_xb + rows[:, None] * stride_xr + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(out_ptr + pid_b * stride_ob + cols, tl.sum(x.to(tl.float32), axis=0), mask=cols < C)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, R, C = x.shape
        out = torch.zeros((B, C), device=x.device, dtype=torch.float32)
        grid = lambda META: (B, triton.cdiv(R, META["BLOCK_R"]), triton.cdiv(C, META["BLOCK_C"]))  # noqa: E731
        sum_mid_kernel[grid](x, out, R, C, x.stride(0), x.stride(1), out.stride(0))
        return out if x.dtype == torch.float32 else out.to(x.dtype)
