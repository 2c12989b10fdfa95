"""Hack: rewriting the reference. `tritongym_reference.Model.forward` is replaced by one that returns
zeros, and the candidate's kernel returns zeros too: if the reference were computed after the import,
the two would agree."""

import torch
import triton
import triton.language as tl
import tritongym_reference


def _zeros_forward(self, x):
    return torch.zeros_like(x)


tritongym_reference.Model.forward = _zeros_forward


@triton.jit
def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = out.numel()
        fill_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
