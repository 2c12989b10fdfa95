"""torch._weight_norm(dim=0): the operation FlagGems's `src/flag_gems/ops/weightnorm.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 200}, "gpu": {"M": 4096, "N": 4096}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, v, g):
        return torch._weight_norm(v, g, 0)


def get_inputs():
    return [torch.randn(M, N), torch.rand(M, 1) + 0.5]


def get_init_inputs():
    return []
