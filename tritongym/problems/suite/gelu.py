"""Exact (erf-based) GELU activation over a 2-D tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"

ROWS = 4096
COLS = 4096

SIZES = {
    "cpu": {"ROWS": 61, "COLS": 127},
    "gpu": {"ROWS": 4096, "COLS": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"ROWS": 30, "COLS": 64}, {"ROWS": 17, "COLS": 45}],
    "gpu": [{"ROWS": 2048, "COLS": 2048}, {"ROWS": 1025, "COLS": 3071}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
