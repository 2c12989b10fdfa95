"""torch.bmm: the operation FlagGems's `src/flag_gems/ops/bmm.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 16
M = 1024
K = 1024
N = 1024

SIZES = {"cpu": {"B": 2, "M": 32, "K": 48, "N": 40}, "gpu": {"B": 16, "M": 1024, "K": 1024, "N": 1024}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs():
    return []
