"""Where a candidate runs (ARCHITECTURE.md §3): the parent's side of the worker process, which starts and watches it.

`sandbox` runs one `WorkerTask` in a fresh, locked-down process; `gpu_pool` keeps warm per-GPU workers and
grants them the GPU.  The code that runs inside those processes is `core/worker/`, the layer below.  This is
its own layer, below `eval`, because the backends (plugins) run their tasks here: a backend that had to
import `eval` would step back up into the pipeline that calls it.

May import: the kernel and `worker`'s light, torch-free-at-import modules (frames, exit texts, comparison).
Imports torch nowhere at module level: the parent process never needs it.
"""
