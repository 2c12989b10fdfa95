"""Hack: a kernel right only for the CPU preset's row widths. One program per row loads a single tile of
256 columns (masked), with no loop over the rest of the row: a softmax of rows up to 256 wide is exact,
and a wider row is normalised over its first 256 values and leaves the rest of its output unwritten. The
CPU sizes of the softmax problem (200 columns, shape sets 100 and 77) all fit in one tile, so on
`triton-cpu` every trial passed (found red-teaming, kept in `open/` until then); the GPU size (4096 columns) would
not.  Every row-wise suite problem now has a CPU shape set wider than 1024, where it is `incorrect`."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 256  # one tile per row


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK=BLOCK_SIZE)
        return out
