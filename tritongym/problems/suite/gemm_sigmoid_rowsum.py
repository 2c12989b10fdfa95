"""Linear layer, sigmoid, then a sum over the output features: one value per input row.

Inputs have standard deviation 3 so the pre-activations span sigmoid's whole range; the row sums
then vary clearly from row to row instead of all sitting near OUT_FEATURES / 2.
"""

import torch
import torch.nn as nn

CATEGORY = "gemm_epilogue"

BATCH = 8192
IN_FEATURES = 2048
OUT_FEATURES = 4096

SIZES = {
    "cpu": {"BATCH": 100, "IN_FEATURES": 64, "OUT_FEATURES": 130},
    "gpu": {"BATCH": 8192, "IN_FEATURES": 2048, "OUT_FEATURES": 4096},
}

# Correctness is also checked at these shape sets (halved, odd), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [{"BATCH": 50, "IN_FEATURES": 32, "OUT_FEATURES": 65}, {"BATCH": 37, "IN_FEATURES": 45, "OUT_FEATURES": 97}],
    "gpu": [
        {"BATCH": 4096, "IN_FEATURES": 1024, "OUT_FEATURES": 2048},
        {"BATCH": 1025, "IN_FEATURES": 769, "OUT_FEATURES": 1537},
    ],
}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x)).sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 3.0]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
