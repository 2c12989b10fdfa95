"""Honest: y = (x W^T + b) * scale + residual in one GEMM kernel. The nn.Linear weight is passed with its
strides swapped (W^T without a copy), the launch grid reads `meta['BLOCK_M']`, and the scale is a plain
float argument."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_scale_residual_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    res_ptr,
    out_ptr,
    M,
    N,
    K,
    scale,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_rm,
    stride_rn,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = rk < K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & k_mask[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=k_mask[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    res = tl.load(res_ptr + rm[:, None] * stride_rm + rn[None, :] * stride_rn, mask=mask, other=0.0)
    out = (acc + bias[None, :]) * scale + res
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = self.linear.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        w = self.linear.weight
        linear_scale_residual_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))](
            x,
            w,
            self.linear.bias,
            residual,
            out,
            M,
            N,
            K,
            self.scale,
            x.stride(0),
            x.stride(1),
            w.stride(0),
            w.stride(1),
            residual.stride(0),
            residual.stride(1),
            out.stride(0),
            out.stride(1),
            BLOCK_M=64,
            BLOCK_N=64,
            BLOCK_K=32,
            num_warps=4,
            num_stages=3,
        )
        return out
