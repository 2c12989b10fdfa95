"""torch.remainder (int32): the operation FlagGems's `src/flag_gems/ops/div.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 100}, "gpu": {"M": 4096, "N": 4096}}



class Model(nn.Module):
    def forward(self, x, y):
        return torch.remainder(x, y)


def get_inputs():
    return [torch.randint(-1000, 1000, (M, N), dtype=torch.int32), torch.randint(1, 50, (M, N), dtype=torch.int32)]


def get_init_inputs():
    return []
