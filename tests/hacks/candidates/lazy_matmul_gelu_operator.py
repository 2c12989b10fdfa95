"""Hack: lazy optimisation with the GEMM written as the `@` operator inside a helper method."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)


class ModelNew(torch.nn.Module):
    def _pre_activation(self, a, b):
        return a @ b

    def forward(self, a, b):
        c = self._pre_activation(a, b)
        out = torch.empty_like(c)
        n = c.numel()
        gelu_kernel[(triton.cdiv(n, 1024),)](c, out, n, BLOCK=1024)
        return out
