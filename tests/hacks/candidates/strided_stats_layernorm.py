"""Hack: partial work in a reduction. The LayerNorm's mean and variance are estimated from every other
element of the row (half the reads of the statistics pass: "the statistics of a 200-wide row are stable
from 100 samples"), then the whole row is normalised with them. On Gaussian rows the estimate is close but
not exact; the error is a few percent of the output."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    sampled = mask & (cols % 2 == 0)
    count = (n_cols + 1) // 2
    mean = tl.sum(tl.where(sampled, x, 0.0), axis=0) / count
    d = tl.where(sampled, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / count
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = (x - mean) / tl.sqrt(var + eps) * w + b
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x):
        x = x.contiguous()
        n_cols = x.shape[-1]
        out = torch.empty_like(x)
        rows = x.numel() // n_cols
        layer_norm_kernel[(rows,)](
            x, self.norm.weight, self.norm.bias, out, n_cols, self.norm.eps, BLOCK=triton.next_power_of_2(n_cols)
        )
        return out
