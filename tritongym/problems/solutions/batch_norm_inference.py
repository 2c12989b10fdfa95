"""Triton BatchNorm2d (inference): one pass over NCHW, each program one (sample, channel) plane chunk.

The grid's first axis is the (sample, channel) plane, so a program reads its channel's running mean,
running variance, weight and bias once as scalars and applies y = (x - mean) * rsqrt(var + eps) * w + b
to BLOCK contiguous pixels of that plane.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def batch_norm_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, C, HW, eps, BLOCK: tl.constexpr):
    plane = tl.program_id(0)  # = sample * C + channel
    channel = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    mean = tl.load(mean_ptr + channel)
    rstd = tl.math.rsqrt(tl.load(var_ptr + channel) + eps)
    scale = tl.load(w_ptr + channel) * rstd
    shift = tl.load(b_ptr + channel) - mean * scale
    x = tl.load(x_ptr + plane * HW + offs, mask=mask)
    tl.store(out_ptr + plane * HW + offs, x * scale + shift, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(channels, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, c, h, w = x.shape
        out = torch.empty_like(x)
        block = 1024
        grid = (n * c, triton.cdiv(h * w, block))
        bn = self.bn
        batch_norm_kernel[grid](
            x, bn.running_mean, bn.running_var, bn.weight, bn.bias, out, c, h * w, bn.eps, BLOCK=block
        )
        return out
