"""BatchNorm2d in inference: y = (x - running_mean) / sqrt(running_var + eps) * weight + bias, per channel.

The statistics are the module's running buffers in every mode (`training=False`), as a deployed network
uses them; the reference never updates them, so its answer is the same in `train()` and `eval()`.  The
running statistics and the affine parameters are drawn at random in `__init__` (not the defaults 0, 1, 1,
0), so a kernel that ignores any of the four, or normalises with the batch's own statistics, is caught.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "softmax_norm"

BATCH = 32
CHANNELS = 128
HEIGHT = 56
WIDTH = 56

SIZES = {
    "cpu": {"BATCH": 2, "CHANNELS": 8, "HEIGHT": 9, "WIDTH": 11},
    "gpu": {"BATCH": 32, "CHANNELS": 128, "HEIGHT": 56, "WIDTH": 56},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 1, "CHANNELS": 4, "HEIGHT": 5, "WIDTH": 6}, {"BATCH": 3, "CHANNELS": 5, "HEIGHT": 7, "WIDTH": 3}],
    "gpu": [
        {"BATCH": 16, "CHANNELS": 64, "HEIGHT": 28, "WIDTH": 28},
        {"BATCH": 3, "CHANNELS": 33, "HEIGHT": 31, "WIDTH": 45},
    ],
}


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, eps=1e-5)
        with torch.no_grad():
            self.bn.running_mean.normal_(0.0, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_(1.0, 0.5)
            self.bn.bias.normal_(0.0, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, training=False, eps=bn.eps)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 1.5 + 0.3]


def get_init_inputs():
    return [CHANNELS]
