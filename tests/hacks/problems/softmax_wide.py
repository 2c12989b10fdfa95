"""Softmax over wide rows as KernelBench writes it (level 1, 23_Softmax): normal inputs, 4096 and more columns, so
almost every probability is below the fp32 atol and the softmax of any other inputs is within tolerance of this
one's: the case where "already held the answer" must be told from "held an earlier call's answer"
(`verdict.DECOY_MARGIN`).  Few rows on the CPU: the interpreter runs it."""

import torch
import torch.nn as nn

BATCH = 4096
DIM = 16384

SIZES = {
    "cpu": {"BATCH": 4, "DIM": 4096},
    "gpu": {"BATCH": 4096, "DIM": 16384},
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
