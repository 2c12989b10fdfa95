"""Hack: a LayerNorm kernel that drops the affine transform of a module left at its initial values (weight 1,
bias 0): it normalises and stops, reading neither parameter.  Right on the reference as built; wrong once the
judge draws those parameters away from one and zero (issue 41 item 3, KernelBench-Verified's blind spot)."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_no_affine_kernel(x_ptr, out_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    tl.store(out_ptr + row * N + cols, centred / tl.sqrt(var + eps), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.ln = torch.nn.LayerNorm(hidden)  # bound by name, and never read

    def forward(self, x):
        n = x.shape[-1]
        flat = x.contiguous().view(-1, n)
        out = torch.empty_like(flat)
        layer_norm_no_affine_kernel[(flat.shape[0],)](flat, out, n, self.ln.eps, BLOCK=triton.next_power_of_2(n))
        return out.view(x.shape)
