"""The pool's options and the memory shares its processes are started with (`WorkerPool`, `PoolOptions`)."""

from __future__ import annotations

from dataclasses import dataclass, field

CONTEXT_MB = 800.0  # a CUDA context with torch's and Triton's modules loaded, per process (690-794 MiB on an H100)
KEEPER_CACHE_SHARE = 0.25  # of the GPU, for all its keepers' records together (keeper.py's cache_mb)
KEEPER_HOST_CACHE_SHARE = 0.25  # of the host's memory, for all keepers' parked outputs together (keeper.py)
HOST_PARKING_SHARE = 0.5  # of the host's memory, for the parked outputs of the records tasks hold while they run


@dataclass
class PoolOptions:
    gpus: list[str]  # CUDA device indices as strings, or ["cpu"] (the interpreter, for tests)
    workers_per_gpu: int = 2
    # warm workers per GPU beyond `workers_per_gpu`, waiting on standby: a fresh process per candidate means a
    # replacement starts (fork, CUDA context, ~4 s of profiler set-up) after every task, and with spares the next task
    # takes one already warm instead of waiting for it; at most `workers_per_gpu` tasks still run (the triton-cuda
    # backend's default is half of `workers_per_gpu`; the CPU pool of the tests runs none)
    spare_workers_per_gpu: int = 0
    # start workers only as tasks are announced (`WorkerPool.expect`) or wait for one, and never replace a retired
    # one ahead of need: a pool sized to a known, small amount of work (a one-candidate `eval`: its candidate and
    # perhaps its problem's screen) starts what that work needs and nothing after it.  Off: `workers_per_gpu` plus
    # `spare_workers_per_gpu` workers per GPU start at once and each one retired is replaced
    start_on_demand: bool = False
    # workers starting (fork, CUDA context, CUPTI's set-up) at one time on this host, None for no limit: on four
    # H100s a worker's context took 3.4 s with 48 starting at once against 0.8 s with 12, and a cold batch's first
    # worker was ready at 26 s; with a limit the first ones are ready sooner (measure the rate: DEVELOPERS.md)
    starts_at_once: int | None = None
    max_tasks: int = 1
    memory_mb: int | None = 16384
    start_timeout_s: float = 180.0
    use_zygote: bool = True  # fork warm workers from a process that has imported torch and Triton once
    # how a worker sets up CUPTI for the profiler (~4 s per fresh process on an H100, most of a worker's start),
    # always before it takes a task (set up later, Kineto missed the kernels of modules loaded before it): "cupti"
    # (the default: no torch.profiler, CUPTI's activity API read directly, ~0.02 s, `measure/cupti_activity.py`),
    # "unlocked" (Kineto's session that launches no kernel, holding nothing: 64 RL candidates 100 s against 118 s on
    # an H100) or "startup" (a kernel under the start's shared GPU hold, which every timing's drain then waited for)
    profiler_warm_up: str = "cupti"
    keepers_per_gpu: int | None = None  # reference keepers per GPU (problems spread by key); None: workers // 2
    # hardware work queues per CUDA context of the pool's workers and keepers (`CUDA_DEVICE_MAX_CONNECTIONS`, set in
    # each one's environment before its context exists); None: the driver's default, 8.  A candidate may launch on
    # the current stream only (the `streams` check), so one queue takes nothing from it, and the driver creates a
    # context with one queue ~3x faster when many start: on an H200, 16 at once 0.83 s each against 2.63 s, and the
    # 128 RL candidates took 63 s against 105 s cold on one machine (`gpu_scaling-h200-stop57-connections-ab.json`)
    device_connections: int | None = 1
    # how the pool's CUDA contexts wait for their GPU (`worker/cuda_schedule.py`): "auto" (the driver's: spin, a core
    # each while waiting), "spin", "yield" or "blocking"
    device_schedule: str = "auto"
    extra_env: dict[str, str] = field(default_factory=dict)
    # per GPU, MiB held by processes outside the pool when it starts (a trainer beside the judge): left out of the
    # keepers' cache share and of the tasks' budget; `WorkerPool.hold_outside` changes it later
    outside_mb: dict[str, float] = field(default_factory=dict)
