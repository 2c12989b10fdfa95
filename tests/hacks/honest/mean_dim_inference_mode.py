"""Honest: mean over the last dimension with the forward under `@torch.inference_mode()`, as vLLM and
SGLang run their model code: the output is an inference tensor. One program per row of the flattened
[B * D1, D2] view sums the row in chunks in float32 and divides by its length."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_mean_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        acc += tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


class ModelNew(nn.Module):
    @torch.inference_mode()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *lead, n = x.shape
        x2 = x.reshape(-1, n)
        if x2.stride(-1) != 1:
            x2 = x2.contiguous()
        out = torch.empty(x2.shape[0], device=x.device, dtype=x.dtype)
        _row_mean_kernel[(x2.shape[0],)](x2, out, n, x2.stride(0), BLOCK=min(256, triton.next_power_of_2(n)))
        return out.view(*lead)
