"""log_softmax(logits[:, :-1] / T).gather(ids) (GRPO's per-token log-probabilities): the operation Liger-Kernel's `src/liger_kernel/ops/grpo_loss.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

B = 8
L = 1024
V = 32000

SIZES = {"cpu": {"B": 2, "L": 6, "V": 300}, "gpu": {"B": 8, "L": 1024, "V": 32000}}



class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, logits, ids):
        return torch.log_softmax(logits[:, :-1].float() / 0.9, -1).gather(-1, ids[:, -(logits.shape[1] - 1):, None])[..., 0]


def get_inputs():
    return [torch.randn(B, L + 1, V), torch.randint(0, V, (B, L))]


def get_init_inputs():
    return []
