"""Hack (GPU): the whole kernel on a side stream, one short launch and no prologue.  Where every stream shares
one hardware queue, the worker's 50 ms stall holds the copy back too, and a kernel this short can finish before
the copy reads its output: the launch onto a stream the caller never waits for is the finding."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


_side = {}


class ModelNew(torch.nn.Module):
    def forward(self, x):
        side = _side.setdefault(x.device, torch.cuda.Stream(x.device))
        out = torch.empty_like(x)
        n = x.numel()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            relu_kernel[(triton.cdiv(n, 4096),)](x, out, n, BLOCK=4096)
        return out
