"""torch.nn.functional.instance_norm: the operation FlagGems's `src/flag_gems/fused/instance_norm.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 32
C = 64
H = 128
W = 128

SIZES = {"cpu": {"B": 2, "C": 4, "H": 16, "W": 20}, "gpu": {"B": 32, "C": 64, "H": 128, "W": 128}}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(c) + 0.5)
        self.bias = nn.Parameter(torch.randn(c))

    def forward(self, x):
        return F.instance_norm(x, weight=self.weight, bias=self.bias, eps=1e-5)


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C]
