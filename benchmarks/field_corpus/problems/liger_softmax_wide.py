"""torch.softmax(dim=-1), rows wider than one block: the operation Liger-Kernel's `src/liger_kernel/ops/softmax.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 256
N = 131072

SIZES = {"cpu": {"M": 4, "N": 70000}, "gpu": {"M": 256, "N": 131072}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        return torch.softmax(x, -1)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
