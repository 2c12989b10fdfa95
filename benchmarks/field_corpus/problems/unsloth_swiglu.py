"""silu(e) * g: the operation unsloth's `unsloth/kernels/swiglu.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 8
S = 2048
N = 4096

SIZES = {"cpu": {"B": 2, "S": 8, "N": 100}, "gpu": {"B": 8, "S": 2048, "N": 4096}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, e, g):
        return F.silu(e) * g


def get_inputs():
    return [torch.randn(B, S, N), torch.randn(B, S, N)]


def get_init_inputs():
    return []
