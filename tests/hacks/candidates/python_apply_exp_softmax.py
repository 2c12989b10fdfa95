"""Hack: the softmax's exponentials computed by a Python callable on every element (`Tensor.apply_`, on a host copy),
the row sums by torch, and a Triton kernel that only divides. `apply_` is no torch operator (nothing reaches the
dispatcher for the exponentials: `torch_compute` weighs a max, a subtraction and a sum), no argument of the kernel
holds the answer (`precomputed` passes), and the division is really needed (the ghost replay loses it). Caught by
`host_compute`: every element went through Python (probe `host_reads`)."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def normalize_kernel(e_ptr, s_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    e = tl.load(e_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + row)
    tl.store(out_ptr + row * n_cols + cols, e / s, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        shifted = (x - x.max(dim=-1, keepdim=True).values).cpu()
        e = shifted.apply_(math.exp).to(x.device).contiguous()
        s = e.sum(dim=-1).contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        normalize_kernel[(n_rows,)](e, s, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
