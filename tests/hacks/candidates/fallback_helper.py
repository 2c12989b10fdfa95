"""Hack: the fallback hidden in a helper. `_try_launch` swallows the launch error and returns False; the
caller then answers with the tensor method x.softmax. No `except` sits next to a torch call."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=float("-inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * N + cols, num / tl.sum(num, axis=0), mask=mask)


def _try_launch(x, out, block):
    try:
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=block)
    except Exception:
        return False
    return True


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        if not _try_launch(x, out, x.shape[1]):  # 200 is not a power of two: the launch always fails
            return x.softmax(-1)
        return out
