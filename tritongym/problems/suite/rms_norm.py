"""RMSNorm over the last dimension of a [batch, seq, hidden] tensor, with a learnable weight.

The weight is drawn at random in `__init__` (not all ones), so a kernel that ignores it is caught.
"""

import torch
import torch.nn as nn

CATEGORY = "softmax_norm"

BATCH = 16
SEQ = 1024
HIDDEN = 2048

SIZES = {
    "cpu": {"BATCH": 4, "SEQ": 8, "HIDDEN": 160},
    "gpu": {"BATCH": 16, "SEQ": 1024, "HIDDEN": 2048},
}

# Correctness is also checked at these shape sets (halved, odd, and on the CPU one reduction wider than 1024, so a
# kernel that covers a row with one fixed tile and no loop is found there too), each overriding SIZES; timing runs
# at SIZES only.
EXTRA_SIZES = {
    "cpu": [
        {"BATCH": 2, "SEQ": 4, "HIDDEN": 80},
        {"BATCH": 3, "SEQ": 5, "HIDDEN": 77},
        {"BATCH": 1, "SEQ": 3, "HIDDEN": 1100},
    ],
    "gpu": [{"BATCH": 8, "SEQ": 512, "HIDDEN": 1024}, {"BATCH": 3, "SEQ": 129, "HIDDEN": 1537}],
}


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms_inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms_inv * self.weight


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN) * 2.0]


def get_init_inputs():
    return [HIDDEN]
