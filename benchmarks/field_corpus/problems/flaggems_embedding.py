"""torch.nn.Embedding: the operation FlagGems's `src/flag_gems/ops/embedding.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 200}, "gpu": {"M": 4096, "N": 4096}}



class Model(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.emb = nn.Embedding(v, d)

    def forward(self, idx):
        return self.emb(idx)


def get_inputs():
    return [torch.randint(0, N, (M, 8))]


def get_init_inputs():
    return [N, 64]
