"""Honest: tutorial 02's fused softmax with the tutorial file's header habit of `import os`, used here
only to read TRITON_INTERPRET and pick a smaller column block (and so a looped row sweep) under the
interpreter. Online max/sum over column blocks, then a normalising sweep."""

import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    m = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_row + cols, mask=cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        s = tl.where(m_new == float("-inf"), 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    denom = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_row + cols, mask=mask, other=float("-inf"))
        tl.store(out_row + cols, tl.exp(x - row_max) / denom, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = 128 if INTERPRET else min(triton.next_power_of_2(n_cols), 4096)
        softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
