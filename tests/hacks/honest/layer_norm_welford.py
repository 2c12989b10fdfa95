"""Honest: tutorial-05-style fused LayerNorm forward with a Welford reduction. One program per row walks
the row in BLOCK_SIZE chunks, keeping a running (mean, M2, count) per lane, then merges the lanes with
Welford's parallel combine in `tl.reduce`; Mean and Rstd are stored for a backward pass, as the tutorial does."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    frac_b = tl.where(n == 0, 0.0, n_b / n)
    mean = mean_a + delta * frac_b
    m2 = m2_a + m2_b + delta * delta * n_a * frac_b
    return mean, m2, n


@triton.jit
def _layer_norm_fwd_fused(
    X,  # pointer to the input
    Y,  # pointer to the output
    W,  # pointer to the weights
    B,  # pointer to the biases
    Mean,  # pointer to the mean
    Rstd,  # pointer to the 1/std
    stride,  # how much to increase the pointer when moving by 1 row
    N,  # number of columns in X
    eps,  # epsilon to avoid division by zero
    BLOCK_SIZE: tl.constexpr,
):
    # Map the program id to the row of X and Y it should compute.
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Compute mean and variance in one pass (Welford)
    w_mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    w_m2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    w_n = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        n_new = w_n + tl.where(mask, 1.0, 0.0)
        delta = x - w_mean
        w_mean = tl.where(mask, w_mean + delta / tl.maximum(n_new, 1.0), w_mean)
        w_m2 = tl.where(mask, w_m2 + delta * (x - w_mean), w_m2)
        w_n = n_new
    mean, m2, count = tl.reduce((w_mean, w_m2, w_n), 0, welford_combine)
    var = m2 / count
    rstd = 1 / tl.sqrt(var + eps)
    # Write mean / rstd
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply linear transformation
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        # Write output
        tl.store(Y + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x):
        weight, bias, eps = self.norm.weight, self.norm.bias, self.norm.eps
        # allocate output
        y = torch.empty_like(x)
        # reshape input data into 2D tensor
        x_arg = x.reshape(-1, x.shape[-1])
        M, N = x_arg.shape
        mean = torch.empty((M,), dtype=torch.float32, device=x.device)
        rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
        # Less than 64KB per feature: enqueue fused kernel
        MAX_FUSED_SIZE = 65536 // x.element_size()
        BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N), 128)
        # heuristics for number of warps
        num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
        # enqueue kernel
        _layer_norm_fwd_fused[(M,)](  #
            x_arg,
            y,
            weight,
            bias,
            mean,
            rstd,  #
            x_arg.stride(0),
            N,
            eps,  #
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
            num_ctas=1,
        )
        return y
