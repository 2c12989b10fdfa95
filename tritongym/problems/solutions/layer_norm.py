"""Triton LayerNorm over the last dimension: one program per row, the row held in one block.

The variance is computed from centred values (two passes over registers), which is more accurate
than E[x^2] - E[x]^2 when the mean is large compared to the spread.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, N, stride_xm, stride_om, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N  # BLOCK_N is N rounded up to a power of two
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)  # padding lanes would otherwise add mean^2 to the variance
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_om + cols, xc * rstd * w + b, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        # Kept as a parameter holder so the state_dict names match the reference (norm.weight, norm.bias).
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        x2 = x.contiguous().view(-1, n)
        out = torch.empty_like(x2)
        layer_norm_kernel[(x2.shape[0],)](
            x2,
            self.norm.weight,
            self.norm.bias,
            out,
            n,
            x2.stride(0),
            out.stride(0),
            self.norm.eps,
            BLOCK_N=triton.next_power_of_2(n),
        )
        return out.view(x.shape)
