"""torch.nn.functional.smooth_l1_loss(reduction='none'): the operation attorch's `attorch/utils.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 100}, "gpu": {"M": 4096, "N": 4096}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x, y):
        return F.smooth_l1_loss(x, y, reduction='none', beta=0.5)


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N)]


def get_init_inputs():
    return []
