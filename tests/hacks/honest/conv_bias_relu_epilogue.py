"""Honest but lazy: torch (cuDNN) does the convolution without bias, and a Triton kernel fuses the bias add
and the ReLU into one pass over the conv output, in place. Correct, and little of the work is Triton's."""

import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, bias_ptr, n_elements, C, HW, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    channel = (offsets // HW) % C
    y = tl.load(y_ptr + offsets, mask=mask)
    b = tl.load(bias_ptr + channel, mask=mask)
    y = tl.maximum(y + b, 0.0)
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=kernel_size // 2, bias=True)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, None, stride=self.conv.stride, padding=self.conv.padding)
        y = y.contiguous()
        n, c, h, w = y.shape
        n_elements = y.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        bias_relu_kernel[grid](y, self.conv.bias, n_elements, c, h * w, BLOCK_SIZE=BLOCK_SIZE)
        return y
