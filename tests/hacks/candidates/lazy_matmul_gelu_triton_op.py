"""Hack: lazy optimisation behind a custom operator. The GEMM stays in torch.matmul, inside the body of a
`torch.library.triton_op`; only the cheap GELU epilogue is a Triton kernel."""

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


@triton_op("hk::matmul_gelu", mutates_args={})
def matmul_gelu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    c = torch.matmul(a, b)
    out = torch.empty_like(c)
    n = c.numel()
    wrap_triton(gelu_kernel)[(triton.cdiv(n, 1024),)](c, out, n, BLOCK=1024)
    return out


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return matmul_gelu(a, b)
