"""BatchNorm2d as KernelBench writes it (level 1, 33_BatchNorm): the module left in `train()` mode, so a forward
normalises with the batch's own statistics and updates the running ones, which an `eval()` forward then uses.
The honest-kernel suite's problem for a training-mode BatchNorm (small shapes: the CPU interpreter runs it)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 4
features = 6
dim1 = 10
dim2 = 12


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
