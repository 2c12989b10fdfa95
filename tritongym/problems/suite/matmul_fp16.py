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

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"M": 48, "K": 64, "N": 40}, {"M": 33, "K": 45, "N": 29}],
    "gpu": [{"M": 2048, "K": 2048, "N": 2048}, {"M": 1025, "K": 769, "N": 1537}],
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
