"""Honest: BatchNorm2d inference over a 2-D grid, (N*C planes) x (blocks of H*W), with
`tl.static_assert` guarding the block size, a `tl.device_print` kept behind a `DEBUG: tl.constexpr`
(off, so compiled out), and the per-channel scale and shift computed in the kernel from the running
statistics, weight and bias."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

DEBUG = False


@triton.jit
def _bn_infer_kernel(
    x_ptr,
    y_ptr,
    mean_ptr,
    var_ptr,
    weight_ptr,
    bias_ptr,
    C,
    HW,
    eps,
    BLOCK_HW: tl.constexpr,
    DEBUG: tl.constexpr,
):
    tl.static_assert(BLOCK_HW % 32 == 0, "BLOCK_HW must be a multiple of 32")
    plane = tl.program_id(0)
    pid_hw = tl.program_id(1)
    c = plane % C
    mean = tl.load(mean_ptr + c).to(tl.float32)
    var = tl.load(var_ptr + c).to(tl.float32)
    w = tl.load(weight_ptr + c).to(tl.float32)
    b = tl.load(bias_ptr + c).to(tl.float32)
    scale = w / tl.sqrt(var + eps)
    shift = b - mean * scale
    if DEBUG:
        tl.device_print("channel scale", scale)
    offs = pid_hw * BLOCK_HW + tl.arange(0, BLOCK_HW)
    mask = offs < HW
    base = plane.to(tl.int64) * HW
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(mask, x * scale + shift, 0.0)
    tl.store(y_ptr + base + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        y = torch.empty_like(x)
        HW = H * W
        BLOCK_HW = max(32, min(1024, triton.next_power_of_2(HW)))
        grid = (N * C, triton.cdiv(HW, BLOCK_HW))
        bn = self.bn
        _bn_infer_kernel[grid](
            x, y, bn.running_mean, bn.running_var, bn.weight, bn.bias, C, HW, bn.eps, BLOCK_HW=BLOCK_HW, DEBUG=DEBUG
        )
        return y
