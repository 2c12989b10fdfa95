"""torch.nn.functional.nll_loss: the operation FlagGems's `src/flag_gems/ops/nllloss.py` implements (field corpus)."""

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

    def forward(self, x, t):
        return F.nll_loss(x, t)


def get_inputs():
    return [torch.log_softmax(torch.randn(M, N), -1), torch.randint(0, N, (M,))]


def get_init_inputs():
    return []
