"""Triton RMSNorm over the last dimension: one program per row, the row held in one block."""

import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, N, stride_xm, stride_om, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N  # BLOCK_N is N rounded up to a power of two; padding loads 0 and adds nothing
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0)
    rms_inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_om + cols, x * rms_inv * w, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        x2 = x.contiguous().view(-1, n)
        out = torch.empty_like(x2)
        rms_norm_kernel[(x2.shape[0],)](
            x2, self.weight, out, n, x2.stride(0), out.stride(0), self.eps, BLOCK_N=triton.next_power_of_2(n)
        )
        return out.view(x.shape)
