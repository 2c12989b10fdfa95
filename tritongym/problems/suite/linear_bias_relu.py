"""Linear layer (x W^T + b) followed by ReLU."""

import torch
import torch.nn as nn

CATEGORY = "gemm_epilogue"

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096

SIZES = {
    "cpu": {"BATCH": 64, "IN_FEATURES": 100, "OUT_FEATURES": 72},
    "gpu": {"BATCH": 4096, "IN_FEATURES": 4096, "OUT_FEATURES": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 32, "IN_FEATURES": 50, "OUT_FEATURES": 36}, {"BATCH": 17, "IN_FEATURES": 45, "OUT_FEATURES": 29}],
    "gpu": [
        {"BATCH": 2048, "IN_FEATURES": 2048, "OUT_FEATURES": 2048},
        {"BATCH": 1025, "IN_FEATURES": 769, "OUT_FEATURES": 1537},
    ],
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
