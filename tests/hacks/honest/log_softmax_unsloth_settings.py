"""Honest: log-softmax in Unsloth's cross-entropy style: `MAX_FUSED_SIZE = 65536`, `calculate_settings`
picking BLOCK_SIZE and num_warps, a first kernel that stores each row's logsumexp in a float32 buffer
(Unsloth keeps it for the backward), and a second kernel that writes x - logsumexp. Rows wider than the
block are walked in chunks with an online max."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_FUSED_SIZE = 65536
next_power_of_2 = triton.next_power_of_2


def calculate_settings(n):
    BLOCK_SIZE = next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(
            f"Cannot launch Triton kernel since n = {n} exceeds the maximum CUDA blocksize = {MAX_FUSED_SIZE}."
        )
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


@triton.jit
def _logsumexp_forward(
    logits_ptr,
    logits_row_stride,
    logsumexp_ptr,
    VOCAB_SIZE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row_idx = tl.program_id(0)
    logits_ptr += row_idx * logits_row_stride
    m = -float("inf")
    d = 0.0
    for start in range(0, VOCAB_SIZE, BLOCK_SIZE):
        col_offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < VOCAB_SIZE
        logits = tl.load(logits_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(logits, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new), 0)
        m = m_new
    logsumexp = m + tl.log(d)
    tl.store(logsumexp_ptr + row_idx, logsumexp)


@triton.jit
def _log_softmax_apply(
    logits_ptr,
    logits_row_stride,
    logsumexp_ptr,
    out_ptr,
    out_row_stride,
    VOCAB_SIZE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row_idx = tl.program_id(0)
    logits_ptr += row_idx * logits_row_stride
    out_ptr += row_idx * out_row_stride
    logsumexp = tl.load(logsumexp_ptr + row_idx)
    for start in range(0, VOCAB_SIZE, BLOCK_SIZE):
        col_offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < VOCAB_SIZE
        logits = tl.load(logits_ptr + col_offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + col_offsets, logits - logsumexp, mask=mask)


class ModelNew(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        n_rows, vocab_size = logits.shape
        BLOCK_SIZE, num_warps = calculate_settings(min(vocab_size, 1024))
        logsumexp = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
        out = torch.empty_like(logits)
        _logsumexp_forward[(n_rows,)](
            logits,
            logits.stride(0),
            logsumexp,
            VOCAB_SIZE=vocab_size,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
        )
        _log_softmax_apply[(n_rows,)](
            logits,
            logits.stride(0),
            logsumexp,
            out,
            out.stride(0),
            VOCAB_SIZE=vocab_size,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
        )
        return out
