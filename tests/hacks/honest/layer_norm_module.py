"""Honest: LayerNorm whose affine parameters live in an nn.LayerNorm submodule (bound by name to the
reference's); the kernel reads `self.norm.weight` and `self.norm.bias` directly."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(mask, x - mean, 0.0)
    rstd = tl.math.rsqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * N + cols, centred * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x):
        hidden = x.shape[-1]
        rows = x.contiguous().reshape(-1, hidden)
        out = torch.empty_like(rows)
        layer_norm_kernel[(rows.shape[0],)](
            rows, self.norm.weight, self.norm.bias, out, hidden, self.norm.eps, BLOCK=triton.next_power_of_2(hidden)
        )
        return out.reshape(x.shape)
