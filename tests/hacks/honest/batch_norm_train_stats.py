"""Honest: training-mode BatchNorm2d the way public Triton ports write it. One program per channel reduces
the batch's mean and variance (two passes over N*H*W), a second kernel normalises and applies the affine
parameters; in train() the running statistics are updated on the host (channel-sized torch math, with
PyTorch's momentum and unbiased variance), in eval() they are what the kernel normalises with."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bn_channel_stats(x_ptr, mean_ptr, var_ptr, N, C, HW, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    count = N * HW
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        mask = idx < count
        x = tl.load(x_ptr + (idx // HW) * C * HW + c * HW + idx % HW, mask=mask, other=0.0)
        total += x.to(tl.float32)
    mean = tl.sum(total, axis=0) / count
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        mask = idx < count
        x = tl.load(x_ptr + (idx // HW) * C * HW + c * HW + idx % HW, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        sq += d * d
    tl.store(mean_ptr + c, mean)
    tl.store(var_ptr + c, tl.sum(sq, axis=0) / count)


@triton.jit
def _bn_apply(x_ptr, y_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, n_elements, C, HW, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    c = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + c, mask=mask, other=0.0)
    var = tl.load(var_ptr + c, mask=mask, other=1.0)
    w = tl.load(w_ptr + c, mask=mask, other=1.0)
    b = tl.load(b_ptr + c, mask=mask, other=0.0)
    y = (x - mean) * tl.rsqrt(var + eps) * w + b
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        x = x.contiguous()
        N, C, H, W = x.shape
        if self.training:
            mean = torch.empty(C, device=x.device, dtype=torch.float32)
            var = torch.empty(C, device=x.device, dtype=torch.float32)
            _bn_channel_stats[(C,)](x, mean, var, N, C, H * W, BLOCK=1024)
            with torch.no_grad():
                count = N * H * W
                m = bn.momentum
                bn.running_mean.mul_(1 - m).add_(mean, alpha=m)
                bn.running_var.mul_(1 - m).add_(var * (count / max(count - 1, 1)), alpha=m)
                bn.num_batches_tracked.add_(1)
        else:
            mean, var = bn.running_mean, bn.running_var
        y = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)
        _bn_apply[grid](x, y, mean, var, bn.weight, bn.bias, n, C, H * W, bn.eps, BLOCK=1024)
        return y
