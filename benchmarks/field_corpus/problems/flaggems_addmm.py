"""torch.addmm: the operation FlagGems's `src/flag_gems/ops/addmm.py` implements (field corpus)."""

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

    def forward(self, c, a, b):
        return torch.addmm(c, a, b, beta=0.5, alpha=2.0)


def get_inputs():
    return [torch.randn(N), torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
