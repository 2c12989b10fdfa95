"""Honest: a softmax kernel launched in a loop (a warm-up written into the forward, as sampled RL code does), each
pass into a fresh `torch.empty_like` output, the last one returned: every output after the first is allocated
after the own kernel already computed this call's answer, in memory the allocator may hand back holding it."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf")))
    row_max = tl.max(m, axis=0)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        s += tl.exp(tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf")) - row_max)
    total = tl.sum(s, axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride + cols, tl.exp(x - row_max) / total, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        block = min(triton.next_power_of_2(cols), 1024)
        y = None
        for _ in range(3):
            y = torch.empty_like(x)
            softmax_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=block)
        return y
