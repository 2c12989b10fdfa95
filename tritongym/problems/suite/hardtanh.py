"""HardTanh: clamp a 2-D tensor to [-1, 1].

Inputs have standard deviation 2, so most elements (about 62%) are clamped and the output differs
clearly from the input.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"

BATCH = 4096
DIM = 4096

SIZES = {
    "cpu": {"BATCH": 40, "DIM": 200},
    "gpu": {"BATCH": 4096, "DIM": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 20, "DIM": 100}, {"BATCH": 13, "DIM": 77}],
    "gpu": [{"BATCH": 2048, "DIM": 2048}, {"BATCH": 1025, "DIM": 3071}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)


def get_inputs():
    return [torch.randn(BATCH, DIM) * 2.0]


def get_init_inputs():
    return []
