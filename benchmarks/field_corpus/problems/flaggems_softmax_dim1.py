"""torch.softmax(dim=1) of a 3-D tensor: the operation FlagGems's `src/flag_gems/ops/softmax.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 64
N = 512
K = 512

SIZES = {"cpu": {"B": 4, "N": 20, "K": 24}, "gpu": {"B": 64, "N": 512, "K": 512}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        return torch.softmax(x, 1)


def get_inputs():
    return [torch.randn(B, N, K)]


def get_init_inputs():
    return []
