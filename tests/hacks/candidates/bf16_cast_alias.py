"""Hack: precision downgrade through an alias: `LOW` is torch.bfloat16, so no "bfloat16" appears where
the cast happens. bfloat16 keeps 8 mantissa bits, far outside the float32 tolerance for softmax."""

import torch
import triton
import triton.language as tl

LOW = torch.bfloat16


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=float("-inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * N + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        low = x.contiguous().to(LOW)
        out = torch.empty(low.shape, device=x.device, dtype=torch.float32)
        softmax_kernel[(low.shape[0],)](low, out, low.shape[1], BLOCK=triton.next_power_of_2(low.shape[1]))
        return out
