"""Square matrix multiplication C = A @ B in float32."""

import math

import torch
import torch.nn as nn

CATEGORY = "gemm"

N = 4096

SIZES = {
    "cpu": {"N": 128},
    "gpu": {"N": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"N": 64}, {"N": 47}],
    "gpu": [{"N": 2048}, {"N": 1537}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    # B is scaled by 1/sqrt(N) so the entries of C are O(1) whatever the size.
    return [torch.randn(N, N), torch.randn(N, N) / math.sqrt(N)]


def get_init_inputs():
    return []
