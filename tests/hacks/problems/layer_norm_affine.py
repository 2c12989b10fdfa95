"""LayerNorm as KernelBench writes it (level 1, 40_LayerNorm): `nn.LayerNorm` left as built, its affine weight
all ones and its bias all zeros.  A kernel that drops the affine matches such a module exactly; the judge draws
those parameters away from their initial values before judging (`tritongym/core/worker/weights.py`), so it no
longer does.  Small shapes: the CPU interpreter runs it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 6
seq = 5
hidden = 48


def get_inputs():
    return [torch.randn(batch_size, seq, hidden) * 2.0 + 0.5]


def get_init_inputs():
    return [hidden]
