"""Large tensors of the reference keeper parked in host memory, brought back to the device one at a time.

The keeper holds, per problem, the reference's outputs for every trial, shape set and probe, and the outputs a
candidate lends it until they are judged.  For a full-size KernelBench problem each is several GiB, a dozen of
them do not fit the GPU beside the candidate's worker, and none is needed there until its comparison (issue 27
item 1).  So a tensor of at least `PARK_BYTES` is copied to host memory as soon as it exists and its device
memory freed (`park`); a comparison brings the pair it compares back to the keeper's device for that
comparison only (`fetch`), and drops it after.  On the CPU backend the host *is* the device: parking wraps
the tensor without copying, so the same code paths run (and are tested) there.

`TRITONGYM_PARK_BYTES` overrides the threshold (tests set it tiny, so every output is parked).
"""

from __future__ import annotations

import os

PARK_BYTES = 64 << 20


def park_threshold() -> int:
    """`PARK_BYTES`, or `TRITONGYM_PARK_BYTES` when set (read when asked: the zygote imported this module before
    the keeper's environment was set)."""
    return int(os.environ.get("TRITONGYM_PARK_BYTES", PARK_BYTES))


class Parked:
    """A tensor kept in host memory for a device it will be compared on; `shape` and `dtype` describe it."""

    __slots__ = ("host",)

    def __init__(self, host) -> None:
        self.host = host

    @property
    def shape(self):
        return self.host.shape

    @property
    def dtype(self):
        return self.host.dtype

    @property
    def nbytes(self) -> int:
        return self.host.numel() * self.host.element_size()


def _tensor_nbytes(value) -> int:
    return value.numel() * value.element_size()


def park(value, threshold: int | None = None):
    """`value` as the keeper holds it: a `Parked` host copy when it is a tensor of at least `threshold` bytes
    (default `PARK_BYTES`), else unchanged."""
    import torch

    limit = park_threshold() if threshold is None else threshold
    if type(value) is not torch.Tensor or _tensor_nbytes(value) < limit:
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

    device = host = 0
    for value in values:
        if isinstance(value, Parked):
            host += value.nbytes
        elif isinstance(value, torch.Tensor):
            device += _tensor_nbytes(value)
    return device, host
