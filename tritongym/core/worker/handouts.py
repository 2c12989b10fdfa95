"""Handout buffers: how a candidate's outputs reach the reference keeper without the keeper's memory reaching it.

The keeper (`keeper.py`) holds the reference's outputs in its own process and CUDA context.  To judge a
candidate it needs the candidate's outputs there too, and the direction matters: the keeper never opens
memory the candidate names (a forged handle or size would make the trusted process read out of bounds).
Instead the keeper allocates one *handout* per output whose shape and dtype match the reference's, each a
device allocation of its own (`cuMemAlloc`, outside torch's caching allocator, so the mapping the
candidate's process opens holds that buffer and nothing else), filled with 0xFF bytes (NaN in every float
format: whatever the driver recycled into it is gone), and exported as a CUDA IPC handle; the keeper waits for
the fill to finish (`synchronize`) before it sends a handle, or the fill could land after the candidate's copy.
The candidate's worker opens each handle, copies its output in, synchronises and closes it.  A candidate that knows any
address of the keeper still maps nothing but the buffers it was handed.

On the CPU (the pool's test device) there is no second address space to map: the worker sends the
outputs' bytes through the pool instead (`frames.tensors_to_bytes`), and the keeper keeps a copy.

The driver API is called through ctypes on `libcuda.so.1` (one copy per process, the context torch made
current on this thread), so nothing here depends on which CUDA runtime torch was built with.
"""

from __future__ import annotations

import base64
import ctypes
import functools

GRANULE = 2 << 20  # device allocations are mapped in 2 MiB pages: a handout is whole pages, all of them filled


class CudaError(RuntimeError):
    """A driver call failed: its name and the driver's words."""


class _IpcHandle(ctypes.Structure):
    # bytes, not `c_char`: a `c_char` array reads back as a C string, cut at its first zero byte
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


def encode_handle(handle: _IpcHandle) -> str:
    """A handle as text for a JSON frame: all 64 bytes, zero bytes included."""
    return base64.b64encode(bytes(handle.reserved)).decode()


def decode_handle(text: str) -> _IpcHandle:
    raw = base64.b64decode(text, validate=True)
    if len(raw) != ctypes.sizeof(_IpcHandle):
        raise ValueError(f"a CUDA IPC handle is {ctypes.sizeof(_IpcHandle)} bytes, not {len(raw)}")
    handle = _IpcHandle()
    ctypes.memmove(ctypes.addressof(handle), raw, len(raw))
    return handle


@functools.cache
def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    ptr, size = ctypes.c_uint64, ctypes.c_size_t
    signatures = {
        "cuMemAlloc_v2": [ctypes.POINTER(ptr), size],
        "cuMemFree_v2": [ptr],
        "cuMemsetD8_v2": [ptr, ctypes.c_ubyte, size],
        "cuIpcGetMemHandle": [ctypes.POINTER(_IpcHandle), ptr],
        "cuIpcOpenMemHandle_v2": [ctypes.POINTER(ptr), _IpcHandle, ctypes.c_uint],
        "cuIpcCloseMemHandle": [ptr],
        "cuCtxSynchronize": [],
        "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, ctypes.c_int
    return lib


def _call(name: str, *args) -> None:
    lib = _driver()
    code = getattr(lib, name)(*args)
    if code:
        text = ctypes.c_char_p()
        lib.cuGetErrorString(code, ctypes.byref(text))
        raise CudaError(f"{name} failed: CUDA error {code} ({(text.value or b'?').decode()})")


class _Device:
    """What `torch.as_tensor` needs to wrap raw device memory without copying it."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (address, False), "version": 3}


def wrap(address: int, nbytes: int, dtype, shape):
    """Raw device memory as a tensor of `dtype` and `shape` (the memory stays owned by the caller)."""
    import torch

    raw = torch.as_tensor(_Device(address, nbytes), device="cuda")
    return raw.view(dtype).view(shape) if nbytes else torch.empty(shape, dtype=dtype, device="cuda")


class Handout:
    """One buffer the keeper lends: its allocation, the tensor over it, and the handle another process opens."""

    def __init__(self, dtype, shape: list[int]) -> None:
        import torch

        itemsize = torch.empty((), dtype=dtype).element_size()
        numel = 1
        for n in shape:
            numel *= n
        self.nbytes = numel * itemsize
        self.size = max(GRANULE, -(-self.nbytes // GRANULE) * GRANULE)
        address = ctypes.c_uint64()
        _call("cuMemAlloc_v2", ctypes.byref(address), self.size)
        self.address = address.value
        try:
            _call("cuMemsetD8_v2", self.address, 0xFF, self.size)
            handle = _IpcHandle()
            _call("cuIpcGetMemHandle", ctypes.byref(handle), self.address)
        except CudaError:
            self.free()
            raise
        self.handle = encode_handle(handle)
        self.tensor = wrap(self.address, self.nbytes, dtype, shape)

    def free(self) -> None:
        if self.address:
            self.tensor = None
            _call("cuMemFree_v2", self.address)
            self.address = 0


def synchronize() -> None:
    _call("cuCtxSynchronize")


def copy_into(handles: list[dict | None], values: list) -> None:
    """The candidate's side: each value copied into the handout `handles` names (None: not handed out).

    Every mapping is closed again before returning, also when a copy fails."""
    opened = []
    try:
        for handle, value in zip(handles, values):
            if handle is None:
                continue
            raw = decode_handle(handle["handle"])
            address = ctypes.c_uint64()
            _call("cuIpcOpenMemHandle_v2", ctypes.byref(address), raw, 1)  # 1: lazy peer access
            opened.append(address.value)
            if handle["nbytes"]:
                wrap(address.value, handle["nbytes"], value.dtype, list(value.shape)).copy_(value)
        synchronize()
    finally:
        for address in opened:
            _call("cuIpcCloseMemHandle", address)
