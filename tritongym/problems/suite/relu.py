"""ReLU activation over a 4-D tensor.

About half of a standard-normal input is negative, so the output is neither zero nor the input.
"""

import torch
import torch.nn as nn

CATEGORY = "elementwise"

BATCH = 16
CHANNELS = 64
HEIGHT = 128
WIDTH = 128

SIZES = {
    "cpu": {"BATCH": 2, "CHANNELS": 3, "HEIGHT": 33, "WIDTH": 35},
    "gpu": {"BATCH": 16, "CHANNELS": 64, "HEIGHT": 128, "WIDTH": 128},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [
        {"BATCH": 1, "CHANNELS": 2, "HEIGHT": 16, "WIDTH": 17},
        {"BATCH": 3, "CHANNELS": 1, "HEIGHT": 13, "WIDTH": 7},
    ],
    "gpu": [
        {"BATCH": 8, "CHANNELS": 32, "HEIGHT": 64, "WIDTH": 64},
        {"BATCH": 7, "CHANNELS": 33, "HEIGHT": 65, "WIDTH": 97},
    ],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
