"""Evaluation (DESIGN.md §1-§4): a candidate in, an `EvaluationResult` out.

Owns the pipeline (`evaluate.Evaluator`: parse, static checks, registry lookup, worker, verdict, checks,
rewards), where the sandboxes run (`executor`: threads here, or the Ray actors of `distributed`), tolerances
and negative controls for problems (`screen`).  The sandbox, the GPU pool and the worker they start live a
layer down in `core/sandbox/` (the backends step down into it, never back into eval); the source facts
static checks share in `core/scan/`.

May import: the kernel, `scan`, `sandbox` (its light, torch-free-at-import modules), `registry`, `distributed`.
Imports torch nowhere at module level: the parent process never needs it.
"""
