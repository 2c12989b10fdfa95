"""Evaluation (ARCHITECTURE.md §1-§4): a candidate in, an `EvaluationResult` out.

Owns the pipeline (`evaluate.Evaluator`: parse, static checks, registry lookup, worker, verdict, checks,
rewards), where the sandboxes run (`executor`: threads here, or the Ray actors of `distributed`), tolerances
and negative controls for problems (`screen`).  The sandbox and the GPU pool live a layer down in
`core/sandbox/` (the backends step down into it, never back into eval), the worker they start in
`core/worker/`, the source facts static checks share in `core/scan/`.

May import: the kernel, `scan`, `worker` (its light, torch-free-at-import modules), `sandbox`, `registry`,
`distributed`.  Imports torch nowhere at module level: the parent process never needs it.
"""
