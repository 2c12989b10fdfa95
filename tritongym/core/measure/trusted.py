"""The worker's own references to the CUDA primitives its timing and checks rely on, taken at import.

The worker imports this before any candidate exists.  A candidate may replace `torch.cuda.synchronize`,
`torch.cuda.Event.elapsed_time` and friends (the `environment` check reports it); the worker's timing,
probes and profiling call these saved originals, so the patch cannot fool or crash them, and the
evaluation still reaches the verdict that names the patch.
"""

from __future__ import annotations

import torch

synchronize = torch.cuda.synchronize
Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed_time = torch.cuda.Event.elapsed_time
_sleep = torch.cuda._sleep
current_stream = torch.cuda.current_stream


def record(event) -> None:
    """`event.record()` on the current stream, through the original method."""
    _record(event)


def elapsed_time(start, end) -> float:
    """Milliseconds between two recorded events, through the original method."""
    return _elapsed_time(start, end)


def sleep(cycles: int) -> None:
    """A spin kernel of about `cycles` GPU clock cycles on the current stream."""
    _sleep(cycles)


def timing_events():
    """Two events that can time a window."""
    return Event(enable_timing=True), Event(enable_timing=True)
