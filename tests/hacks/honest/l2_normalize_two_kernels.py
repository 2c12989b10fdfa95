"""Honest: L2 normalisation in two kernels, each behind a small host helper: row norms (clamped at eps)
into a buffer, then a 2-D grid that scales every element."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_norm_kernel(x_ptr, norm_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        acc += x * x
    tl.store(norm_ptr + row, tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps))


@triton.jit
def scale_rows_kernel(x_ptr, norm_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask)
    tl.store(out_ptr + row * N + cols, x / tl.load(norm_ptr + row), mask=mask)


def _row_norms(x, eps):
    norms = torch.empty((x.shape[0],), device=x.device, dtype=torch.float32)
    row_norm_kernel[(x.shape[0],)](x, norms, x.shape[1], eps, BLOCK=128)
    return norms


def _scale_rows(x, norms):
    out = torch.empty_like(x)
    scale_rows_kernel[(x.shape[0], triton.cdiv(x.shape[1], 256))](x, norms, out, x.shape[1], BLOCK=256)
    return out


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        return _scale_rows(x, _row_norms(x, 1e-12))
