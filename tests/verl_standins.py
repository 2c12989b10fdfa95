"""Minimal stand-ins for the verl names Dr. Kernel's reward client imports, put in `sys.modules` by `install`.

KernelGYM's release (`shared/kernelgym/drkernel/kernel/`) imports, besides ray, httpx and torch:

- `verl.tools.sandbox_fusion_tools.TokenBucketWorker` (`rewards/reward_client.py`): a Ray actor that bounds
  how many submissions are in flight at once (`acquire`, `release`, `get_current_count`); here a semaphore in
  a threaded actor, as verl's own is;
- `verl.DataProto`, `verl.utils.reward_score.default_compute_score`, `verl.workers.reward_manager.register`
  (`workers/reward_manager/kernel_async.py`): imported, not called on the path the trainer takes (it passes
  its own `compute_score`, and the `@register` line is commented out).

Nothing of KernelGYM's is replaced. `install` also puts the release's `drkernel/` on `sys.path` (its modules
import each other as `kernel.rewards...`); Ray's workers run it too (`worker_process_setup_hook`), because
the reward client's HTTP worker is a Ray actor whose module imports verl in the worker process.
"""

from __future__ import annotations

import os
import sys
import threading
import types

import ray

DRKERNEL_ENV = "TRITONGYM_DRKERNEL_DIR"  # set by the test for the Ray workers: where `kernel/` is


@ray.remote(concurrency_groups={"acquire": 1, "release": 10})
class TokenBucketWorker:
    """At most `rate_limit` tokens out at once; `acquire` blocks until one is free."""

    def __init__(self, rate_limit: int) -> None:
        self.rate_limit = rate_limit
        self.current_count = 0
        self._semaphore = threading.Semaphore(rate_limit)

    @ray.method(concurrency_group="acquire")
    def acquire(self) -> None:
        self._semaphore.acquire()
        self.current_count += 1

    @ray.method(concurrency_group="release")
    def release(self) -> None:
        self._semaphore.release()
        self.current_count -= 1

    def get_current_count(self) -> int:
        return self.current_count


class DataProto:
    """Imported by kernel_async.py; the reward manager's `__call__` takes plain arguments, not a DataProto."""


def default_compute_score(*args, **kwargs):
    raise NotImplementedError("the stand-in for verl's default_compute_score: pass compute_score, as the trainer does")


def register(name: str):
    def keep(cls):
        return cls

    return keep


def _module(name: str, **attributes) -> types.ModuleType:
    module = sys.modules.get(name) or types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    sys.modules[name] = module
    return module


def install(drkernel: str | None = None) -> None:
    """Put the stand-ins in `sys.modules` and the release's `drkernel/` on `sys.path` (also a Ray worker's hook)."""
    drkernel = drkernel or os.environ[DRKERNEL_ENV]
    if drkernel not in sys.path:
        sys.path.insert(0, drkernel)
    _module("verl", DataProto=DataProto, __path__=[])
    _module("verl.tools", __path__=[])
    _module("verl.tools.sandbox_fusion_tools", TokenBucketWorker=TokenBucketWorker)
    _module("verl.utils", __path__=[])
    _module("verl.utils.reward_score", default_compute_score=default_compute_score)
    _module("verl.workers", __path__=[])
    _module("verl.workers.reward_manager", register=register)
