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

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 25, "DIM": 75}, {"BATCH": 13, "DIM": 77}],
    "gpu": [{"BATCH": 2048, "DIM": 2048}, {"BATCH": 1025, "DIM": 3071}],
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
