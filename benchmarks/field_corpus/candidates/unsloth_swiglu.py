"""Field corpus: unsloth's `unsloth/kernels/swiglu.py` (Apache-2.0, https://github.com/unslothai/unsloth at 015bdef0d94a),
judged against `silu(e) * g`.

The library's code below the adapter is as the library writes it; the adapter replaces only its imports of
the library's own runtime, and `ModelNew` calls the library's entry point
(see benchmarks/field_corpus/SOURCES.md)."""


import torch
import triton
import triton.language as tl



# ---- adapter: unsloth.kernels.utils and unsloth.device_type on one NVIDIA GPU (no importlib, no ctypes, no
# bitsandbytes) ----
from contextlib import nullcontext

from triton import next_power_of_2

DEVICE_COUNT = 1  # unsloth.device_type: torch_gpu_device is nullcontext and no stream is synchronized on one GPU
MAX_FUSED_SIZE: int = 65536


def calculate_settings(n: int) -> (int, int):
    BLOCK_SIZE: int = next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(
            f"Cannot launch Triton kernel since n = {n} exceeds the maximum CUDA blocksize = {MAX_FUSED_SIZE}."
        )
    num_warps: int = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


def torch_gpu_device(device):
    return nullcontext()


def is_cdna():
    return False  # an AMD Instinct check; never on NVIDIA


torch_device_stream = torch.cuda.current_stream
triton_cast = tl.cast
from triton.language.extra import libdevice  # noqa: E402

triton_tanh = libdevice.tanh  # unsloth.kernels.utils on Triton >= 3.0 (only its GELU-tanh and softcapping call it)


# ---- end of adapter; unsloth/kernels/swiglu.py as the library writes it ----


NUM_INT32_ELEMENTS = 2**31


SAFE_INT32_BUFFER_MULTIPLIER = 4


BLOCK_SIZE = 1024


INT32_SAFETY_BUFFER = NUM_INT32_ELEMENTS - BLOCK_SIZE * SAFE_INT32_BUFFER_MULTIPLIER


@triton.jit
def _fg_kernel(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr, LONG_INDEXING: tl.constexpr):
    block_idx = tl.program_id(0)
    if LONG_INDEXING:
        offsets = block_idx.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE).to(tl.int64)
        n_elements = tl.cast(n_elements, tl.int64)
    else:
        offsets = block_idx * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements

    e_row = tl.load(e + offsets, mask = mask, other = 0).to(tl.float32)
    g_row = tl.load(g + offsets, mask = mask, other = 0)  # .to(tl.float32)

    # f = e * sigmoid(e)
    f_row = e_row * tl.sigmoid(e_row)  # e_row / (1 + tl.exp(-e_row))
    f_row = f_row.to(g_row.dtype)  # Exact copy from HF
    # h = f * g
    h_row = f_row * g_row

    # Store h
    tl.store(h + offsets, h_row, mask = mask)


def swiglu_fg_kernel(e, g):
    batch, seq_len, hd = e.shape
    n_elements = e.numel()
    h = torch.empty((batch, seq_len, hd), dtype = e.dtype, device = e.device)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    with torch_gpu_device(e.device):
        _fg_kernel[grid](
            e,
            g,
            h,
            n_elements,
            BLOCK_SIZE = BLOCK_SIZE,
            LONG_INDEXING = 0 if n_elements <= INT32_SAFETY_BUFFER else 1,
        )
    return h



# ---- the wrapper: the torch operation's signature onto the library's entry point ----


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, e, g):
        return swiglu_fg_kernel(e, g)
