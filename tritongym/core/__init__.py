"""The core: the plugin kernel at this level, one subpackage per subsystem below it; the faces (`tritongym.api`,
`tritongym.service`, `tritongym.adapters`, `tritongym.cli`) live beside it, outside `core/`.

The kernel (modules directly in `core/`) is what every subsystem and every plugin may import: the hook
specs (`hookspecs`), the base classes plugins subclass (`interfaces`), the data that flows between the
rooms of ARCHITECTURE.md §1 (`models`, `worker_task`, `turn_batch`, `generation`), the plugin host (`plugins`),
evaluation settings (`config`), problems (`problems`), verdict rules (`verdict`), precision classes
(`precision`), what counts as torch compute (`op_families`), fingerprints (`fingerprint`), group statistics
for estimators (`baselines`), search spaces and tuning records for search strategies (`tuning`), source
handling (`source`) and the user-facing errors (`errors`).  The kernel imports nothing from the subsystems.

`LAYERS` below is the import order, lowest first, and the one list `tests/test_architecture.py` enforces: a
module may import its own layer and the ones before it, never one after it (lazy imports inside functions
included).  In that order, with what each imports besides the kernel:

- `tritongym.problems` the bundled suite and its reference solutions: data, importing nothing of tritongym;
- the kernel;
- `scan`          the source-scan library (one scan of a candidate's source for every static check, torch
                  compute in host code): the kernel only;
- `measure`       what judging and timing measure with: trusted primitives, the timer and profiler, the output
                  comparison, the float64 gold: the kernel only;
- `worker`        the code that runs inside the sandboxed worker process: the kernel and `measure`;
- `keeper`        the GPU's reference keeper process (trusted: the reference side, screens, judging what workers
                  lend it): `worker`'s frames, handouts, task runner and protocol, `measure`;
- `sandbox`       the parent's side of the worker: the locked-down process every backend starts, the warm GPU
                  pool: `worker`'s frames and exit texts, `measure`'s comparison;
- `registry`      registry.db: every problem, kernel and evaluation, its migrations and browse queries (the
                  kernel only);
- `distributed`   the Ray executor, the backend hosted by Ray actors (`eval` picks it with
                  `executor = "ray"`; it imports nothing of `eval`);
- `eval`          the pipeline: parse, static checks, verdicts (a `Candidate` in, an `EvaluationResult` out):
                  `scan`, the `sandbox` its backends run in, the `worker`'s frames, exit texts, comparison
                  and negative controls, the registry it stores verdicts in, the Ray executor (lazily);
- `reports`       Fast@p and metrics tables and plots of stored runs: the registry;
- `tune`          launch configurations of stored kernels: each variant judged by `eval`, recorded in `registry`;
- `learn`         the model's side (conversation, generation, rollouts, RL and SFT trainers): `eval`,
                  `registry`, `tune` (tuning as feedback) and `reports` (the training-metrics table);
- `scaling`       test-time scaling over rollouts and the registry: `learn`, `tune`, `registry`;
- `tritongym.api.results` the models the API returns: plain pydantic, returned by the service's client too;
- `tritongym.service.protocol` the bodies of the service's HTTP API, which its server and its client share: the
                  kernel only;
- `tritongym.service.http_client` the service's client: its protocol, the API's result models; below the API,
                  which hands a candidate to a warm local service through it (`api/warm_pool.py`);
- `tritongym.api` the Python API, one function per CLI command, over all of the above (a face of the
                  package, beside `service`, `adapters` and `cli`, not part of the core);
- `tritongym`     the package's top (`tritongym/__init__.py`): the public names, imported from `api`,
                  `eval` and `registry` on first use;
- `tritongym.service` `tritongym serve` (an HTTP evaluation service) and its HTTP client: `api`, the
                  `Evaluator` and executors of `eval`, the registry;
- `tritongym.adapters` reward functions for other trainers (TRL, verl), over the API or the service's client,
                  with `eval`'s `Evaluator` and `learn`'s code extraction;
- `tritongym.cli` the typer commands (one module per command group), over `api`, with the registry's browse
                  queries, `reports`' tables, `learn`'s run configurations and `service`;
- `tritongym.__main__` `python -m tritongym`: the only module outside `cli` that imports it.

Plugins (`tritongym/plugins/`) stand beside the layers: they import only the kernel and `PLUGIN_HELPERS`.

Only data here, and no import of its own: every command and every plugin imports this package first, so it must stay
as cheap as the CLI's start (`tests/test_cli_startup.py`).
"""

