"""Field corpus: FlagGems's `src/flag_gems/ops/weightnorm.py, src/flag_gems/fused/weight_norm.py` (Apache-2.0, https://github.com/FlagOpen/FlagGems at 532ff438c703),
judged against `torch._weight_norm(dim=0)`.

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
    'weight_norm_kernel': [({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 256}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 256}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 256}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 256}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 256}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 256}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 256}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 256}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 256}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 256}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 256}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 256}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 256}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 256}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 256}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1)],
    'weight_norm_kernel_first': [({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 4, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 8, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 512}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 512}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 512}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 1024}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 1024}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 1024}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 2048}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 2048}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 32, 'BLOCK_COL_SIZE': 2048}, 16, 2, 1)],
    'weight_norm_kernel_last': [({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 1}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 1}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 1}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 2}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 2}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 2}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 4}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 4}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 4}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 8}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 8}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 8}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 32}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 32}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 512, 'BLOCK_COL_SIZE': 32}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 1}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 1}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 1}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 2}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 2}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 2}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 4}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 4}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 4}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 8}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 8}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 8}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 32}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 32}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 1024, 'BLOCK_COL_SIZE': 32}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 1}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 1}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 1}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 2}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 2}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 2}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 4}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 4}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 4}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 8}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 8}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 8}, 16, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 32}, 4, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 32}, 8, 2, 1), ({'BLOCK_ROW_SIZE': 2048, 'BLOCK_COL_SIZE': 32}, 16, 2, 1)],
}

_HEURISTIC_CONFIGS = {
}

from triton.language.extra.cuda import libdevice as tl_extra_shim  # flag_gems on NVIDIA

from collections import namedtuple

@triton.jit
def program_id(
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)

class tle(namedtuple('tle', ())):
    # flag_gems.utils.triton_lang_extension (a namedtuple class: a global Triton lets a kernel read)
    program_id = program_id


# ---- end of adapter; src/flag_gems/ops/weightnorm.py, src/flag_gems/fused/weight_norm.py as the library writes it ----


import logging
import math

import torch
import triton
import triton.language as tl


logger = logging.getLogger(__name__)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("weight_norm_kernel_last"), key=["M", "N"]
)
@triton.jit(do_not_specialize=["eps"])
def weight_norm_kernel_last(
    output,
    norm,
    v,
    g,
    M,
    N,
    eps,
    BLOCK_ROW_SIZE: tl.constexpr,
    BLOCK_COL_SIZE: tl.constexpr,
):
    tx = tl.arange(0, BLOCK_COL_SIZE)[:, None]
    bx = tle.program_id(axis=0) * BLOCK_COL_SIZE
    col_offset = bx + tx
    col_mask = col_offset < N

    ty = tl.arange(0, BLOCK_ROW_SIZE)[None, :]
    v_block = tl.zeros([BLOCK_COL_SIZE, BLOCK_ROW_SIZE], dtype=tl.float32)
    for base in range(0, M, BLOCK_ROW_SIZE):
        row_offset = base + ty
        mask = row_offset < M and col_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_block += v_value * v_value

    normalized = tl.sqrt(tl.sum(v_block, axis=1) + eps)
    tl.store(norm + col_offset, normalized[:, None], mask=col_mask)
    g_value = tl.load(g + col_offset, mask=col_mask).to(tl.float32)

    for base in range(0, M, BLOCK_ROW_SIZE):
        row_offset = base + ty
        mask = row_offset < M and col_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_vec = v_value / normalized[:, None]
        out = v_vec * g_value
        tl.store(output + row_offset * N + col_offset, out, mask=mask)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("weight_norm_kernel_first"), key=["M", "N"]
)
@triton.jit(do_not_specialize=["eps"])
def weight_norm_kernel_first(
    output,
    norm,
    v,
    g,
    M,
    N,
    eps,
    BLOCK_ROW_SIZE: tl.constexpr,
    BLOCK_COL_SIZE: tl.constexpr,
):
    ty = tl.arange(0, BLOCK_ROW_SIZE)[:, None]
    by = tle.program_id(axis=0) * BLOCK_ROW_SIZE
    row_offset = by + ty
    row_mask = row_offset < M

    tx = tl.arange(0, BLOCK_COL_SIZE)[None, :]
    v_block = tl.zeros([BLOCK_ROW_SIZE, BLOCK_COL_SIZE], dtype=tl.float32)
    for base in range(0, N, BLOCK_COL_SIZE):
        col_offset = base + tx
        mask = col_offset < N and row_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_block += v_value * v_value

    normalized = tl.sqrt(tl.sum(v_block, axis=1) + eps)
    tl.store(norm + row_offset, normalized[:, None], mask=row_mask)
    g_value = tl.load(g + row_offset, mask=row_mask).to(tl.float32)

    for base in range(0, N, BLOCK_COL_SIZE):
        col_offset = base + tx
        mask = col_offset < N and row_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_vec = v_value / normalized[:, None]
        out = v_vec * g_value
        tl.store(output + row_offset * N + col_offset, out, mask=mask)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("weight_norm_kernel_last"), key=["M", "N"]
)
@triton.jit(do_not_specialize=["eps"])
def weight_norm_bwd_kernel_last(
    v_grad,
    g_grad,
    w,
    v,
    g,
    norm,
    M,
    N,
    eps,
    BLOCK_ROW_SIZE: tl.constexpr,
    BLOCK_COL_SIZE: tl.constexpr,
):
    tx = tl.arange(0, BLOCK_COL_SIZE)[:, None]
    bx = tle.program_id(axis=0) * BLOCK_COL_SIZE
    col_offset = tx + bx
    col_mask = col_offset < N

    g_value = tl.load(g + col_offset, mask=col_mask).to(tl.float32)
    norm_value = tl.load(norm + col_offset, mask=col_mask).to(tl.float32)
    norm_1 = 1 / (norm_value + eps)
    norm_3 = tl_extra_shim.pow(norm_1, 3)

    ty = tl.arange(0, BLOCK_ROW_SIZE)[None, :]

    vw_block = tl.zeros([BLOCK_COL_SIZE, BLOCK_ROW_SIZE], dtype=tl.float32)
    for base in range(0, M, BLOCK_ROW_SIZE):
        row_offset = base + ty
        mask = row_offset < M and col_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        w_value = tl.load(w + row_offset * N + col_offset, mask=mask).to(tl.float32)
        vw_block += v_value * w_value
    vw_sum = tl.sum(vw_block, 1)[:, None]

    for base in range(0, M, BLOCK_ROW_SIZE):
        row_offset = base + ty
        mask = row_offset < M and col_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        w_value = tl.load(w + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_grad_value = g_value * (w_value * norm_1 - v_value * norm_3 * vw_sum)
        tl.store(v_grad + row_offset * N + col_offset, v_grad_value, mask=mask)

    g_grad_value = vw_sum / (norm_value + eps)
    tl.store(g_grad + col_offset, g_grad_value, mask=col_mask)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("weight_norm_kernel_first"), key=["M", "N"]
)
@triton.jit(do_not_specialize=["eps"])
def weight_norm_bwd_kernel_first(
    v_grad,
    g_grad,
    w,
    v,
    g,
    norm,
    M,
    N,
    eps,
    BLOCK_ROW_SIZE: tl.constexpr,
    BLOCK_COL_SIZE: tl.constexpr,
):
    ty = tl.arange(0, BLOCK_ROW_SIZE)[:, None]
    by = tle.program_id(axis=0) * BLOCK_ROW_SIZE
    row_offset = by + ty
    row_mask = row_offset < M

    g_value = tl.load(g + row_offset, mask=row_mask).to(tl.float32)
    norm_value = tl.load(norm + row_offset, mask=row_mask).to(tl.float32)
    norm_1 = 1 / (norm_value + eps)
    norm_3 = tl_extra_shim.pow(norm_1, 3)

    tx = tl.arange(0, BLOCK_COL_SIZE)[None, :]

    v_block = tl.zeros([BLOCK_ROW_SIZE, BLOCK_COL_SIZE], dtype=tl.float32)
    for base in range(0, N, BLOCK_COL_SIZE):
        col_offset = base + tx
        mask = col_offset < N and row_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        w_value = tl.load(w + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_block += v_value * w_value
    vw_sum = tl.sum(v_block, 1)[:, None]

    for base in range(0, N, BLOCK_COL_SIZE):
        col_offset = base + tx
        mask = col_offset < N and row_mask
        v_value = tl.load(v + row_offset * N + col_offset, mask=mask).to(tl.float32)
        w_value = tl.load(w + row_offset * N + col_offset, mask=mask).to(tl.float32)
        v_grad_value = g_value * (w_value * norm_1 - v_value * norm_3 * vw_sum)
        tl.store(v_grad + row_offset * N + col_offset, v_grad_value, mask=mask)

    g_grad_value = vw_sum / (norm_value + eps)
    tl.store(g_grad + row_offset, g_grad_value, mask=row_mask)


def weight_norm_interface(v, g, dim=0):
    logger.debug("GEMS WEIGHT NORM INTERFACE FORWARD")
    v = v.contiguous()
    g = g.contiguous()
    output = torch.empty_like(v)
    norm = torch.empty_like(g)
    if dim == 0:
        M = v.shape[0]
        N = math.prod(v.shape[1:])
        grid = lambda META: (triton.cdiv(M, META["BLOCK_ROW_SIZE"]),)
        with torch_device_fn.device(v.device):
            weight_norm_kernel_first[grid](
                output, norm, v, g, M, N, eps=torch.finfo(torch.float32).tiny
            )
    elif dim == v.ndim - 1:
        M = math.prod(v.shape[:-1])
        N = v.shape[dim]
        grid = lambda META: (triton.cdiv(N, META["BLOCK_COL_SIZE"]),)
        with torch_device_fn.device(v.device):
            weight_norm_kernel_last[grid](
                output, norm, v, g, M, N, eps=torch.finfo(torch.float32).tiny
            )
    return output, norm


def weight_norm_interface_backward(w_grad, saved_v, saved_g, saved_norms, dim):
    logger.debug("GEMS WEIGHT NORM INTERFACE BACKWARD")
    w_grad = w_grad.contiguous()
    saved_v = saved_v.contiguous()
    saved_g = saved_g.contiguous()
    saved_norms = saved_norms.contiguous()
    v_grad = torch.empty_like(saved_v)
    g_grad = torch.empty_like(saved_g)

    if dim == 0:
        M = saved_v.shape[0]
        N = math.prod(saved_v.shape[1:])
        grid = lambda META: (triton.cdiv(M, META["BLOCK_ROW_SIZE"]),)
        with torch_device_fn.device(saved_v.device):
            weight_norm_bwd_kernel_first[grid](
                v_grad,
                g_grad,
                w_grad,
                saved_v,
                saved_g,
                saved_norms,
                M,
                N,
                eps=torch.finfo(torch.float32).tiny,
            )
    elif dim == saved_v.ndim - 1:
        M = math.prod(saved_v.shape[:dim])
        N = saved_v.shape[dim]
        grid = lambda META: (triton.cdiv(N, META["BLOCK_COL_SIZE"]),)
        with torch_device_fn.device(saved_v.device):
            weight_norm_bwd_kernel_last[grid](
                v_grad,
                g_grad,
                w_grad,
                saved_v,
                saved_g,
                saved_norms,
                M,
                N,
                eps=torch.finfo(torch.float32).tiny,
            )
    return v_grad, g_grad


import logging
import math

import torch
import triton
import triton.language as tl


logger = logging.getLogger(__name__)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("weight_norm_kernel"),
    key=["v_shape0", "v_shape1", "v_shape2"],
)
@triton.jit(do_not_specialize=["eps"])
def weight_norm_except_dim_kernel(
    output,
    norm,
    v,
    g,
    v_shape0,
    v_shape1,
    v_shape2,
    eps,
    BLOCK_ROW_SIZE: tl.constexpr,
    BLOCK_COL_SIZE: tl.constexpr,
):
    tid_m = tl.arange(0, BLOCK_ROW_SIZE)[:, None]
    pid = tle.program_id(axis=0) * BLOCK_ROW_SIZE
    row_offset = pid + tid_m
    row_mask = row_offset < v_shape1

    tid_n = tl.arange(0, BLOCK_COL_SIZE)[None, :]
    v_block = tl.zeros([BLOCK_ROW_SIZE, BLOCK_COL_SIZE], dtype=tl.float32)
    for base in range(0, v_shape0 * v_shape2, BLOCK_COL_SIZE):
        col_offset = base + tid_n
        m_idx = col_offset // v_shape2
        n_idx = row_offset
        k_idx = col_offset % v_shape2

        mask = m_idx < v_shape0 and row_mask

        v_offsets = m_idx * v_shape1 * v_shape2 + n_idx * v_shape2 + k_idx
        v_value = tl.load(v + v_offsets, mask=mask)
        v_block += v_value * v_value
    v_sum = tl.sum(v_block, axis=1) + eps
    v_norm = tl.sqrt(v_sum[:, None])
    tl.store(norm + row_offset, v_norm, mask=row_mask)

    g_value = tl.load(g + row_offset, mask=row_mask)
    for base in range(0, v_shape0 * v_shape2, BLOCK_COL_SIZE):
        col_offset = base + tid_n
        m_idx = col_offset // v_shape2
        n_idx = row_offset
        k_idx = col_offset % v_shape2

        mask = m_idx < v_shape0 and row_mask

        v_offsets = m_idx * v_shape1 * v_shape2 + n_idx * v_shape2 + k_idx
        v_value = tl.load(v + v_offsets, mask=mask)
        out = v_value * g_value / v_norm
        tl.store(output + v_offsets, out, mask=mask)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("weight_norm_kernel"),
    key=["v_shape0", "v_shape1", "v_shape2"],
)
@triton.jit(do_not_specialize=["eps"])
def weight_norm_except_dim_bwd_kernel(
    v_grad,
    g_grad,
    grad,
    v,
    g,
    norm,
    v_shape0,
    v_shape1,
    v_shape2,
    eps,
    BLOCK_ROW_SIZE: tl.constexpr,
    BLOCK_COL_SIZE: tl.constexpr,
):
    tid_m = tl.arange(0, BLOCK_ROW_SIZE)[:, None]
    pid = tle.program_id(axis=0) * BLOCK_ROW_SIZE
    row_offset = pid + tid_m
    row_mask = row_offset < v_shape1

    g_value = tl.load(g + row_offset, mask=row_mask).to(tl.float32)
    norm_value = tl.load(norm + row_offset, mask=row_mask).to(tl.float32)

    tid_n = tl.arange(0, BLOCK_COL_SIZE)[None, :]

    v_block = tl.zeros([BLOCK_ROW_SIZE, BLOCK_COL_SIZE], dtype=tl.float32)
    for base in range(0, v_shape0 * v_shape2, BLOCK_COL_SIZE):
        col_offset = base + tid_n
        m_idx = col_offset // v_shape2
        n_idx = row_offset
        k_idx = col_offset % v_shape2

        mask = m_idx < v_shape0 and row_mask

        v_offsets = m_idx * v_shape1 * v_shape2 + n_idx * v_shape2 + k_idx
        v_value = tl.load(v + v_offsets, mask=mask).to(tl.float32)
        grad_value = tl.load(grad + v_offsets, mask=mask).to(tl.float32)
        v_block += v_value * grad_value
    vw_sum = tl.sum(v_block, axis=1)[:, None]

    for base in range(0, v_shape0 * v_shape2, BLOCK_COL_SIZE):
        col_offset = base + tid_n
        m_idx = col_offset // v_shape2
        n_idx = row_offset
        k_idx = col_offset % v_shape2

        mask = m_idx < v_shape0 and row_mask

        v_offsets = m_idx * v_shape1 * v_shape2 + n_idx * v_shape2 + k_idx
        v_value = tl.load(v + v_offsets, mask=mask).to(tl.float32)
        grad_value = tl.load(grad + v_offsets, mask=mask).to(tl.float32)
        v_grad_value = g_value * (
            grad_value / (norm_value + eps)
            - v_value / (norm_value * norm_value * norm_value + eps) * vw_sum
        )
        tl.store(v_grad + v_offsets, v_grad_value, mask=mask)

    g_grad_value = vw_sum / (norm_value + eps)
    tl.store(g_grad + row_offset, g_grad_value, mask=row_mask)


def weight_norm_except_dim(v, g, dim):
    logger.debug("GEMS WEIGHT NORM EXCEPT DIM FORWARD")
    v = v.contiguous()
    output = torch.empty_like(v)
    norm = torch.empty_like(g, dtype=torch.float32)
    v_shape = [
        math.prod(v.shape[:dim]),
        v.shape[dim],
        math.prod(v.shape[dim + 1 :]),
    ]

    grid = lambda META: (triton.cdiv(v_shape[1], META["BLOCK_ROW_SIZE"]),)

    with torch_device_fn.device(v.device):
        weight_norm_except_dim_kernel[grid](
            output,
            norm,
            v,
            g,
            v_shape[0],
            v_shape[1],
            v_shape[2],
            eps=torch.finfo(torch.float32).tiny,
        )
    return output, norm


def weight_norm_except_dim_backward(grad, v, g, norm, dim):
    logger.debug("GEMS WEIGHT NORM EXCEPT DIM BACKWARD")
    grad = grad.contiguous()
    v_grad = torch.empty_like(v)
    g_grad = torch.empty_like(g)
    v_shape = [
        math.prod(v.shape[:dim]),
        v.shape[dim],
        math.prod(v.shape[dim + 1 :]),
    ]

    grid = lambda META: (triton.cdiv(v_shape[1], META["BLOCK_ROW_SIZE"]),)
    with torch_device_fn.device(v.device):
        weight_norm_except_dim_bwd_kernel[grid](
            v_grad,
            g_grad,
            grad,
            v,
            g,
            norm,
            *v_shape,
            eps=torch.finfo(torch.float32).tiny,
        )
    return v_grad, g_grad


class WeightNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, g, dim=0):
        logger.debug("GEMS WEIGHT NORM")
        dim = dim % v.ndim
        can_use_fused = dim == 0 or dim == v.ndim - 1
        if can_use_fused:
            output, norm = weight_norm_interface(v, g, dim)
        else:
            output, norm = weight_norm_except_dim(v, g, dim)
        ctx.save_for_backward(v, g, norm)
        ctx.dim = dim
        ctx.can_use_fused = can_use_fused
        return output

    @staticmethod
    def backward(ctx, grad):
        logger.debug("GEMS WEIGHT NORM BACKWARD")
        v, g, norm = ctx.saved_tensors
        dim = ctx.dim
        if ctx.can_use_fused:
            v_grad, g_grad = weight_norm_interface_backward(grad, v, g, norm, dim)
        else:
            v_grad, g_grad = weight_norm_except_dim_backward(grad, v, g, norm, dim)
        return v_grad, g_grad, None


def weight_norm(v, g, dim=0):
    return WeightNorm.apply(v, g, dim)



# ---- the wrapper: the torch operation's signature onto the library's entry point ----


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, v, g):
        return weight_norm(v, g, 0)
