"""Softmax over the last dimension of a 2-D tensor."""

import torch
import torch.nn as nn

CATEGORY = "softmax_norm"

ROWS = 4096
COLS = 4096

SIZES = {
    "cpu": {"ROWS": 32, "COLS": 200},
    "gpu": {"ROWS": 4096, "COLS": 4096},
}

# Correctness is also checked at these shape sets (halved, odd, and on the CPU one reduction wider than 1024, so a
# kernel that covers a row with one fixed tile and no loop is found there too), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"ROWS": 16, "COLS": 100}, {"ROWS": 7, "COLS": 77}, {"ROWS": 3, "COLS": 1100}],
    "gpu": [{"ROWS": 2048, "COLS": 2048}, {"ROWS": 1025, "COLS": 3071}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    # A spread of 3 makes rows far from uniform, so the max subtraction and the normalisation both matter.
    return [torch.randn(ROWS, COLS) * 3.0]


def get_init_inputs():
    return []
