"""GemmaRMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w): the operation unsloth's `unsloth/kernels/rms_layernorm.py` implements (field corpus)."""

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
        self.norm = nn.RMSNorm(n, eps=1e-6)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + self.norm.weight)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N]
