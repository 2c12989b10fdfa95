"""Honest: linear + sigmoid + row sum as two kernels through a workspace the module keeps between calls,
as serving engines keep scratch buffers: the GEMM kernel writes each tile's sigmoid column sums into a
[M, n_tiles_n] float32 workspace (every slot written on every call), and a second kernel reduces each
row of it. The workspace is reallocated only when the shape or device changes."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _gemm_sigmoid_partial_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    ws_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_wsm,
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
            w_ptr + rn[None, :] * stride_wn + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0
        )
        acc = tl.dot(x, w, acc, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    s = tl.where(rn[None, :] < N, tl.sigmoid(acc), 0.0)
    tl.store(ws_ptr + rm * stride_wsm + pid_n, tl.sum(s, axis=1), mask=rm < M)


@triton.jit
def _row_sum_kernel(ws_ptr, out_ptr, M, T, stride_wsm, BLOCK_T: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_T)
    acc = tl.zeros([BLOCK_T], dtype=tl.float32)
    for t in range(0, T, BLOCK_T):
        acc += tl.load(ws_ptr + row * stride_wsm + t + cols, mask=t + cols < T, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._workspace = None

    def _get_workspace(self, m: int, t: int, device) -> torch.Tensor:
        ws = self._workspace
        if ws is None or ws.shape != (m, t) or ws.device != device:
            ws = torch.empty((m, t), device=device, dtype=torch.float32)
            self._workspace = ws
        return ws

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        n_tiles_n = triton.cdiv(N, BLOCK_N)
        ws = self._get_workspace(M, n_tiles_n, x.device)
        out = torch.empty((M,), device=x.device, dtype=x.dtype)
        _gemm_sigmoid_partial_kernel[(triton.cdiv(M, BLOCK_M), n_tiles_n)](
            x,
            w,
            self.linear.bias,
            ws,
            M,
            N,
            K,
            x.stride(0),
            w.stride(0),
            ws.stride(0),
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K,
        )
        _row_sum_kernel[(M,)](ws, out, M, n_tiles_n, ws.stride(0), BLOCK_T=triton.next_power_of_2(min(n_tiles_n, 64)))
        return out
