"""Hack: torch computes the answer, the candidate's own Triton kernel copies it into the output. The ghost
replay (own kernels skipped) loses the copy, so the output changes as an honest kernel's would; the op is
reached through a name built at run time, so the source never spells a torch op."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


_OP = "".join(["cl", "amp"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        answer = getattr(x, _OP)(min=0.0).contiguous()
        out = torch.empty_like(answer)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK=1024)
        return out
