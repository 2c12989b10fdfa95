"""Triton multi-head self-attention: a GEMM for the QKV projection, a fused flash-attention kernel,
and the same GEMM (with bias) for the output projection.

The attention kernel reads q, k and v for head h straight out of the [tokens, 3 * embed] QKV matrix
(column offsets 0, embed and 2 * embed, plus h * head_dim) and writes its result into the
[tokens, embed] layout the output projection reads, so no reshape/permute copies are needed. It
streams over keys in BLOCK_N blocks with an online softmax (running max and sum, rescaling the
partial output when the max grows), so the [seq, seq] score matrix is never stored.
input_precision="ieee" keeps float32 operands in full precision (no TF32).
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def linear_kernel(
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
    stride_om,
    stride_on,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn  # W^T tile, [BLOCK_K, BLOCK_N]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0)[None, :]
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, acc, mask=out_mask)


@triton.jit
def attention_kernel(
    qkv_ptr,
    out_ptr,
    S,
    H,
    E,
    D,
    sm_scale,
    stride_qkv,
    stride_out,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < D
    head = qkv_ptr + b * S * stride_qkv + h * D  # row (b, s) of the QKV matrix, head h's q columns
    q = tl.load(
        head + offs_m[:, None] * stride_qkv + offs_d[None, :], mask=(offs_m[:, None] < S) & d_mask[None, :], other=0.0
    )
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, S, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        kv_mask = (offs_n[:, None] < S) & d_mask[None, :]
        k = tl.load(head + E + offs_n[:, None] * stride_qkv + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(head + 2 * E + offs_n[:, None] * stride_qkv + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        s = tl.where(offs_n[None, :] < S, s, float("-inf"))  # keys past the end get zero weight
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)  # rescales what was accumulated under the old max (0 on the first block)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        out_ptr + (b * S + offs_m[:, None]) * stride_out + h * D + offs_d[None, :],
        out,
        mask=(offs_m[:, None] < S) & d_mask[None, :],
    )


def _linear(x: torch.Tensor, layer: torch.nn.Linear) -> torch.Tensor:
    w = layer.weight
    m, k = x.shape
    n = w.shape[0]
    out = torch.empty((m, n), device=x.device, dtype=x.dtype)
    bm, bn = 64, 64
    linear_kernel[(triton.cdiv(m, bm), triton.cdiv(n, bn))](
        x,
        w,
        layer.bias,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        out.stride(0),
        out.stride(1),
        HAS_BIAS=layer.bias is not None,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=32,
    )
    return out


class ModelNew(torch.nn.Module):
    def __init__(self, embed: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = torch.nn.Linear(embed, 3 * embed, bias=False)
        self.proj = torch.nn.Linear(embed, embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, e = x.shape
        h = self.num_heads
        d = e // h
        qkv = _linear(x.reshape(b * s, e), self.qkv)  # [b * s, 3 * e]
        attn = torch.empty((b * s, e), device=x.device, dtype=x.dtype)
        block_m, block_n = 64, 64
        attention_kernel[(triton.cdiv(s, block_m), b * h)](
            qkv,
            attn,
            s,
            h,
            e,
            d,
            1.0 / math.sqrt(d),
            qkv.stride(0),
            attn.stride(0),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_D=max(16, triton.next_power_of_2(d)),
        )
        return _linear(attn, self.proj).view(b, s, e)
