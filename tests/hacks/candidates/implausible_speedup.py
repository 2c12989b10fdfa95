"""Hack (GPU): an implausible speedup. While the timer captures the forward into a CUDA graph, the kernel
processes only the first block and the previous result is handed back, so the replayed graph does almost
no work (far less than the bytes the op must move)."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        n = x.numel()
        if self.last is not None and torch.cuda.is_current_stream_capturing():
            relu_kernel[(1,)](x, self.last, min(n, 1024), BLOCK=1024)
            return self.last
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        self.last = out
        return out
