"""Fused multiply-add x * y + z over three 2-D tensors of the same shape."""

import torch
import torch.nn as nn

CATEGORY = "elementwise"

ROWS = 4096
COLS = 4096

SIZES = {
    "cpu": {"ROWS": 64, "COLS": 100},
    "gpu": {"ROWS": 4096, "COLS": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"ROWS": 32, "COLS": 50}, {"ROWS": 17, "COLS": 77}],
    "gpu": [{"ROWS": 2048, "COLS": 2048}, {"ROWS": 1025, "COLS": 3071}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * y + z


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
