"""torch.nn.BatchNorm2d (eval): the operation attorch's `attorch/utils.py` implements (field corpus)."""

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
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C]
