"""LlamaRMSNorm (torch.nn.RMSNorm): the operation unsloth's `unsloth/kernels/rms_layernorm.py` implements (field corpus)."""

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
        return self.norm(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N]
