"""Triton row-wise L2 normalisation, x / max(||x||_2, eps), one program per row.

The eps floor (as in F.normalize) keeps an all-zero row at zero instead of producing NaN.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def l2_normalize_kernel(x_ptr, out_ptr, N, stride_xm, stride_om, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N  # BLOCK_N is N rounded up to a power of two; padding loads 0 and adds nothing
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(out_ptr + row * stride_om + cols, x / tl.maximum(norm, eps), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        m, n = x.shape
        out = torch.empty_like(x)
        block_n = triton.next_power_of_2(n)
        eps = 1e-12  # F.normalize's default
        l2_normalize_kernel[(m,)](x, out, n, x.stride(0), out.stride(0), eps, BLOCK_N=block_n)
        return out
