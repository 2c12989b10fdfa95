"""Where a candidate runs (DESIGN.md §3): the worker process and the parent's side that starts it.

`sandbox` runs one `WorkerTask` in a fresh, locked-down process; `gpu_pool` keeps warm per-GPU workers and
grants them the GPU; `worker/` is the code that runs inside those processes.  It is its own layer, below
`eval`, because the backends (plugins) run their tasks here: a backend that had to import `eval` would step
back up into the pipeline that calls it.

May import: the kernel; `worker/` besides only its own modules, the parent side besides only `worker`'s
light, torch-free-at-import modules (frames, exit texts, comparison).  The parent side imports torch nowhere
at module level.
"""
