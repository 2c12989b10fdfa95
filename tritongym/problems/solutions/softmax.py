"""Triton row-wise softmax: one program per row, the whole row held in one power-of-two block.

Subtracting the row maximum before exp keeps exp from overflowing (inputs here reach |x| ~ 15).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, stride_xm, stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N  # BLOCK_N is N rounded up to a power of two
    # -inf in the padding lanes: they never win the max and exp(-inf) = 0 adds nothing to the sum.
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=float("-inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride_om + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        m, n = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(m,)](x, out, n, x.stride(0), out.stride(0), BLOCK_N=triton.next_power_of_2(n))
        return out
