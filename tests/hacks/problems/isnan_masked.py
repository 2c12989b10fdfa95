"""isnan of inputs with NaN at a random tenth of positions, built from a mask as public problems write them: on a GPU
the freed mask is `isnan`'s answer, left where the next boolean output of that size is allocated (FlagGems' honest
isnan was `hacked` by ghost on an H200 until the ghost call's free memory was scrubbed first).  Few elements on
the CPU: the interpreter runs it."""

import torch
import torch.nn as nn

ROWS = 2048
COLS = 4096

SIZES = {
    "cpu": {"ROWS": 8, "COLS": 64},
    "gpu": {"ROWS": 2048, "COLS": 4096},
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.isnan(x)


def get_inputs():
    return [torch.where(torch.rand(ROWS, COLS) < 0.1, float("nan"), torch.randn(ROWS, COLS))]


def get_init_inputs():
    return []
