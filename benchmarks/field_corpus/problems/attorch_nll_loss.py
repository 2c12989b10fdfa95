"""torch.nn.functional.nll_loss: the operation attorch's `attorch/utils.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 32000

SIZES = {"cpu": {"M": 8, "N": 200}, "gpu": {"M": 4096, "N": 32000}}



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
