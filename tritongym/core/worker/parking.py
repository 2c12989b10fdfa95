"""Large tensors of the reference keeper parked in host memory, brought back to the device one at a time.

The keeper holds the reference's outputs for every trial, shape set and probe: at full size each takes GiBs,
and none is needed on the GPU before its comparison (issue 27 item 1).  So a tensor of at least `PARK_BYTES`
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


def park(value):
    """A `Parked` host copy of a tensor of at least `park_threshold()` bytes; anything else unchanged."""
    import torch

    if type(value) is not torch.Tensor or value.numel() * value.element_size() < park_threshold():
        return value
    return Parked(value.detach().to("cpu"))


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
