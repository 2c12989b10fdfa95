"""sparsemax(dim=-1): the operation Liger-Kernel's `src/liger_kernel/ops/sparsemax.py` implements (field corpus)."""

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401

CATEGORY = "field_corpus"

M = 4096
N = 4096

SIZES = {"cpu": {"M": 16, "N": 200}, "gpu": {"M": 4096, "N": 4096}}


def _sparsemax(x):
    """Sparsemax over the last dimension (Martins & Astudillo, 2016), sorted-threshold form."""
    z, _ = torch.sort(x, dim=-1, descending=True)
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype, device=x.device)
    cumsum = z.cumsum(-1)
    support = (1 + k * z) > cumsum
    k_z = support.sum(-1, keepdim=True)
    tau = (cumsum.gather(-1, k_z - 1) - 1) / k_z.to(x.dtype)
    return torch.clamp(x - tau, min=0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        return _sparsemax(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
