"""The core: the plugin kernel at this level, one subpackage per subsystem below it.

The kernel (modules directly in `core/`) is what every subsystem and every plugin may import: the hook
specs (`hookspecs`), the base classes plugins subclass (`interfaces`), the data that flows between the
rooms of DESIGN.md §1 (`models`, `worker_task`, `turn_batch`, `generation`), the plugin host (`plugins`),
evaluation settings (`config`), problems (`problems`), verdict rules (`verdict`), fingerprints
(`fingerprint`), group statistics for estimators (`baselines`), search spaces and tuning records for
search strategies (`tuning`), source handling (`source`) and the user-facing errors (`errors`).  The
kernel imports nothing from the subsystems.

Subsystems, in the order a candidate flows through them, each importing only the kernel and the ones
before it:

- `eval/`      parse, static checks, sandboxed workers (`eval/worker/`, the code that runs inside the
               worker process), GPU pool, verdicts: a `Candidate` in, an `EvaluationResult` out;
- `registry/`  registry.db: every problem, kernel and evaluation, its migrations and browse queries;
- `distributed/` the Ray executor: the backend hosted by Ray actors, one per GPU of a cluster (`eval`
               picks it with `executor = "ray"`; it imports nothing of `eval`);
- `learn/`     the model's side: conversation, generation, rollouts, RL and SFT trainers;
- `tune/`      launch configurations of stored kernels, each variant judged by `eval`, recorded in `registry`;
- `scaling/`   test-time scaling over rollouts and the registry;
- `reports/`   Fast@p and metrics tables and plots of stored runs;
- `api.py`     the Python API, one function per CLI command, over all of the above;
- `service/`   `tritongym serve` (an HTTP evaluation service over the API) and its client;
- `cli/`       the typer commands, a thin layer over `api` (one module per command group).

`tests/test_architecture.py` holds the import graph to this: nothing imports `cli` but `__main__`, the
kernel imports no subsystem, plugins import only the kernel and the public helper modules named there,
and there is no import circle.
"""
