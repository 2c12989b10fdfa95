"""Profile a few forwards with `torch.profiler` inside the GPU worker: every kernel and its device time.

PR (Dr. Kernel's profiling ratio) = device time of the candidate's own kernels / device time of every
kernel, memset and memcpy of the forward.  The candidate's kernels are recognised by the *exact*
compiled names the launch recorder saw (a torch kernel that happens to contain the candidate's kernel
name in its own does not count).  No L2 flush or input refresh runs inside the profiled window, so
neither is in the denominator.
"""

from __future__ import annotations

from collections import defaultdict

import torch

from tritongym.core.measure import trusted
from tritongym.core.models import ProfileEntry

_DEVICE_TYPES = {"CUDA", "PrivateUse1"}


def _is_device_event(event) -> bool:
    device_type = getattr(event, "device_type", None)
    return getattr(device_type, "name", str(device_type)) in _DEVICE_TYPES


cupti_failure: str | None = None
"""Why this process's direct CUPTI tracing gave up (`via="cupti"`), after which it profiles with torch.profiler."""


def _kineto_events(window) -> list[tuple[str, float]]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        window()
    return [(e.name, e.time_range.elapsed_us()) for e in prof.events() if _is_device_event(e)]


def _cupti_events(window) -> list[tuple[str, float]]:
    from tritongym.core.measure import cupti_activity

    return [(e.name, e.elapsed_us) for e in cupti_activity.trace().collect(window)]


def device_events(window, via: str = "kineto") -> list[tuple[str, float]]:
    """(name, device microseconds) of every kernel, memcpy and memset `window()` ran: read by torch.profiler
    (`via="kineto"`), or from CUPTI's activity API directly (`via="cupti"`, `cupti_activity`: no Kineto set-up,
    seconds less per fresh process).  A CUPTI that cannot be used or whose records do not parse is given up for
    the process (`cupti_failure` says why) and the window runs again under torch.profiler."""
    global cupti_failure
    if via == "cupti" and cupti_failure is None:
        from tritongym.core.measure.cupti_activity import CuptiLayoutError, CuptiUnavailable

        try:
            return _cupti_events(window)
        except (CuptiUnavailable, CuptiLayoutError) as exc:
            cupti_failure = f"{type(exc).__name__}: {exc}"
    return _kineto_events(window)


def profile_forward(forward, inputs: list, calls: int, own_names: set[str], top: int = 10, via: str = "kineto"):
    """Returns (pr or None, the top kernels by device time per forward)."""

    def window() -> None:
        with torch.no_grad():
            for _ in range(calls):
                forward(inputs)
        trusted.synchronize()

    trusted.synchronize()
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for name, us in device_events(window, via):
        totals[name] += us
        counts[name] += 1
    all_us = sum(totals.values())
    if all_us <= 0:
        return None, []
    own_us = sum(us for name, us in totals.items() if name in own_names)
    entries = [
        ProfileEntry(
            kernel=name,
            device_ms=us / 1000 / calls,
            calls=max(1, counts[name] // calls),
            own=name in own_names,
            share=us / all_us,
        )
        for name, us in sorted(totals.items(), key=lambda kv: -kv[1])[:top]
    ]
    return own_us / all_us, entries


def warm_profiler() -> None:
    """Load CUPTI once, while the worker warms up, so the first candidate does not pay for it.

    Device activity only, here and in `profile_forward`: PR and the kernel table read device events alone, and
    without CPU op tracing a fresh process's set-up is ~0.6 s shorter (H100, `benchmarks/profiler_warmup.py`:
    3.9 s against 4.5 s, every fresh worker pays it)."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(16, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]):
        (x + 1).sum()
        trusted.synchronize()


def set_up_profiler() -> None:
    """`warm_profiler` without a kernel: CUPTI and Kineto set up by a session that launches nothing on the GPU, so a
    worker can do it holding no GPU lock (`PoolOptions.profiler_warm_up = "unlocked"`): another worker's timing
    beside it sees none of this process's work."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        pass


def set_up_cupti() -> None:
    """`PoolOptions.profiler_warm_up = "cupti"`: load libcupti and register the activity callbacks at the worker's
    start (~0.02 s, nothing launched); a CUPTI that cannot be used is noted in `cupti_failure`, and the worker's
    profiles then use torch.profiler."""
    global cupti_failure
    from tritongym.core.measure import cupti_activity

    try:
        cupti_activity.trace()
    except cupti_activity.CuptiUnavailable as exc:
        cupti_failure = f"{type(exc).__name__}: {exc}"
