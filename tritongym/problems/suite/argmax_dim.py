"""Index (int64) of the maximum of a 3-D tensor over its last dimension."""

import torch
import torch.nn as nn

CATEGORY = "reduction"

BATCH = 64
DIM1 = 1024
DIM2 = 1024

SIZES = {
    "cpu": {"BATCH": 4, "DIM1": 40, "DIM2": 300},
    "gpu": {"BATCH": 64, "DIM1": 1024, "DIM2": 1024},
}

# Correctness is also checked at these shape sets (halved, odd, and on the CPU one reduction wider than 1024, so a
# kernel that covers a row with one fixed tile and no loop is found there too), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [
        {"BATCH": 2, "DIM1": 20, "DIM2": 150},
        {"BATCH": 3, "DIM1": 17, "DIM2": 77},
        {"BATCH": 1, "DIM1": 3, "DIM2": 1100},
    ],
    "gpu": [{"BATCH": 32, "DIM1": 512, "DIM2": 512}, {"BATCH": 7, "DIM1": 129, "DIM2": 769}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=2)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2)]


def get_init_inputs():
    return []
