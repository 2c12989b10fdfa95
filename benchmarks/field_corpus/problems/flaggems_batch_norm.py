"""torch.nn.BatchNorm2d (eval): the operation FlagGems's `src/flag_gems/ops/batch_norm.py` implements (field corpus)."""

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
        self.bn = nn.BatchNorm2d(c).eval()

    def forward(self, x):
        return F.batch_norm(x, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, False, 0.1, self.bn.eps)


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C]
