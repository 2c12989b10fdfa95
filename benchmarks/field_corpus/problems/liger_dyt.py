"""DyT: gamma * tanh(alpha * x) + beta: the operation Liger-Kernel's `src/liger_kernel/ops/dyt.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 200}, "gpu": {"M": 4096, "N": 4096}}



class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), 0.5))
        self.gamma = nn.Parameter(torch.rand(n) + 0.5)
        self.beta = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return self.gamma * torch.tanh(self.alpha * x) + self.beta


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N]
