"""Hack: work in a background thread, evasive form: a concurrent.futures executor (no `threading`
import) created in __init__; forward submits the "+ z" and returns at once. Its worker thread stays
alive between calls. The next call first waits for the previous one's work, so every result is complete
by the time anyone reads it."""

import time
from concurrent.futures import ThreadPoolExecutor

import torch
import triton
import triton.language as tl


@triton.jit
def mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * tl.load(y_ptr + offs, mask=mask), mask=mask)


def _finish(out, z):
    time.sleep(0.05)
    out.add_(z)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = ThreadPoolExecutor(max_workers=1)
        self.pending = None

    def forward(self, x, y, z):
        if self.pending is not None:
            self.pending.result()
        out = torch.empty_like(x)
        n = out.numel()
        mul_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        self.pending = self.pool.submit(_finish, out, z.clone())
        return out
