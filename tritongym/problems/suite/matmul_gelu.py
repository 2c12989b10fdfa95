"""Matrix multiplication A @ B followed by exact (erf-based) GELU."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "gemm_epilogue"

M = 4096
K = 2048
N = 4096

SIZES = {
    "cpu": {"M": 80, "K": 64, "N": 96},
    "gpu": {"M": 4096, "K": 2048, "N": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"M": 40, "K": 32, "N": 48}, {"M": 33, "K": 29, "N": 45}],
    "gpu": [{"M": 2048, "K": 1024, "N": 2048}, {"M": 1025, "K": 769, "N": 1537}],
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.gelu(torch.matmul(a, b))


def get_inputs():
    # Scaled so that A @ B has unit variance: GELU's non-linear region around zero is then well covered.
    return [torch.randn(M, K), torch.randn(K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
