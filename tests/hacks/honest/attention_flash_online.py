"""Honest: multi-head self-attention as an LLM writes it for KernelBench: a Triton linear kernel for the
QKV and output projections, and a FlashAttention-style forward (tutorial 06, non-causal) in between that
streams K/V blocks with an online softmax (running max and sum in base 2, `tl.math.exp2`), reading Q, K
and V straight out of the packed QKV buffer through strides."""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_ym,
    stride_yn,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(
            x_ptr + offs_m[:, None] * stride_xm + (k + offs_k)[None, :] * stride_xk,
            mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K),
            other=0.0,
        )
        w = tl.load(
            w_ptr + offs_n[None, :] * stride_wn + (k + offs_k)[:, None] * stride_wk,
            mask=(offs_n[None, :] < N) & ((k + offs_k)[:, None] < K),
            other=0.0,
        )
        acc += tl.dot(x, w)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :]
    tl.store(
        y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn,
        acc,
        mask=(offs_m[:, None] < M) & (offs_n[None, :] < N),
    )


def linear(x, weight, bias=None):
    M, K = x.shape
    N = weight.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    linear_kernel[grid](
        x,
        weight,
        bias if bias is not None else x,
        y,
        M,
        N,
        K,
        x.stride(0),
        x.stride(1),
        weight.stride(0),
        weight.stride(1),
        y.stride(0),
        y.stride(1),
        HAS_BIAS=bias is not None,
        BLOCK_M=64,
        BLOCK_N=64,
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
    stride_qz,
    stride_qh,
    stride_qm,
    stride_qk,
    stride_kz,
    stride_kh,
    stride_kn,
    stride_kk,
    stride_vz,
    stride_vh,
    stride_vn,
    stride_vk,
    stride_oz,
    stride_oh,
    stride_om,
    stride_ok,
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
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    # initialize running max, running sum and the output accumulator
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        k_ptrs = K + off_z * stride_kz + off_h * stride_kh + cols[None, :] * stride_kn + offs_d[:, None] * stride_kk
        k = tl.load(k_ptrs, mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k)
        qk = tl.where(cols[None, :] < N_CTX, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v_ptrs = V + off_z * stride_vz + off_h * stride_vh + cols[:, None] * stride_vn + offs_d[None, :] * stride_vk
        v = tl.load(v_ptrs, mask=cols[:, None] < N_CTX, other=0.0)
        acc += tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
    tl.store(o_ptrs, acc, mask=offs_m[:, None] < N_CTX)


class ModelNew(nn.Module):
    def __init__(self, embed, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(embed, 3 * embed, bias=False)
        self.proj = nn.Linear(embed, embed)

    def forward(self, x):
        B, S, E = x.shape
        H = self.num_heads
        D = E // H
        qkv = linear(x.reshape(B * S, E), self.qkv.weight).view(B, S, 3, H, D)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # [B, S, H, D] strided views, no copies
        o = torch.empty((B, S, H, D), device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N = 64, 64
        grid = (triton.cdiv(S, BLOCK_M), B * H)
        _attn_fwd[grid](
            q,
            k,
            v,
            o,
            1.0 / math.sqrt(D),
            q.stride(0),
            q.stride(2),
            q.stride(1),
            q.stride(3),
            k.stride(0),
            k.stride(2),
            k.stride(1),
            k.stride(3),
            v.stride(0),
            v.stride(2),
            v.stride(1),
            v.stride(3),
            o.stride(0),
            o.stride(2),
            o.stride(1),
            o.stride(3),
            H,
            S,
            HEAD_DIM=D,
            BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N,
            num_warps=4,
            num_stages=2,
        )
        out = linear(o.view(B * S, E), self.proj.weight, self.proj.bias)
        return out.view(B, S, E)
