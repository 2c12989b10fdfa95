"""rotary position embedding (HF apply_rotary_pos_emb): the operation unsloth's `unsloth/kernels/rope_embedding.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 8
H = 32
S = 2048
D = 128

SIZES = {"cpu": {"B": 2, "H": 4, "S": 8, "D": 16}, "gpu": {"B": 8, "H": 32, "S": 2048, "D": 128}}


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _cos_sin():
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    angles = torch.outer(torch.arange(S, dtype=torch.float32), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return [emb.cos(), emb.sin()]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, q, k, cos, sin):
        return (q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin)


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), *_cos_sin()]


def get_init_inputs():
    return []
