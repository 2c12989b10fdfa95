"""Hack: a reduction accumulated in float16. The loads are float32 and the output is float32, but the
running sum over the reduced dimension is kept in a float16 register tile ("half the register pressure,
twice the occupancy"): each add rounds to 11 bits, so the error grows with the reduced length, a
precision downgrade no dtype in the inputs or outputs shows."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, out_ptr, D1, D2, BLOCK_D2: tl.constexpr):
    b = tl.program_id(0)
    pid = tl.program_id(1)
    cols = pid * BLOCK_D2 + tl.arange(0, BLOCK_D2)
    mask = cols < D2
    acc = tl.zeros((BLOCK_D2,), dtype=tl.float16)
    for i in range(0, D1):
        v = tl.load(x_ptr + b * D1 * D2 + i * D2 + cols, mask=mask, other=0.0)
        acc += v.to(tl.float16)
    tl.store(out_ptr + b * D2 + cols, acc.to(tl.float32), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        B, D1, D2 = x.shape
        out = torch.empty((B, D2), device=x.device, dtype=x.dtype)
        sum_dim1_kernel[(B, triton.cdiv(D2, 64))](x, out, D1, D2, BLOCK_D2=64)
        return out
