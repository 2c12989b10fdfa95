"""Transformer MLP block: Linear -> exact GELU -> Linear over a [batch, seq, embed] tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "block"

BATCH = 8
SEQ = 1024
EMBED = 1024
HIDDEN = 4096

SIZES = {
    "cpu": {"BATCH": 2, "SEQ": 24, "EMBED": 64, "HIDDEN": 96},
    "gpu": {"BATCH": 8, "SEQ": 1024, "EMBED": 1024, "HIDDEN": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 1, "SEQ": 12, "EMBED": 32, "HIDDEN": 48}, {"BATCH": 3, "SEQ": 7, "EMBED": 45, "HIDDEN": 29}],
    "gpu": [
        {"BATCH": 4, "SEQ": 512, "EMBED": 512, "HIDDEN": 2048},
        {"BATCH": 3, "SEQ": 129, "EMBED": 769, "HIDDEN": 1537},
    ],
}


class Model(nn.Module):
    def __init__(self, embed: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(embed, hidden)
        self.fc2 = nn.Linear(hidden, embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


def get_inputs():
    # A spread of 2 puts fc1's outputs across GELU's curved region rather than its near-linear centre.
    return [torch.randn(BATCH, SEQ, EMBED) * 2.0]


def get_init_inputs():
    return [EMBED, HIDDEN]
