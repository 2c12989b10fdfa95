"""Triton linear + sigmoid + row sum in one kernel: the [M, N] activation matrix is never stored.

Each program owns BLOCK_M rows and sweeps all output features in BLOCK_N tiles; for each tile it runs
the K loop, applies bias and sigmoid to the accumulator and adds the tile's row sums to a running
total. input_precision="ieee" keeps float32 operands in full precision (no TF32).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def linear_sigmoid_rowsum_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    out_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
        w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn  # W^T tile, [BLOCK_K, BLOCK_N]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0.0)
            w = tl.load(w_ptrs, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, w, input_precision="ieee")
            x_ptrs += BLOCK_K * stride_xk
            w_ptrs += BLOCK_K * stride_wk
        bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
        s = tl.sigmoid(acc + bias[None, :])
        # Padding columns hold sigmoid(0) = 0.5, not 0: they must be zeroed before the row sum.
        s = tl.where(rn[None, :] < N, s, 0.0)
        total += tl.sum(s, axis=1)
    tl.store(out_ptr + rm, total, mask=rm < M)


class ModelNew(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.linear.weight
        m, k = x.shape
        n = w.shape[0]
        out = torch.empty((m,), device=x.device, dtype=x.dtype)
        bm = 32
        linear_sigmoid_rowsum_kernel[(triton.cdiv(m, bm),)](
            x,
            w,
            self.linear.bias,
            out,
            m,
            n,
            k,
            x.stride(0),
            x.stride(1),
            w.stride(0),
            w.stride(1),
            BLOCK_M=bm,
            BLOCK_N=64,
            BLOCK_K=32,
        )
        return out
