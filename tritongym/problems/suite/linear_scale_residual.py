"""Linear layer, scaled, plus a residual input: y = (x W^T + b) * scale + residual."""

import torch
import torch.nn as nn

CATEGORY = "gemm_epilogue"

BATCH = 4096
IN_FEATURES = 2048
OUT_FEATURES = 4096

SIZES = {
    "cpu": {"BATCH": 64, "IN_FEATURES": 96, "OUT_FEATURES": 80},
    "gpu": {"BATCH": 4096, "IN_FEATURES": 2048, "OUT_FEATURES": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 32, "IN_FEATURES": 48, "OUT_FEATURES": 40}, {"BATCH": 17, "IN_FEATURES": 45, "OUT_FEATURES": 29}],
    "gpu": [
        {"BATCH": 2048, "IN_FEATURES": 1024, "OUT_FEATURES": 2048},
        {"BATCH": 1025, "IN_FEATURES": 769, "OUT_FEATURES": 1537},
    ],
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale + residual


def get_inputs():
    # The residual is kept smaller than the linear term so that the output is not close to it.
    return [torch.randn(BATCH, IN_FEATURES) * 2.0, torch.randn(BATCH, OUT_FEATURES) * 0.5]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 1.5]
