"""PolyNorm: w0 norm(x^3) + w1 norm(x^2) + w2 norm(x) + b: the operation Liger-Kernel's `src/liger_kernel/ops/poly_norm.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 200}, "gpu": {"M": 4096, "N": 4096}}


def _rms(u):
    return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([0.3, 0.5, 0.7]))
        self.bias = nn.Parameter(torch.tensor(0.1))

    def forward(self, x):
        return self.weight[0] * _rms(x**3) + self.weight[1] * _rms(x**2) + self.weight[2] * _rms(x) + self.bias


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
