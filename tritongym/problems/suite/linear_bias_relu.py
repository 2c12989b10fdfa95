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
