"""torch.nn.functional.avg_pool2d: the operation FlagGems's `src/flag_gems/ops/avg_pool2d.py` implements (field corpus)."""

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
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        return F.avg_pool2d(x, 3, 2, 1)


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return []
