"""Large tensors of the reference keeper parked in host memory, brought back to the device one at a time.

The keeper holds the reference's outputs for every trial, shape set and probe: at full size each takes GiBs,
and none is needed on the GPU before its comparison.  So a tensor of at least `PARK_BYTES`
(`TRITONGYM_PARK_BYTES` overrides it; tests set it tiny) is copied to host memory as soon as it exists
(`park`), and a comparison brings back only the one it compares (`fetch`).  On the CPU backend parking wraps
the tensor without a copy, so the same paths run there.
"""

from __future__ import annotations

import os

PARK_BYTES = 64 << 20


def park_threshold() -> int:
    """Read when asked: the zygote imported this module before the keeper's environment was set."""
    return int(os.environ.get("TRITONGYM_PARK_BYTES", PARK_BYTES))


class Parked:
    """A tensor kept in host memory for the device it is compared on; `shape` and `dtype` describe it."""

    __slots__ = ("host",)

    def __init__(self, host) -> None:
        self.host = host

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)
    nbytes = property(lambda self: self.host.numel() * self.host.element_size())


PREFAULT_THREADS = 8
PAGE_BYTES = 4096


def park(value):
    """A `Parked` host copy of a tensor of at least `park_threshold()` bytes; anything else unchanged.

    The copy lands in a buffer whose pages were touched first by several threads: a plain `.to("cpu")` of a
    6 GiB output took 3.5-5.5 s on an H100's host, most of it the kernel faulting in fresh pages one at a
    time behind the copy; with the pages faulted in parallel (and huge pages, `THP_MEM_ALLOC_ENABLE`, which
    the GPU pool sets) it took 0.5 s.  A full-size level-1 record parks about eleven such outputs."""
    import torch

    if type(value) is not torch.Tensor:
        return value
    value = compact(value.detach())
    if value.numel() * value.element_size() < park_threshold():
        return value
    if value.device.type == "cpu":
        return Parked(value)
    host = torch.empty(value.shape, dtype=value.dtype, device="cpu")
    _prefault(host)
    host.copy_(value)
    return Parked(host)


def compact(value):
    """`value` itself, or its copy when it is a view that keeps a much larger storage alive.

    On an H100, `smooth_l1_loss`'s mean (level 1's 96_HuberLoss) is a 0-dim tensor over the 4 GiB storage of its
    elementwise losses: the keeper's record of ten such outputs said a few bytes and held 37 GiB of the GPU, so
    every worker beside it ran out of memory.  The copy owns just its elements."""
    if value.untyped_storage().nbytes() > 2 * value.numel() * value.element_size() + 4096:  # most of it unseen
        return value.clone()
    return value


def _prefault(host) -> None:
    """Touch one element of every page of a fresh contiguous host tensor, from `PREFAULT_THREADS` threads
    (torch releases the GIL), so the copy that follows writes to memory that is already there."""
    from concurrent.futures import ThreadPoolExecutor

    flat = host.view(-1)
    step = max(1, PAGE_BYTES // host.element_size())
    n = flat.numel()
    span = -(-n // PREFAULT_THREADS)
    span += -span % step  # each thread starts on a page boundary
    with ThreadPoolExecutor(PREFAULT_THREADS) as pool:
        list(pool.map(lambda start: flat[start : start + span : step].zero_(), range(0, n, span)))


def park_all(values: list) -> list:
    return [park(v) for v in values]


def fetch(value, device):
    """What to compare: a parked tensor copied back to `device`, anything else unchanged."""
    return value.host.to(device) if isinstance(value, Parked) else value


def on_host(value):
    """A parked tensor's host copy (no transfer), anything else unchanged: for reading a few positions."""
    return value.host if isinstance(value, Parked) else value


def split_bytes(values) -> tuple[int, int]:
    """(bytes on the device, bytes parked in host memory) of the tensors among `values`."""
    import torch

    parked = sum(v.nbytes for v in values if isinstance(v, Parked))
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor)), parked
