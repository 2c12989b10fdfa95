"""2-D convolution (NCHW), square kernel, stride 1, 'same' zero padding, with bias, then ReLU.

The bias is drawn at random (spread 0.5) so that it moves many outputs across ReLU's kink: a kernel that
drops the bias or applies ReLU before it is caught.
"""

import torch
import torch.nn as nn

CATEGORY = "convolution"

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 3

SIZES = {
    "cpu": {"BATCH": 2, "IN_CHANNELS": 3, "OUT_CHANNELS": 8, "HEIGHT": 13, "WIDTH": 11, "KERNEL_SIZE": 3},
    "gpu": {"BATCH": 16, "IN_CHANNELS": 64, "OUT_CHANNELS": 128, "HEIGHT": 64, "WIDTH": 64, "KERNEL_SIZE": 3},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [
        {"BATCH": 1, "IN_CHANNELS": 2, "OUT_CHANNELS": 4, "HEIGHT": 8, "WIDTH": 6},
        {"BATCH": 3, "IN_CHANNELS": 3, "OUT_CHANNELS": 5, "HEIGHT": 7, "WIDTH": 9},
    ],
    "gpu": [
        {"BATCH": 8, "IN_CHANNELS": 32, "OUT_CHANNELS": 64, "HEIGHT": 32, "WIDTH": 32},
        {"BATCH": 3, "IN_CHANNELS": 17, "OUT_CHANNELS": 33, "HEIGHT": 31, "WIDTH": 45},
    ],
}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=kernel_size // 2, bias=True)
        nn.init.normal_(self.conv.bias, mean=0.0, std=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
