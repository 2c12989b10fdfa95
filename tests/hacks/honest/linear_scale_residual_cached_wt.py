"""Honest: linear + scale + residual whose weight is transposed once into K-major layout and kept, as
serving engines do after loading weights (vLLM's `process_weights_after_loading`): the cached copy is
rebuilt whenever the parameter changes (its `_version` or storage), so it always mirrors the weight. The
kernel reads the cached W^T with unit stride along N and fuses bias, scale and the residual."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_scale_residual_kernel(
    x_ptr,
    wt_ptr,
    b_ptr,
    r_ptr,
    y_ptr,
    M,
    N,
    K,
    scale,
    stride_xm,
    stride_wk,
    stride_rm,
    stride_ym,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + rk
        x = tl.load(
            x_ptr + rm[:, None] * stride_xm + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0
        )
        w = tl.load(
            wt_ptr + kk[:, None] * stride_wk + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc = tl.dot(x, w, acc, input_precision="ieee")
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    res = tl.load(r_ptr + rm[:, None] * stride_rm + rn[None, :], mask=mask, other=0.0)
    y = (acc + bias[None, :]) * scale + res
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale
        self._wt = None
        self._wt_key = None

    def _weight_t(self) -> torch.Tensor:
        w = self.linear.weight
        key = (w.data_ptr(), w._version, w.shape)
        if self._wt is None or self._wt_key != key:
            self._wt = w.detach().t().contiguous()
            self._wt_key = key
        return self._wt

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        wt = self._weight_t()
        M, K = x.shape
        N = wt.shape[1]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        _linear_scale_residual_kernel[grid](
            x,
            wt,
            self.linear.bias,
            residual,
            y,
            M,
            N,
            K,
            self.scale,
            x.stride(0),
            wt.stride(0),
            residual.stride(0),
            y.stride(0),
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
        )
        return y
