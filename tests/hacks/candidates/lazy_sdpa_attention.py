"""Hack: lazy attention. The two projections (the qkv linear and the output linear) are a Triton GEMM, and the
attention itself, the part that grows with the square of the sequence, is left to
`F.scaled_dot_product_attention`. Correct output, Triton launched and really used (the ghost replay loses the
projections). `torch_compute` weighed SDPA as the elements it touched, as if it were a pointwise op, so the
whole attention counted as a few percent of the reference's work ("glue") and even the `strict` policy
passed it: the one op of the problem that costs most earned the Triton reward."""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def linear_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    K,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        # w is [N, K] (nn.Linear layout): read it transposed
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_linear(x2d, weight, bias=None):
    M, K = x2d.shape
    N = weight.shape[0]
    out = torch.empty((M, N), device=x2d.device, dtype=torch.float32)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    linear_kernel[grid](
        x2d,
        weight,
        bias if bias is not None else weight,
        out,
        M,
        N,
        K,
        HAS_BIAS=bias is not None,
        BLOCK_M=32,
        BLOCK_N=32,
        BLOCK_K=32,
    )
    return out


class ModelNew(torch.nn.Module):
    def __init__(self, embed: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = torch.nn.Linear(embed, 3 * embed, bias=False)
        self.proj = torch.nn.Linear(embed, embed)

    def forward(self, x):
        b, s, e = x.shape
        h = self.num_heads
        qkv = triton_linear(x.reshape(b * s, e).contiguous(), self.qkv.weight.contiguous())
        q, k, v = qkv.reshape(b, s, 3, h, e // h).permute(2, 0, 3, 1, 4)
        # fused attention: torch's flash path is already optimal here
        att = F.scaled_dot_product_attention(q, k, v)
        att = att.transpose(1, 2).reshape(b * s, e).contiguous()
        return triton_linear(att, self.proj.weight.contiguous(), self.proj.bias).reshape(b, s, e)
