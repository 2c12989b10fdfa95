"""Batched matrix multiplication (torch.bmm) of [batch, M, K] by [batch, K, N]."""

import math

import torch
import torch.nn as nn

CATEGORY = "gemm"

BATCH = 128
M = 512
K = 256
N = 512

SIZES = {
    "cpu": {"BATCH": 3, "M": 64, "K": 48, "N": 80},
    "gpu": {"BATCH": 128, "M": 512, "K": 256, "N": 512},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 2, "M": 32, "K": 24, "N": 40}, {"BATCH": 1, "M": 33, "K": 29, "N": 47}],
    "gpu": [{"BATCH": 64, "M": 256, "K": 128, "N": 256}, {"BATCH": 5, "M": 129, "K": 97, "N": 193}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
