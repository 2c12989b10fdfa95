"""Honest: RMSNorm with its weight in an nn.Parameter named like the reference's, launched from a helper
host function that flattens the leading dimensions."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    rms_inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * N + cols, x * rms_inv * w, mask=mask)


def rms_norm(x, weight, eps):
    hidden = x.shape[-1]
    rows = x.contiguous().view(-1, hidden)
    out = torch.empty_like(rows)
    rms_norm_kernel[(rows.shape[0],)](rows, weight, out, hidden, eps, BLOCK=triton.next_power_of_2(hidden))
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
