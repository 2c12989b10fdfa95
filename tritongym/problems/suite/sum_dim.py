"""Sum of a 3-D tensor over its middle dimension."""

import torch
import torch.nn as nn

CATEGORY = "reduction"

BATCH = 64
DIM1 = 1024
DIM2 = 1024

SIZES = {
    "cpu": {"BATCH": 4, "DIM1": 96, "DIM2": 80},
    "gpu": {"BATCH": 64, "DIM1": 1024, "DIM2": 1024},
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2)]


def get_init_inputs():
    return []
