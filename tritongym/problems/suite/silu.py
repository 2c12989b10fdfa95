"""SiLU (swish) activation, x * sigmoid(x), over a 2-D tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"

BATCH = 4096
DIM = 4096

SIZES = {
    "cpu": {"BATCH": 50, "DIM": 150},
    "gpu": {"BATCH": 4096, "DIM": 4096},
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
