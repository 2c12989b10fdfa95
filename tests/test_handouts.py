"""Handout handles (worker/handouts.py): the part of CUDA IPC that is plain bytes, checked on the CPU.

The handles themselves are tested on a GPU (tests/test_gpu.py and the hack suite's allocator thief); what
can break here is the text a handle travels as: a CUDA IPC handle is 64 opaque bytes, zeros included."""

from __future__ import annotations

import ctypes

import pytest

from tritongym.core.worker.handouts import _IpcHandle, decode_handle, encode_handle


def test_a_handle_with_zero_bytes_survives_the_trip_whole():
    handle = _IpcHandle()
    data = bytes([7, 0, 0, 3] + [0] * 30 + list(range(1, 31)))
    ctypes.memmove(ctypes.addressof(handle), data, 64)
    back = decode_handle(encode_handle(handle))
    assert ctypes.string_at(ctypes.addressof(back), 64) == data


def test_a_handle_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="64 bytes, not 3"):
        decode_handle("AAAA")
