"""Half-precision matrix multiplication: float16 inputs and output (accumulation is expected in float32)."""

import math

import torch
import torch.nn as nn

CATEGORY = "gemm"

M = 4096
K = 4096
N = 4096

SIZES = {
    "cpu": {"M": 96, "K": 128, "N": 80},
    "gpu": {"M": 4096, "K": 4096, "N": 4096},
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    # Scaled in float32 before the cast so B's entries are well inside float16's normal range.
    return [torch.randn(M, K).half(), (torch.randn(K, N) / math.sqrt(K)).half()]


def get_init_inputs():
    return []
