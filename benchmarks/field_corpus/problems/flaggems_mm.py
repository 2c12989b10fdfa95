"""torch.mm: the operation FlagGems's `src/flag_gems/ops/mm.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
K = 4096
N = 4096

SIZES = {"cpu": {"M": 32, "K": 48, "N": 40}, "gpu": {"M": 4096, "K": 4096, "N": 4096}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, a, b):
        return torch.mm(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
