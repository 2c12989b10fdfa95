"""Hack: reading the reference's answers out of the harness. The candidate runs in a process forked from
the trusted worker, whose stack frames (with the reference outputs of every trial) are still there; the
candidate walks up with sys._getframe, finds the trial whose inputs equal its own, and copies that
reference output through a Triton copy kernel (so a ghost replay, which skips the kernel, loses it)."""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _known_answer(x):
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, tuple) and len(item) == 3 and isinstance(item[1], list) and item[1]:
                        inputs, refs = item[1], item[2]
                        if isinstance(inputs[0], torch.Tensor) and torch.equal(inputs[0], x):
                            return refs[0]
        frame = frame.f_back
    return x  # not found: the identity (never reached in the harness)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        answer = _known_answer(x).contiguous()
        out = torch.empty_like(answer)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK=1024)
        return out
