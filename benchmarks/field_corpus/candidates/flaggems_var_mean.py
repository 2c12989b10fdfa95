"""Field corpus: FlagGems's `src/flag_gems/ops/var_mean.py` (Apache-2.0, https://github.com/FlagOpen/FlagGems at 532ff438c703),
judged against `torch.var_mean(dim=1)`.

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
    'var_mean': [({'BLOCK_M': 1, 'BLOCK_N': 1024}, 4, 2, 1), ({'BLOCK_M': 1, 'BLOCK_N': 1024}, 8, 2, 1), ({'BLOCK_M': 1, 'BLOCK_N': 1024}, 16, 2, 1), ({'BLOCK_M': 1, 'BLOCK_N': 2048}, 4, 2, 1), ({'BLOCK_M': 1, 'BLOCK_N': 2048}, 8, 2, 1), ({'BLOCK_M': 1, 'BLOCK_N': 2048}, 16, 2, 1), ({'BLOCK_M': 2, 'BLOCK_N': 1024}, 4, 2, 1), ({'BLOCK_M': 2, 'BLOCK_N': 1024}, 8, 2, 1), ({'BLOCK_M': 2, 'BLOCK_N': 1024}, 16, 2, 1), ({'BLOCK_M': 2, 'BLOCK_N': 2048}, 4, 2, 1), ({'BLOCK_M': 2, 'BLOCK_N': 2048}, 8, 2, 1), ({'BLOCK_M': 2, 'BLOCK_N': 2048}, 16, 2, 1), ({'BLOCK_M': 4, 'BLOCK_N': 1024}, 4, 2, 1), ({'BLOCK_M': 4, 'BLOCK_N': 1024}, 8, 2, 1), ({'BLOCK_M': 4, 'BLOCK_N': 1024}, 16, 2, 1), ({'BLOCK_M': 4, 'BLOCK_N': 2048}, 4, 2, 1), ({'BLOCK_M': 4, 'BLOCK_N': 2048}, 8, 2, 1), ({'BLOCK_M': 4, 'BLOCK_N': 2048}, 16, 2, 1), ({'BLOCK_M': 8, 'BLOCK_N': 1024}, 4, 2, 1), ({'BLOCK_M': 8, 'BLOCK_N': 1024}, 8, 2, 1), ({'BLOCK_M': 8, 'BLOCK_N': 1024}, 16, 2, 1), ({'BLOCK_M': 8, 'BLOCK_N': 2048}, 4, 2, 1), ({'BLOCK_M': 8, 'BLOCK_N': 2048}, 8, 2, 1), ({'BLOCK_M': 8, 'BLOCK_N': 2048}, 16, 2, 1)],
}

def var_mean_heur_block_n(args):
    return triton.next_power_of_2(args["BLOCK_NUM"])

_HEURISTIC_CONFIGS = {
    'var_mean': {
        "BLOCK_N": var_mean_heur_block_n,
    },
}

# flag_gems.utils
def dim_compress(inp, dims):
    if isinstance(dims, int):
        dims = [dims]
    dim = inp.ndim
    stride = inp.stride()
    batch_dim = [i for i in range(dim) if i not in dims]
    sorted_reduction_dim = sorted(dims, key=lambda x: stride[x], reverse=True)
    order = batch_dim + sorted_reduction_dim
    return inp.permute(order).contiguous()

from collections import namedtuple

@triton.jit
def program_id(
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)

class tle(namedtuple('tle', ())):
    # flag_gems.utils.triton_lang_extension (a namedtuple class: a global Triton lets a kernel read)
    program_id = program_id


# ---- end of adapter; src/flag_gems/ops/var_mean.py as the library writes it ----


import logging

import torch
import triton
import triton.language as tl


logger = logging.getLogger(__name__)


@triton.jit
def welford_func(mean_x, count_x, M_x, mean_y, count_y, M_y):
    count = count_x + count_y
    _count = tl.maximum(count, 1)
    mc_x = mean_x * count_x
    mc_y = mean_y * count_y
    mean = (mc_x + mc_y) / _count
    M = M_x + mc_x * mean_x + M_y + mc_y * mean_y - count * mean * mean
    return mean, count, M


@libentry()
@triton.autotune(configs=runtime.get_tuned_config("var_mean"), key=["M", "N"])
@triton.jit(do_not_specialize=["correction"])
def var_mean_welford_kernel(
    X,
    Var,
    Mean,
    M,
    N,
    correction,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Map the program id to the row of X it should compute.
    pid = tle.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    X = X + pid * N
    Var = Var + pid
    Mean = Mean + pid
    row_mask = pid < M

    _mean = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    _acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    _count = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)[None, :]
        col_mask = cols < N
        mask = row_mask and col_mask

        x = tl.load(X + cols, mask, other=0.0).to(tl.float32)

        count = _count + mask
        cnt = tl.maximum(count, 1)
        cur_mean = (_mean * _count + x) / cnt
        _acc += (x - cur_mean) * (x - _mean) * mask
        _mean = cur_mean
        _count = count

    mean, _, acc = tl.reduce((_mean, _count, _acc), axis=1, combine_fn=welford_func)
    var = acc / (N - correction)
    mean = mean[:, None]
    var = var[:, None]
    # Write mean / var
    tl.store(Mean, mean, row_mask)
    tl.store(Var, var, row_mask)


@libentry()
@triton.jit
def var_mean_kernel_1(
    X,
    Acc,
    Average,
    Count,
    N,
    BLOCK_N: tl.constexpr,
):
    # Map the program id to the row of X it should compute.
    pid = tle.program_id(0)
    offset = pid * BLOCK_N + tl.arange(0, BLOCK_N)

    X = X + offset
    Acc = Acc + pid
    Average = Average + pid
    Count = Count + pid
    mask = offset < N

    x = tl.load(X, mask, other=0.0).to(tl.float32)

    count = tl.sum(mask.to(tl.float32))
    average = tl.sum(x) / count
    acc = tl.sum(x * x) - count * average * average

    tl.store(Average, average)
    tl.store(Acc, acc)
    tl.store(Count, count)


@libentry()
@triton.heuristics(runtime.get_heuristic_config("var_mean"))
@triton.jit(do_not_specialize=["correction"])
def var_mean_kernel_2(
    Acc,
    Average,
    Count,
    Var,
    Mean,
    N,
    correction,
    BLOCK_NUM,
    BLOCK_N: tl.constexpr,
):
    offset = tl.arange(0, BLOCK_N)
    mask = offset < BLOCK_NUM
    Acc = Acc + offset
    Average = Average + offset
    Count = Count + offset
    acc = tl.load(Acc, mask, other=0.0).to(tl.float32)
    average = tl.load(Average, mask, other=0.0).to(tl.float32)
    count = tl.load(Count, mask, other=0.0).to(tl.float32)

    mean, _, nvar = tl.reduce((average, count, acc), axis=0, combine_fn=welford_func)

    var = nvar / (N - correction)
    tl.store(Mean, mean)
    tl.store(Var, var)


def var_mean(x, dim=None, *, correction=None, keepdim=False):
    logger.debug("GEMS VAR MEAN")
    if correction is None:
        correction = 1.0

    if dim is None or len(dim) == x.ndim:
        dim = list(range(x.ndim))
        shape = [1] * x.ndim
        N = x.numel()
        var = torch.empty(shape, dtype=x.dtype, device=x.device)
        mean = torch.empty(shape, dtype=x.dtype, device=x.device)
        BLOCK_N = 1024
        BLOCK_NUM = triton.cdiv(N, BLOCK_N)
        acc = torch.empty([BLOCK_NUM], dtype=x.dtype, device=x.device)
        average = torch.empty([BLOCK_NUM], dtype=x.dtype, device=x.device)
        count = torch.empty([BLOCK_NUM], dtype=x.dtype, device=x.device)

        with torch_device_fn.device(x.device):
            var_mean_kernel_1[(BLOCK_NUM,)](x, acc, average, count, N, BLOCK_N=BLOCK_N)
            var_mean_kernel_2[(1,)](
                acc, average, count, var, mean, N, correction, BLOCK_NUM
            )
    else:
        shape = list(x.shape)
        dim = [d % x.ndim for d in dim]
        x = dim_compress(x, dim)
        N = 1
        for i in dim:
            N *= shape[i]
            shape[i] = 1
        M = x.numel() // N
        var = torch.empty(shape, dtype=x.dtype, device=x.device)
        mean = torch.empty(shape, dtype=x.dtype, device=x.device)

        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]),)
        with torch_device_fn.device(x.device):
            var_mean_welford_kernel[grid](x, var, mean, M, N, correction)

    if not keepdim:
        var = var.squeeze(dim=dim)
        mean = mean.squeeze(dim=dim)
    return var, mean



# ---- the wrapper: the torch operation's signature onto the library's entry point ----


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        return var_mean(x, [1], correction=1)
