"""A matmul with a large K dimension as KernelBench writes it (level 1, 6_Matmul_with_large_K_dimension_): uniform
inputs, so every entry of the answer is about K/4 and varies by well under 1% from one set of inputs to the next.
Within the fp32 tolerance any such answer matches any other: the case where "already held the answer" must be told
from "held an earlier call's answer" (`verdict.DECOY_MARGIN`).  Small K on the CPU: the interpreter runs it."""

import torch
import torch.nn as nn

M = 256
N = 256
K = 131072 * 4

SIZES = {
    "cpu": {"M": 16, "N": 16, "K": 4096},
    "gpu": {"M": 256, "N": 256, "K": 131072 * 4},
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
