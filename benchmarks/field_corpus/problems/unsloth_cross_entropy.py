"""torch.nn.functional.cross_entropy over (batch, seq) tokens: the operation unsloth's `unsloth/kernels/cross_entropy_loss.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 8
S = 1024
V = 32000

SIZES = {"cpu": {"B": 2, "S": 4, "V": 200}, "gpu": {"B": 8, "S": 1024, "V": 32000}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, logits, labels):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


def get_inputs():
    return [torch.randn(B, S, V), torch.randint(0, V, (B, S))]


def get_init_inputs():
    return []
