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


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
