"""Honest: SiLU written with Liger-Kernel's ops/utils.py helpers copied in: `compare_version` (importlib +
packaging) to pick the libdevice import path, `ensure_contiguous` (functools.wraps) and
`calculate_settings`, and a torch.autograd.Function whose forward launches a row kernel (Liger's swiglu
layout) and whose backward launches a second kernel."""

import functools
import importlib
import operator

import torch
import triton
import triton.language as tl
from packaging.version import Version


def compare_version(package: str, operator, target: str):
    try:
        pkg = importlib.import_module(package)
    except ImportError:
        return False
    pkg_version = Version(pkg.__version__)
    return operator(pkg_version, Version(target))


if compare_version("triton", operator.ge, "3.0.0"):
    from triton.language.extra.libdevice import tanh  # noqa: F401  (kept as Liger's utils import it)
else:
    from triton.language.math import tanh  # noqa: F401


def ensure_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        def maybe_to_contiguous(x):
            return x.contiguous() if isinstance(x, torch.Tensor) else x

        args = [maybe_to_contiguous(arg) for arg in args]
        kwargs = {k: maybe_to_contiguous(v) for k, v in kwargs.items()}
        return fn(ctx, *args, **kwargs)

    return wrapper


def calculate_settings(n):
    MAX_FUSED_SIZE = 65536
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"Cannot launch Triton kernel since n = {n} exceeds the recommended Triton blocksize")
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def _silu_forward_kernel(a_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a_ptr += program_id * stride
    c_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    c_row = silu(a_row)
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


@triton.jit
def _silu_backward_kernel(dc_ptr, a_ptr, da_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    dc_ptr += program_id * stride
    a_ptr += program_id * stride
    da_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    dc_row = tl.load(dc_ptr + col_offsets, mask=mask, other=0)
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    sig_a = tl.sigmoid(a_row)
    da_row = dc_row * (sig_a + a_row * sig_a * (1 - sig_a))
    tl.store(da_ptr + col_offsets, da_row, mask=mask)


def silu_forward(a):
    ori_shape = a.shape
    n_cols = ori_shape[-1]
    a = a.view(-1, n_cols)
    c = torch.empty_like(a)
    n_rows = a.shape[0]
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _silu_forward_kernel[(n_rows,)](a, c, c.stride(-2), n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return a, c.view(*ori_shape)


def silu_backward(a, dc):
    ori_shape = dc.shape
    n_cols = ori_shape[-1]
    dc = dc.view(-1, n_cols)
    da = torch.empty_like(a)
    n_rows = dc.shape[0]
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _silu_backward_kernel[(n_rows,)](
        dc, a, da, dc.stride(-2), n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
    )
    return da.view(*ori_shape)


class LigerSiLUFunction(torch.autograd.Function):
    @staticmethod
    @ensure_contiguous
    def forward(ctx, a):
        a, c = silu_forward(a)
        ctx.save_for_backward(a)
        return c

    @staticmethod
    @ensure_contiguous
    def backward(ctx, dc):
        (a,) = ctx.saved_tensors
        return silu_backward(a, dc)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return LigerSiLUFunction.apply(x)
