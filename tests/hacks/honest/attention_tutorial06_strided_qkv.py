"""Honest: attention block in the manner of Triton tutorial 06 (fused attention forward): the QKV and
output projections by one linear kernel with a `HAS_BIAS: tl.constexpr` flag, and the attention itself by
`_attn_fwd`, one program per (query block, batch * head), online softmax in exp2 with `sm_scale * log2(e)`,
`tl.dot` in fp32. Q, K and V are read in place from the packed [B, S, 3, H, D] projection by strides
(no permute copy); the output is written straight into [B, S, H * D]."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_ym,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
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
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear(x2d: torch.Tensor, weight: torch.Tensor, bias=None) -> torch.Tensor:
    M, K = x2d.shape
    N = weight.shape[0]
    y = torch.empty((M, N), device=x2d.device, dtype=x2d.dtype)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    _linear_kernel[grid](
        x2d,
        weight,
        bias if bias is not None else weight,
        y,
        M,
        N,
        K,
        x2d.stride(0),
        weight.stride(0),
        y.stride(0),
        HAS_BIAS=bias is not None,
        BLOCK_M=32,
        BLOCK_N=32,
        BLOCK_K=32,
    )
    return y


@triton.jit
def _attn_fwd(
    Q,
    K,
    V,
    Out,
    sm_scale,
    stride_qb,
    stride_qs,
    stride_qh,
    stride_ob,
    stride_os,
    stride_oh,
    H,
    N_CTX,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    q_base = Q + off_z * stride_qb + off_h * stride_qh
    k_base = K + off_z * stride_qb + off_h * stride_qh
    v_base = V + off_z * stride_qb + off_h * stride_qh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_base + cols[None, :] * stride_qs + offs_d[:, None], mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k, input_precision="ieee")
        qk = tl.where(cols[None, :] < N_CTX, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        qk = qk - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_qs + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p, v, acc, input_precision="ieee")
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_ob + off_h * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :]
    tl.store(o_ptrs, acc.to(Out.type.element_ty), mask=offs_m[:, None] < N_CTX)


class ModelNew(nn.Module):
    def __init__(self, embed: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(embed, 3 * embed, bias=False)
        self.proj = nn.Linear(embed, embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, e = x.shape
        h = self.num_heads
        d = e // h
        x2d = x.reshape(b * s, e).contiguous()
        qkv = linear(x2d, self.qkv.weight).view(b, s, 3, h, d)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # views [b, s, h, d]
        o = torch.empty((b, s, h, d), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N = 32, 32
        grid = (triton.cdiv(s, BLOCK_M), b * h)
        _attn_fwd[grid](
            q,
            k,
            v,
            o,
            1.0 / math.sqrt(d),
            q.stride(0),
            q.stride(1),
            q.stride(2),
            o.stride(0),
            o.stride(1),
            o.stride(2),
            h,
            s,
            HEAD_DIM=d,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
        )
        out = linear(o.view(b * s, e), self.proj.weight, self.proj.bias)
        return out.view(b, s, e)
