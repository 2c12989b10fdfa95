"""Honest: exact GELU in FlagGems' style: a `libentry()` decorator (FlagGems caches the launch arguments
in front of the JITFunction; here a thin class that forwards `__getitem__` and `run`), a heuristics dict
in the manner of `runtime.get_heuristic_config`, and a `pointwise_dynamic`-like helper that flattens the
operands, allocates the output and builds the grid for any pointwise body."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


class LibEntry(triton.KernelInterface):
    """Stands in front of a JITFunction (or Heuristics / Autotuner) and forwards launches to it; the
    launch cache FlagGems keeps here is left out."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = fn.arg_names
        self.divisibility = 16

    def run(self, *args, **kwargs):
        grid = kwargs.pop("grid")
        kwargs.pop("warmup", None)
        return self.fn[grid](*args, **kwargs)


def libentry():
    def decorator(fn):
        return LibEntry(fn)

    return decorator


HEURISTICS_CONFIGS = {
    "pointwise": {
        "BLOCK_SIZE": lambda args: min(1024, triton.next_power_of_2(args["n_elements"])),
        "EVEN": lambda args: args["n_elements"] % min(1024, triton.next_power_of_2(args["n_elements"])) == 0,
    },
}


def get_heuristic_config(name):
    return HEURISTICS_CONFIGS[name]


@libentry()
@triton.heuristics(get_heuristic_config("pointwise"))
@triton.jit
def gelu_none_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + offsets).to(tl.float32)
    else:
        x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    y = 0.5 * x * (1 + libdevice.erf(x * 0.7071067811865476))
    if EVEN:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty))
    else:
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=offsets < n_elements)


def pointwise_dynamic(kernel):
    """The launcher FlagGems generates for a unary pointwise op, written out by hand."""

    def launch(x: torch.Tensor) -> torch.Tensor:
        x_flat = x.contiguous().view(-1)
        out = torch.empty_like(x_flat)
        n_elements = x_flat.numel()
        kernel[lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)](x_flat, out, n_elements)
        return out.view(x.shape)

    return launch


gelu = pointwise_dynamic(gelu_none_kernel)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu(x)
