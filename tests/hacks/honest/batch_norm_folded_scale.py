"""Honest: BatchNorm2d inference the way deployment code writes it. The running statistics and the affine
parameters are folded on the host into one per-channel scale and shift (parameter-sized torch math), then
one Triton kernel applies y = x * scale[c] + shift[c] over the NCHW tensor."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, scale_ptr, shift_ptr, y_ptr, n_elements, C, HW, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    c = (offsets // HW) % C
    x = tl.load(x_ptr + offsets, mask=mask)
    scale = tl.load(scale_ptr + c, mask=mask)
    shift = tl.load(shift_ptr + c, mask=mask)
    tl.store(y_ptr + offsets, x * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, eps=1e-5)

    def forward(self, x):
        bn = self.bn
        # fold the running stats into the affine transform: y = (x - mean) / sqrt(var + eps) * w + b
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        shift = bn.bias - bn.running_mean * scale
        x = x.contiguous()
        y = torch.empty_like(x)
        N, C, H, W = x.shape
        n_elements = x.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
        scale_shift_kernel[grid](x, scale, shift, y, n_elements, C, H * W, BLOCK_SIZE=1024)
        return y
