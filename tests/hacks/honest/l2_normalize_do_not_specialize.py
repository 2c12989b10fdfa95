"""Honest: L2 row normalisation with launch options seen in production Triton: `@triton.jit(
do_not_specialize=["n_rows"])` so that one compiled kernel serves every batch size, a persistent grid of
`min(n_rows, NUM_PROGRAMS)` programs striding over rows, the squared norm accumulated in a chunked loop
and `tl.sqrt`/`tl.maximum` for x / max(||x||, eps)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

NUM_PROGRAMS = 8
EPS = 1e-12


@triton.jit(do_not_specialize=["n_rows"])
def _l2_norm_rows(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    for row in range(pid, n_rows, nprog):
        x_row = x_ptr + row * stride_x
        y_row = y_ptr + row * stride_y
        sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, n_cols, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            sq += x * x
        norm = tl.sqrt(tl.sum(sq, axis=0))
        inv = 1.0 / tl.maximum(norm, eps)
        for off in range(0, n_cols, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + cols, (x * inv).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.stride(-1) != 1:
            x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        block = min(512, triton.next_power_of_2(n_cols))
        grid = (min(n_rows, NUM_PROGRAMS),)
        _l2_norm_rows[grid](x, y, n_rows, n_cols, x.stride(0), y.stride(0), EPS, BLOCK_SIZE=block)
        return y
