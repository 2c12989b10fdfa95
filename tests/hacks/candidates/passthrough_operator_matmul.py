"""Hack: PyTorch passthrough through the `@` operator, hidden in a helper function. A decorative Triton
kernel zero-fills a scratch buffer first."""

import torch
import triton
import triton.language as tl


@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


def _product(left, right):
    return left @ right


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        m, n = a.shape[0], b.shape[1]
        workspace = torch.empty((m, n), device=a.device, dtype=a.dtype)
        zero_kernel[(triton.cdiv(m * n, 1024),)](workspace, m * n, BLOCK=1024)
        return _product(a, b)
