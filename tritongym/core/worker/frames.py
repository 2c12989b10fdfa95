"""Length-prefixed frames between the worker pool and a warm GPU worker, over the worker's stdin/stdout.

A frame is a 4-letter kind, a payload length and the payload: JSON for plain data, `torch.save` bytes
for tensors (read back with `weights_only=True`, so a frame can carry no code).  The parent caps the
size it accepts and treats anything malformed as the worker's crash.
"""

from __future__ import annotations

import os
import struct

HEADER = struct.Struct("!4sQ")
MAX_FRAME = 8 << 30
# beside the frames, the pool tells a worker at its start, in its environment, when to set up the profiler
# (`PoolOptions.profiler_warm_up`: "unlocked", "startup" or "cupti")
PROFILER_WARM_UP_ENV = "TRITONGYM_PROFILER_WARM_UP"


class FrameError(Exception):
    """The other side sent something that is not a frame."""


def send(fd: int, kind: str, payload: bytes = b"") -> None:
    data = HEADER.pack(kind.encode("ascii"), len(payload)) + payload
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 22))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(fd: int, limit: int = MAX_FRAME) -> tuple[str, bytes] | None:
    """The next frame, or None at end of file."""
    header = _read_exactly(fd, HEADER.size)
    if header is None:
        return None
    raw_kind, length = HEADER.unpack(header)
    try:
        kind = raw_kind.decode("ascii")
    except UnicodeDecodeError:
        raise FrameError(f"frame kind {raw_kind!r} is not ASCII") from None
    if length > limit:
        raise FrameError(f"frame of {length} bytes exceeds the limit of {limit}")
    payload = _read_exactly(fd, length) if length else b""
    if payload is None:
        raise FrameError("the stream ended inside a frame")
    return kind, payload


def tensors_to_bytes(value) -> bytes:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def tensors_from_bytes(data: bytes):
    import io

    import torch

    return torch.load(io.BytesIO(data), weights_only=True)
