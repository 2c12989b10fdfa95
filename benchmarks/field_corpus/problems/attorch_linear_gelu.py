"""gelu(torch.nn.Linear): the operation attorch's `attorch/utils.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
K = 4096
N = 4096

SIZES = {"cpu": {"M": 32, "K": 48, "N": 40}, "gpu": {"M": 4096, "K": 4096, "N": 4096}}



class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.fc = nn.Linear(k, n)

    def forward(self, x):
        return F.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
