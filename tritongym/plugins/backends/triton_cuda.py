"""The `triton-cuda` backend: the correctness protocol of `triton-cpu`, plus paired timing and profiling.

Candidates run in warm per-GPU worker processes (`tritongym.core.sandbox.gpu_pool`); import, compilation and
correctness trials of several candidates overlap on one GPU while timing holds it alone.  Timing follows
`tritongym.core.measure.timing` (CUDA graphs, L2 flush, in-place refreshed and rotated inputs, medians with
IQR), profiling `tritongym.core.measure.gpu_profile` (PR from exact compiled kernel names).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import threading
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import Backend
from tritongym.core.models import Evidence
from tritongym.core.sandbox.sandbox import SandboxLimits
from tritongym.core.worker_task import TimingOptions, WorkerTask


@functools.cache
def _visible_gpus() -> tuple[tuple[str, str], ...]:
    """(index as the worker's CUDA_VISIBLE_DEVICES takes it, name), without a CUDA context here."""
    names: list[str] = []
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
            ).stdout
            names = [line.strip() for line in out.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            names = []
    # without nvidia-smi ask torch, but only where an NVIDIA driver is loaded: importing torch costs a second,
    # which a CPU machine's cached `tritongym eval` should not pay to learn there is no GPU
    if not names and os.path.isdir("/proc/driver/nvidia"):
        import torch

        if torch.cuda.is_available():
            names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    indices = [str(i) for i in range(len(names))]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        indices = [v.strip() for v in visible.split(",") if v.strip()][: len(names)]
        names = names[: len(indices)] if len(names) >= len(indices) else names
    return tuple(zip(indices, names))


class TritonCUDABackend(Backend):
    """Triton on NVIDIA GPUs: correctness, paired timing and PR, in warm per-GPU workers."""

    name = "triton-cuda"
    screens_need_workers = False  # the pool's keepers screen problems (`keeper/screen.py`)
    device_type = "cuda"
    default_size = "gpu"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        gpus: list[int] | None = Field(default=None, description="GPU indices to use; None = every visible GPU")
        workers_per_gpu: int | None = Field(
            default=None, ge=1, le=64, description="warm workers per GPU; None = CPUs per GPU, at most 8"
        )
        spare_workers_per_gpu: int | None = Field(
            default=None,
            ge=0,
            le=64,
            description="warm workers per GPU on standby beyond workers_per_gpu, so that a task never waits for a "
            "fresh worker to start (each candidate gets a fresh process); at most workers_per_gpu tasks still run; "
            "None = half of workers_per_gpu (on an H100 the 27 bundled pairs 54 s with 4 against 89.5 s with 0)",
        )
        profiler_warm_up: Literal["unlocked", "startup", "cupti"] = Field(
            default="cupti",
            description="how a fresh worker sets up the profiler before it takes a task: not at all, the kernel "
            "table read from CUPTI's activity API directly, ~0.02 s (cupti, the default; on an H200 a worker's start "
            "0.45 s against 4-5 s, the same tables and verdicts; a CUPTI that cannot be read falls back to "
            "torch.profiler), or torch.profiler's session (~4-6 s per process on an H100 or H200) holding no GPU "
            "lock and launching no kernel (unlocked), or running a kernel under a shared GPU hold that timings wait "
            "for (startup)",
        )
        starts_at_once: int | None = Field(
            default=None,
            ge=1,
            le=256,
            description="workers starting at one time on this host (fork, CUDA context, profiler set-up); None = "
            "no limit (every worker and spare of every GPU at once)",
        )
        device_connections: int | None = Field(
            default=1,
            ge=1,
            le=32,
            description="hardware work queues per CUDA context of the pool's workers and keepers "
            "(CUDA_DEVICE_MAX_CONNECTIONS); None = the driver's default, 8.  A candidate may use the current stream "
            "only, so one queue costs it nothing, and contexts are created ~3x faster when many start (16 at once on "
            "an H200: 0.83 s each against 2.63 s; 128 RL candidates 63 s against 105 s cold on one H200)",
        )
        device_schedule: Literal["auto", "spin", "yield", "blocking"] = Field(
            default="auto",
            description="how the pool's CUDA contexts wait for the GPU (a synchronise): the driver's own choice "
            "(auto: spin, a CPU core each while waiting), spin, yield (spin, giving the core up between polls) or "
            "blocking (sleep until the GPU answers); timings are measured on the GPU either way",
        )
        max_tasks_per_worker: int = Field(
            default=1, ge=1, description="tasks before a worker is replaced (1: a fresh process per candidate)"
        )
        memory_mb: int | None = Field(default=32768, ge=512, description="resident memory a worker may use")
        gpu_memory_fraction: float | None = Field(
            default=None,
            gt=0,
            le=1,
            description="caching-allocator cap per worker; None = what the pool admitted it with (twice the "
            "reference's measured peak, plus a context)",
        )
        timing: TimingOptions = Field(default_factory=TimingOptions)

    def __init__(self, options=None) -> None:
        super().__init__(options)
        self._pool = None
        self._pool_lock = threading.Lock()
        self._sized_to: int | None = None  # `size_to`: the evaluations a one-shot pool is started for
        self._busy_before: dict[str, float] = {}  # busy seconds per GPU of pools closed since
        self._outside: dict[str, float] = {}  # MiB per GPU held beside the pool (`hold_outside`), for pools to come

    def unavailable_reason(self) -> str | None:
        if not _visible_gpus():
            return "no NVIDIA GPU is visible (nvidia-smi and torch.cuda find none); use --backend triton-cpu"
        wanted = self.options.gpus
        if wanted:
            known = {int(i) for i, _ in _visible_gpus() if i.isdigit()}
            missing = sorted(set(wanted) - known)
            if missing:
                return f"--gpus names {missing}, but the visible GPUs are {sorted(known)}"
        return None

    def default_device(self) -> str:
        return "cuda"

    def device_class(self, device: str) -> str:
        gpus = dict(_visible_gpus())
        first = str(self.options.gpus[0]) if self.options.gpus else next(iter(gpus), "0")
        return f"cuda:{gpus.get(first, 'unknown')}"

    def workers_per_gpu(self, n_gpus: int) -> int:
        if self.options.workers_per_gpu:
            return self.options.workers_per_gpu
        return max(1, min(8, (os.cpu_count() or 2) // max(n_gpus, 1)))

    def spare_workers_per_gpu(self, workers_per_gpu: int) -> int:
        if self.options.spare_workers_per_gpu is not None:
            return self.options.spare_workers_per_gpu
        return workers_per_gpu // 2

    def concurrency(self) -> int:
        n_gpus = len(self.options.gpus) if self.options.gpus else max(1, len(_visible_gpus()))
        return self.workers_per_gpu(n_gpus) * n_gpus

    def pool(self):
        """The worker pool, started on first use (workers warm up in the background)."""
        with self._pool_lock:
            if self._pool is None:
                from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool

                gpus = [str(g) for g in self.options.gpus] if self.options.gpus else [i for i, _ in _visible_gpus()]
                self._pool = WorkerPool(
                    PoolOptions(
                        **self.pool_shape(gpus),
                        max_tasks=self.options.max_tasks_per_worker,
                        starts_at_once=self.options.starts_at_once,
                        device_connections=self.options.device_connections,
                        device_schedule=self.options.device_schedule,
                        profiler_warm_up=self.options.profiler_warm_up,
                        memory_mb=self.options.memory_mb,
                        outside_mb=dict(self._outside),
                    )
                )
            return self._pool

    def pool_shape(self, gpus: list[str]) -> dict:
        """The pool's GPUs, workers, spares and keepers, and whether it starts workers on demand.

        For a stream of work: every GPU given, `workers_per_gpu` workers and the spares on each, started at once.
        Sized to a few evaluations (`size_to`, a one-candidate `eval`): the first GPU, one keeper, a task slot per
        evaluation and no spare, each worker started when a task is announced (`warm_up`: the candidate; a problem's
        screen runs in the keeper, `screens_need_workers`) and none replaced after.  Why: the full
        pool was ~16 processes each creating a CUDA context and setting up CUPTI, most of a one-candidate `eval`'s
        23-34 s on an H100.  Options the user set (`workers_per_gpu`, `spare_workers_per_gpu`) stand."""
        workers = self.workers_per_gpu(len(gpus))
        if self._sized_to is None:
            return {
                "gpus": gpus,
                "workers_per_gpu": workers,
                "spare_workers_per_gpu": self.spare_workers_per_gpu(workers),
            }
        spares = self.options.spare_workers_per_gpu
        return {
            "gpus": gpus[:1],
            "workers_per_gpu": self.options.workers_per_gpu or min(self._sized_to, workers),
            "spare_workers_per_gpu": 0 if spares is None else spares,
            "keepers_per_gpu": 1,
            "start_on_demand": True,
        }

    def size_to(self, tasks: int) -> None:
        with self._pool_lock:
            if self._pool is None:  # a pool already started keeps its shape
                self._sized_to = max(1, tasks)

    def warm_up(self, tasks: int) -> None:
        self.pool().expect(tasks)

    def measure(self, task: WorkerTask, limits: SandboxLimits) -> Evidence:
        pool = self.pool()
        # None: the pool caps each worker at the memory it admitted it with, from the reference's measured need
        fraction = self.options.gpu_memory_fraction
        update = {"device": "cuda:0", "timing": self.options.timing, "gpu_memory_fraction": fraction}
        return pool.run(task.model_copy(update=update), limits.timeout_s)

    def hold_outside(self, gpu: int, mb: float) -> None:
        with self._pool_lock:
            self._outside[str(gpu)] = float(mb)
            if self._pool is not None:
                self._pool.hold_outside(str(gpu), mb)

    def memory_budgets(self) -> dict[str, dict[str, float]]:
        with self._pool_lock:
            return {f"cuda:{gpu}": v for gpu, v in self._pool.memory_state().items()} if self._pool else {}

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                for gpu, seconds in self._pool.busy_seconds().items():
                    self._busy_before[gpu] = self._busy_before.get(gpu, 0.0) + seconds
                self._pool.close()
                self._pool = None

    def lock_seconds(self) -> dict[str, dict[str, float]]:
        """Per GPU, how the GPU lock's time split: timing alone, shared, draining for a timer, idle."""
        with self._pool_lock:
            return {f"cuda:{gpu}": v for gpu, v in self._pool.lock_seconds().items()} if self._pool else {}

    def drained_by(self) -> dict[str, dict[str, float]]:
        """Per GPU, the lock's draining seconds by what the sharers that timers waited for were doing."""
        with self._pool_lock:
            return {f"cuda:{gpu}": v for gpu, v in self._pool.drained_by().items()} if self._pool else {}

    def busy_seconds(self) -> dict[str, float]:
        with self._pool_lock:
            busy = dict(self._busy_before)
            if self._pool is not None:
                for gpu, seconds in self._pool.busy_seconds().items():
                    busy[gpu] = busy.get(gpu, 0.0) + seconds
        return {f"cuda:{gpu}": seconds for gpu, seconds in sorted(busy.items())}


@hookimpl
def register_backends(register):
    register(TritonCUDABackend)
