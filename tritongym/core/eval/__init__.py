"""Evaluation (DESIGN.md §1-§4): a candidate in, an `EvaluationResult` out.

Owns the pipeline (`evaluate.Evaluator`: parse, static checks, registry lookup, worker, verdict, checks,
rewards), where the sandboxes run (`executor`: threads here, or the Ray actors of `distributed`), the
sandbox that starts workers (`sandbox`), the warm GPU worker pool (`gpu_pool`), tolerances, negative
controls for problems (`screen`), and the source facts static checks share (`ast_scan`,
`op_families`).  Code that runs *inside* the worker process lives in `eval/worker/`.

May import: the kernel, `eval.worker` (its light, torch-free-at-import modules), `registry`, `distributed`.
Imports torch nowhere at module level: the parent process never needs it.
"""
