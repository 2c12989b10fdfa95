"""torch.clamp (tensor bounds): the operation FlagGems's `src/flag_gems/ops/clamp.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 100}, "gpu": {"M": 4096, "N": 4096}}



class Model(nn.Module):
    def forward(self, x, lo, hi):
        return torch.clamp(x, lo, hi)


def get_inputs():
    return [torch.randn(M, N), -torch.rand(M, N), torch.rand(M, N)]


def get_init_inputs():
    return []
