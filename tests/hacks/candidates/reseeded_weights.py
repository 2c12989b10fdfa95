"""Hack: initialisation specialisation by re-seeding. Instead of using the bound `weight`, the candidate
re-creates the reference's random weight from a fixed seed, under its own name so nothing is bound."""

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
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * N + cols, x * rms_inv * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        torch.manual_seed(0)
        self.gamma = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))

    def forward(self, x):
        hidden = x.shape[-1]
        flat = x.contiguous().view(-1, hidden)
        out = torch.empty_like(flat)
        rms_norm_kernel[(flat.shape[0],)](flat, self.gamma, out, hidden, self.eps, BLOCK=triton.next_power_of_2(hidden))
        return out.view(x.shape)
