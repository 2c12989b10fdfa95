"""LayerNorm with a learnable affine transform over the last dimension of a [batch, seq, hidden] tensor.

The affine weight and bias are drawn at random in `__init__` (not the default ones and zeros), so a
kernel that ignores either of them is caught.
"""

import torch
import torch.nn as nn

CATEGORY = "softmax_norm"

BATCH = 16
SEQ = 1024
HIDDEN = 1024

SIZES = {
    "cpu": {"BATCH": 4, "SEQ": 8, "HIDDEN": 200},
    "gpu": {"BATCH": 16, "SEQ": 1024, "HIDDEN": 1024},
}

# Correctness is also checked at these shape sets (halved, odd, and on the CPU one reduction wider than 1024, so a
# kernel that covers a row with one fixed tile and no loop is found there too), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [
        {"BATCH": 2, "SEQ": 4, "HIDDEN": 100},
        {"BATCH": 3, "SEQ": 5, "HIDDEN": 77},
        {"BATCH": 1, "SEQ": 3, "HIDDEN": 1100},
    ],
    "gpu": [{"BATCH": 8, "SEQ": 512, "HIDDEN": 512}, {"BATCH": 3, "SEQ": 129, "HIDDEN": 769}],
}


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        nn.init.normal_(self.norm.weight, mean=1.0, std=0.5)
        nn.init.normal_(self.norm.bias, mean=0.0, std=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    # Non-zero mean and non-unit spread, so both the centring and the scaling do real work.
    return [torch.randn(BATCH, SEQ, HIDDEN) * 2.0 + 0.5]


def get_init_inputs():
    return [HIDDEN]
