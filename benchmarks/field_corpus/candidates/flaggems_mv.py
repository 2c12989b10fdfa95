"""Field corpus: FlagGems's `src/flag_gems/ops/mv.py` (Apache-2.0, https://github.com/FlagOpen/FlagGems at 532ff438c703),
judged against `torch.mv`.

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
    'mv': [({'BLOCK_M': 32, 'BLOCK_N': 1}, 4, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 1}, 4, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 1}, 8, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 1}, 8, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 2}, 4, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 2}, 4, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 2}, 8, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 2}, 8, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 4}, 4, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 4}, 4, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 4}, 8, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 4}, 8, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 8}, 4, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 8}, 4, 4, 1), ({'BLOCK_M': 32, 'BLOCK_N': 8}, 8, 3, 1), ({'BLOCK_M': 32, 'BLOCK_N': 8}, 8, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 1}, 4, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 1}, 4, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 1}, 8, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 1}, 8, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 2}, 4, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 2}, 4, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 2}, 8, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 2}, 8, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 4}, 4, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 4}, 4, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 4}, 8, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 4}, 8, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 8}, 4, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 8}, 4, 4, 1), ({'BLOCK_M': 64, 'BLOCK_N': 8}, 8, 3, 1), ({'BLOCK_M': 64, 'BLOCK_N': 8}, 8, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 1}, 4, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 1}, 4, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 1}, 8, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 1}, 8, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 2}, 4, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 2}, 4, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 2}, 8, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 2}, 8, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 4}, 4, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 4}, 4, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 4}, 8, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 4}, 8, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 8}, 4, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 8}, 4, 4, 1), ({'BLOCK_M': 128, 'BLOCK_N': 8}, 8, 3, 1), ({'BLOCK_M': 128, 'BLOCK_N': 8}, 8, 4, 1)],
}

_HEURISTIC_CONFIGS = {
}

from collections import namedtuple

@triton.jit
def program_id(
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)

class tle(namedtuple('tle', ())):
    # flag_gems.utils.triton_lang_extension (a namedtuple class: a global Triton lets a kernel read)
    program_id = program_id


# ---- end of adapter; src/flag_gems/ops/mv.py as the library writes it ----


import logging

import torch
import triton
import triton.language as tl


logger = logging.getLogger(__name__)


@libentry()
@triton.autotune(
    configs=runtime.get_tuned_config("mv"),
    key=["M", "N"],
)
@triton.jit
def mv_kernel(
    A,
    B,
    C,
    N,
    M,
    stride_an,
    stride_am,
    stride_bm,
    stride_cn,
    BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    pid = tle.program_id(0)
    offset_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)[:, None]
    offset_m = tl.arange(0, BLOCK_M)[None, :]
    n_mask = offset_n < N
    A_ptrs = A + offset_n * stride_an + offset_m * stride_am
    B_ptrs = B + offset_m * stride_bm
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for m in range(0, M, BLOCK_M):
        m_mask = m + offset_m < M
        a = tl.load(A_ptrs, mask=n_mask & m_mask, other=0.0).to(tl.float32)
        b = tl.load(B_ptrs, mask=m_mask, other=0.0).to(tl.float32)
        acc += a * b
        A_ptrs += BLOCK_M * stride_am
        B_ptrs += BLOCK_M * stride_bm

    acc = tl.sum(acc, axis=1)
    C_ptrs = C + offset_n * stride_cn
    tl.store(C_ptrs, acc[:, None], mask=n_mask)


def mv(inp, vec):
    logger.debug("GEMS MV")
    assert inp.shape[1] == vec.shape[0], "incompatible dimensions"
    N, M = inp.shape
    out = torch.empty((N,), device=inp.device, dtype=inp.dtype)
    grid = lambda META: (triton.cdiv(N, META["BLOCK_N"]),)
    with torch_device_fn.device(inp.device):
        mv_kernel[grid](
            inp,
            vec,
            out,
            N,
            M,
            inp.stride(0),
            inp.stride(1),
            vec.stride(0),
            out.stride(0),
        )
    return out



# ---- the wrapper: the torch operation's signature onto the library's entry point ----


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, a, v):
        return mv(a, v)
