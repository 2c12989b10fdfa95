"""Honest idiom: a LayerNorm kernel that keeps its own `weight` and `bias` (ones and zeros, as `nn.LayerNorm`
builds them) instead of the reference's `self.ln` submodule.  Nothing binds by name; built under the shared seed
they equal the reference's as built, so they get the reference's drawn values (`weights.bind_weights`)."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_affine_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * N + cols, centred * rstd * w + b, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.bias = torch.nn.Parameter(torch.zeros(hidden))
        self.eps = 1e-5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        flat = x.contiguous().view(-1, n)
        out = torch.empty_like(flat)
        layer_norm_affine_kernel[(flat.shape[0],)](
            flat, self.weight, self.bias, out, n, self.eps, BLOCK=triton.next_power_of_2(n)
        )
        return out.view(x.shape)
