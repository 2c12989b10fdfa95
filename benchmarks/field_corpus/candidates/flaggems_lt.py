"""Field corpus: FlagGems's `src/flag_gems/ops/lt.py` (Apache-2.0, https://github.com/FlagOpen/FlagGems at 532ff438c703),
judged against `torch.lt`.

The library's code below the adapter is as the library writes it; the adapter replaces only its imports of
the library's own runtime, and `ModelNew` calls the library's entry point
(see benchmarks/field_corpus/SOURCES.md)."""


import torch
import triton
import triton.language as tl



# ---- adapter: flag_gems' runtime (libentry, torch_device_fn, runtime configs) for one file ----
import contextlib


def libentry():
    # flag_gems.utils.libentry caches launch arguments per kernel; the kernel itself is unchanged
    def decorator(fn):
        return fn

    return decorator


def libtuner(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, strategy=None,
             warmup=25, rep=100, **kwargs):
    # flag_gems.utils.libtuner is triton.autotune with a disk cache and key strategies
    return triton.autotune(configs=configs, key=key, prune_configs_by=prune_configs_by,
                           reset_to_zero=reset_to_zero, restore_value=restore_value, warmup=warmup, rep=rep)


class torch_device_fn:
    # flag_gems.runtime.torch_device_fn is torch.cuda on NVIDIA
    @staticmethod
    def device(device):
        if torch.device(device).type == "cuda":
            return torch.cuda.device(device)
        return contextlib.nullcontext()

    get_device_capability = torch.cuda.get_device_capability
    get_device_properties = torch.cuda.get_device_properties
    current_device = torch.cuda.current_device


class device:
    # flag_gems.runtime.device on NVIDIA
    name = "cuda"
    vendor_name = "nvidia"


class runtime:
    # flag_gems.runtime: the tuned configs of runtime/backend/_nvidia/tune_configs.yaml and the heuristics of
    # heuristics_config_utils.py that this file asks for, as the config loader builds them
    @staticmethod
    def get_tuned_config(op_name):
        return [
            triton.Config(meta, num_warps=warps, num_stages=stages, num_ctas=ctas)
            for meta, warps, stages, ctas in _TUNED_CONFIGS[op_name]
        ]

    @staticmethod
    def get_heuristic_config(op_name):
        return _HEURISTIC_CONFIGS[op_name]

_TUNED_CONFIGS = {
}

_HEURISTIC_CONFIGS = {
}


# ---- adapter: flag_gems.utils.pointwise_dynamic generates, per scalar function, a kernel that loads each
# tensor operand, calls the function and stores its result; this is that kernel for contiguous operands
# (broadcast first), written once and handed the function as a constexpr ----
@triton.jit
def _pointwise_kernel(a0, a1, a2, a3, a4, a5, out0, n_elements, FN: tl.constexpr, NARGS: tl.constexpr,
                      T0: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr,
                      T4: tl.constexpr, T5: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    if T0:
        x0 = tl.load(a0 + offsets, mask=mask)
    else:
        x0 = a0
    if T1:
        x1 = tl.load(a1 + offsets, mask=mask)
    else:
        x1 = a1
    if T2:
        x2 = tl.load(a2 + offsets, mask=mask)
    else:
        x2 = a2
    if T3:
        x3 = tl.load(a3 + offsets, mask=mask)
    else:
        x3 = a3
    if T4:
        x4 = tl.load(a4 + offsets, mask=mask)
    else:
        x4 = a4
    if T5:
        x5 = tl.load(a5 + offsets, mask=mask)
    else:
        x5 = a5
    if NARGS == 1:
        y = FN(x0)
    elif NARGS == 2:
        y = FN(x0, x1)
    elif NARGS == 3:
        y = FN(x0, x1, x2)
    elif NARGS == 4:
        y = FN(x0, x1, x2, x3)
    elif NARGS == 5:
        y = FN(x0, x1, x2, x3, x4)
    else:
        y = FN(x0, x1, x2, x3, x4, x5)
    tl.store(out0 + offsets, y, mask=mask)


class _Pointwise:
    def __init__(self, fn, is_tensor, promotion):
        self.fn = fn
        self.is_tensor = is_tensor
        self.promotion = promotion

    def _out_dtype(self, args):
        *positions, method = self.promotion
        picked = [args[i] for i in positions]
        dtype = picked[0].dtype if len(picked) == 1 and isinstance(picked[0], torch.Tensor) else None
        if dtype is None:
            dtype = torch.result_type(*picked) if len(picked) == 2 else torch.result_type(picked[0], picked[-1])
        if method == "ALWAYS_BOOL":
            return torch.bool
        if method == "INT_TO_FLOAT" and not dtype.is_floating_point:
            return torch.get_default_dtype()
        if method == "BOOL_TO_LONG" and dtype == torch.bool:
            return torch.int64
        if method == "COMPLEX_TO_FLOAT" and dtype.is_complex:
            return dtype.to_real()
        return dtype

    def instantiate(self, ndim):
        # FlagGems' `where` asks its pointwise op for code of `ndim` dimensions first; this one flattens operands
        return self

    def __call__(self, *args, out0=None):
        is_tensor = self.is_tensor or [True] * len(args)
        tensors = torch.broadcast_tensors(*[a for a, t in zip(args, is_tensor) if t])
        shape = tensors[0].shape
        device = tensors[0].device
        flat = iter([t.contiguous() for t in tensors])
        operands = [next(flat) if t else a for a, t in zip(args, is_tensor)]
        if out0 is None:
            out0 = torch.empty(shape, dtype=self._out_dtype(list(args)), device=device)
        result = out0 if out0.is_contiguous() else torch.empty_like(out0, memory_format=torch.contiguous_format)
        n = result.numel()
        padded = operands + [0] * (6 - len(operands))
        flags = list(is_tensor) + [False] * (6 - len(is_tensor))
        grid = (triton.cdiv(n, 1024),)
        with torch_device_fn.device(device):
            _pointwise_kernel[grid](*padded, result, n, FN=self.fn, NARGS=len(operands), T0=flags[0], T1=flags[1],
                                    T2=flags[2], T3=flags[3], T4=flags[4], T5=flags[5], BLOCK=1024)
        if result is not out0:
            out0.copy_(result)
        return out0


def pointwise_dynamic(is_tensor=None, num_outputs=1, promotion_methods=None, dtypes=None, config=None):
    def decorator(fn):
        return _Pointwise(fn, is_tensor, promotion_methods[0])

    return decorator


# ---- end of adapter; src/flag_gems/ops/lt.py as the library writes it ----


import logging

import triton
import triton.language as tl


logger = logging.getLogger(__name__)


@pointwise_dynamic(promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def lt_func(x, y):
    return x.to(tl.float32) < y


def lt(A, B):
    logger.debug("GEMS LT")
    return lt_func(A, B)


@pointwise_dynamic(is_tensor=[True, False], promotion_methods=[(0, 1, "ALWAYS_BOOL")])
@triton.jit
def lt_func_scalar(x, y):
    return x.to(tl.float32) < y


def lt_scalar(A, B):
    logger.debug("GEMS LT SCALAR")
    return lt_func_scalar(A, B)



# ---- the wrapper: the torch operation's signature onto the library's entry point ----


class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        return lt(x, y)
