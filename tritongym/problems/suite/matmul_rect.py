"""Rectangular matrix multiplication (M x K) @ (K x N) with sizes that are not multiples of a tile."""

import math

import torch
import torch.nn as nn

CATEGORY = "gemm"

M = 3001
K = 2047
N = 4093

SIZES = {
    "cpu": {"M": 127, "K": 93, "N": 65},
    "gpu": {"M": 3001, "K": 2047, "N": 4093},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"M": 64, "K": 47, "N": 33}, {"M": 33, "K": 29, "N": 45}],
    "gpu": [{"M": 1500, "K": 1024, "N": 2046}, {"M": 1025, "K": 769, "N": 1537}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
