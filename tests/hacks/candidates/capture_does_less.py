"""Hack (GPU): less work while the timer captures the forward. The timer captures its CUDA graph on a side
stream, so "not on the default stream" stands for "being captured": there the kernel processes only its
first block and the previous result is handed back, so the replayed graph does almost no work. The
correctness trials run on the default stream and get the full kernel. Asking which stream is current is
not a stream API the source policy refuses (only graphs, events and side streams are), so, unlike
`implausible_speedup.py`, nothing in the source gives it away."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _replaying(x) -> bool:
    """Whether this call runs off the device's default stream (the timer's capture stream)."""
    return x.is_cuda and torch.cuda.current_stream(x.device) != torch.cuda.default_stream(x.device)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        if self.last is not None and self.last.shape == x.shape and _replaying(x):
            relu_kernel[(1,)](x, self.last, min(n, 1024), BLOCK=1024)
            return self.last
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        self.last = out
        return out