from __future__ import annotations

# Packages and modules, lowest first.  A module belongs to the longest entry it is or lies under; the kernel,
# `tritongym.core`, holds only the modules directly in core/ (a new subpackage needs its own entry).
LAYERS: tuple[str, ...] = (
    # data, not code: the problem files are read as source and run in the worker beside a candidate
    "tritongym.problems",
    # the kernel: what every subsystem and plugin shares, so it may lean on none of them
    "tritongym.core",
    # the source-scan library static checks share: pure functions of source text over the kernel
    "tritongym.core.scan",
    # what judging and timing measure with (trusted primitives, timer, profiler, comparison, gold): the worker,
    # the keeper and the pool's side all use it
    "tritongym.core.measure",
    # runs in the worker process, which imports the kernel and nothing of the parent's side
    "tritongym.core.worker",
    # the reference keeper's process: the worker's frames, handouts and task runner, its own records and requests
    "tritongym.core.keeper",
    # the sandbox and the GPU pool that start the worker: the backends step down into it, never back into eval
    "tritongym.core.sandbox",
    # storage only: every subsystem above records or reads through it
    "tritongym.core.registry",
    # an executor eval picks (lazily, with executor = "ray"), so it must not import eval back
    "tritongym.core.distributed",
    # judging a candidate: needs the worker's frames, the registry and the Ray executor
    "tritongym.core.eval",
    # tables and plots of stored runs, read from the registry; learn's trainers print its metrics table
    "tritongym.core.reports",
    # tuning judges each variant with eval; learn uses it as feedback, scaling as a step
    "tritongym.core.tune",
    # rollouts judged by eval, tuning as feedback, metrics tables from reports
    "tritongym.core.learn",
    # test-time scaling drives learn's rollouts and tune's search
    "tritongym.core.scaling",
    # the models the API returns: plain pydantic, which the service's client returns too
    "tritongym.api.results",
    # the bodies of the service's HTTP API: what its server and its client both import
    "tritongym.service.protocol",
    # the service's client: `eval` hands a candidate to a warm local service through it (`api/warm_pool.py`), so it
    # sits below the API rather than beside the server
    "tritongym.service.http_client",
    # one function per command, over every subsystem
    "tritongym.api",
    # the public names re-exported from the API and below (lazily), so the service, adapters and CLI may use them
    "tritongym",
    # the HTTP service runs the API's evaluation behind a queue
    "tritongym.service",
    # reward functions for other trainers, local (over the API) or remote (over the service's client)
    "tritongym.adapters",
    # the commands, over the API and the service; nothing but __main__ may import them
    "tritongym.cli",
    # `python -m tritongym`: starts the CLI
    "tritongym.__main__",
)

# What plugins may import besides the kernel: the public package and a few helper modules a plugin needs
# (each named here with why); anything else of a subsystem is its internals, free to change under a plugin.
PLUGIN_HELPERS: frozenset[str] = frozenset(
    {
        # `hookimpl` and the public names (every one but `hookimpl` imported on first use)
        "tritongym",
        # one scan of a candidate's source answering every static check's questions, for any spelling
        "tritongym.core.scan.ast_scan",
        # where in the host code torch compute is written, so a check can point at a line
        "tritongym.core.scan.host_compute",
        # the locked-down worker process every backend runs candidates in
        "tritongym.core.sandbox.sandbox",
        # warm per-GPU worker processes, for GPU backends
        "tritongym.core.sandbox.gpu_pool",
        # finding and loading the model a ModelSpec names, for engines and the LLM judge
        "tritongym.core.learn.model_loading",
    }
)
