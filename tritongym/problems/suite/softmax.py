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
