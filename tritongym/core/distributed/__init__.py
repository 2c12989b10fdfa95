"""Evaluation beyond one host (ARCHITECTURE.md §8): the sandboxes of an `Evaluator` on a Ray cluster.

`ray_executor.RayExecutor` is the `executor = "ray"` seam of `tritongym.core.eval.executor`: one Ray actor
per GPU (per worker slot on a CPU backend) hosts the configured backend, so the actor owns that device's
warm, sandboxed worker pool exactly as one host's `Evaluator` would; candidates run in those sandboxes,
never in the actor.  The driver (the process holding the `Evaluator`) stays the only judge and the only
writer of the registry.

May import: the kernel and `registry` (it imports neither `eval` nor anything above it; `eval` picks
it).  Ray is imported inside the functions that need it, so importing this package (or the CLI) does not
import Ray.
"""
