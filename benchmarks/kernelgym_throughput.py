"""Throughput against the real anchor: tritongym and KernelGYM's released toolkit judge the same candidates.

Two workloads, one run, one device (issue 27, item 6):

* `bundled`: every suite problem with its shipped solution, the pairs `tritongym run` evaluates by default
  (`api.pair_candidates` over the suite: 27 today; the issue's "25" predates two added problems);
* `rl`: an RL-like batch, 16 problems x 8 variants of mixed verdicts (`candidate_set.py`: the solution,
  three slow but correct ones, two wrong, one crashing, one that does not parse), 128 candidates.

tritongym's side: one `Evaluator.evaluate_many` per workload (`eval_throughput.run_tritongym`), default
config, every check on, backend triton-cuda (triton-cpu with `--device cpu`), a fresh temporary registry;
the cache is off for `bundled` (as `tritongym run --no-cache`) and on for `rl` (the registry starts empty, so
no verdict is reused: what is shared is the per-problem work within the batch, which is what an RL batch
of many samples per problem gets in training).

KernelGYM's side, the anchor: hkust-nlp/KernelGYM at 3a84417f, read unmodified from `--kernelgym PATH` (the
folder holding the `kernelgym/` package; default `$TRITONGYM_SHARED/kernelgym`, else `../shared/kernelgym`
beside the repository).  Each candidate is one Dr. Kernel request, handled as KernelGYM's server handles
`POST /evaluate`, minus HTTP and Redis:

1. the request is the payload Dr. Kernel's reward client builds (`drkernel/kernel/rewards/reward_client.py`,
   `compute_batch_rewards`) with its trainer config's values (`kernel_trainer.yaml`, `reward_model`):
   backend "triton", num_correct_trials 5, num_perf_trials 100, timeout (`task_timeout`) 600 s,
   enable_profiling, verbose_errors and detect_decoy_kernel true, is_valid false, no reference cache,
   entry_point "Model", priority "normal";
2. KernelGYM's own `KernelBenchWorkflowController.handle_request` (`kernelgym/workflow/kernelbench.py`)
   turns it into the tasks its server queues: a `kernel_evaluation` task (server defaults filled in:
   toolkit and backend adapter "kernelbench", Triton detection on for backend triton, profiling on as
   `settings.enable_profiling` says, correctness and performance on) and, only when the kernel compiled
   and is correct, a `reference_timing` task; their results are combined by its `_combine_results`.
   (The toolkit also takes one `evaluation` task, kernel and reference in one process, but the server never
   queues one for `/evaluate`: each request is one or two task processes, as here);
3. each task goes, as the task manager stores it (a JSON round trip, `submit_task`'s defaults), to a GPU
   worker: `task_data["device"] = "cuda:N"` and the request's timeout as the per-task limit, as
   `GPUWorker._process_toolkit_task` / `_run_toolkit_task` do, and runs in a fresh process:
   - `--anchor-runner executor` (default): KernelGYM's `IsolatedTaskExecutor.execute_task`
     (`kernelgym/worker/task_executor.py`): a spawned process per task that initialises CUDA, builds
     `get_toolkit("kernelbench")` and `get_backend("kernelbench")` and calls
     `KernelBenchToolkit.evaluate(task, backend=...)`;
   - `--anchor-runner pool`: the GPU worker's own `SubprocessWorkerPool` with its defaults
     (`worker_pool_size` 1, `max_tasks_per_worker` 1, so every task gets a fresh process), which after
     each task shuts the process down, sleeps 2 s and starts the next one before returning.  That pause is
     KernelGYM's, but it is not evaluation work, so the default runner leaves it out (the conservative
     anchor);
   failures are turned into results as `GPUWorker._process_task` / `_process_toolkit_task` do.
   One task at a time: one GPU, one worker, as its workers run.

Each candidate's reference code is the suite problem's source with its size preset's constants appended
(the module globals tritongym's worker sets), so both sides evaluate the same shapes.  The anchor's
children share one fresh TRITON_CACHE_DIR per workload (a KernelGYM host keeps one Triton cache across
tasks: variants of one problem that keep its `@triton.jit` kernel hit it), apart from tritongym's.
KernelGYM's children print a lot (its `[DEBUG]` lines, the profiler): their output goes to `--anchor-log`.

Importing KernelGYM.  `kernelgym/__init__.py` imports the server stack (FastAPI, Redis, aiohttp, its task
manager) and `kernelgym/worker/__init__.py` imports the GPU worker (Redis, aiohttp).  Neither is needed to
run the toolkit, the workflow controller or the executor, so at run time a scratch folder gets a package
skeleton: `kernelgym/__init__.py` and `kernelgym/worker/__init__.py` empty, every other file and subpackage
a symbolic link into the release (nothing copied, nothing edited).  The folder goes first on `sys.path`
and `PYTHONPATH`, so the spawned task processes import the same release; before any timing, one spawned
process looks the toolkit up by name, as a task process does, and must find the release's file.  On the
GPU machine the release must travel with the call (`../shared` beside the checkout does not): copy
`kernelgym/` into an ignored folder of the checkout, carry it, and name that folder with `--kernelgym`.
The toolkit's config
(`kernelgym/config/settings.py`) needs `pydantic-settings` (which needs `python-dotenv`,
`typing-inspection`); the rest of the code path needs torch, triton, numpy and pydantic.  A missing one
stops the run at start with the package names to install.

The toolkit needs CUDA: `eval_kernel_against_ref` and `eval_reference_only` assert
`torch.cuda.is_available()` and the task process calls `torch.cuda.init()`.  With `--device cpu`
(tritongym on triton-cpu under TRITON_INTERPRET=1) the anchor still imports the release, builds every
request and task through KernelGYM's controller and starts a process per task, where each fails at CUDA's
initialisation: the anchor's statuses are then `failed`, with that reason, and no ratio is claimed.

Timing.  tritongym runs both workloads first, then the anchor; wall time is measured around each side's
work per workload (Evaluator construction reported apart, as setup; the pool runner's first worker start
likewise).  The anchor is slow (seconds per request), so it stops starting requests once its share of
`--time-budget` (what is left of it, split between the workloads still to run) is spent, and its rate is
taken over the requests it finished; its order (`candidate_set.interleaved` for `rl`, a fixed shuffle for
`bundled`) makes every prefix mix problems and variants.  Reported per workload: wall seconds, evaluations
per minute and their ratio, status counts on each side, and how often both reach the same ok / not-ok
verdict (anchor ok: completed, compiled, correct and no decoy).  Prints a table; writes JSON (default
benchmarks/results/kernelgym_throughput.json) with every candidate's verdicts and the first task of each
kind as KernelGYM's worker got it.

    python benchmarks/kernelgym_throughput.py                    # both workloads on the GPU
    python benchmarks/kernelgym_throughput.py --workload rl --time-budget 540 --kernelgym .kernelgym
    python benchmarks/kernelgym_throughput.py --device cpu --limit 2   # CPU smoke: import path, tasks
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RL_PROBLEMS = 16
SHOWN_DISAGREEMENTS = 12  # per workload on the terminal; the JSON has them all
MIN_ANCHOR_S = 90.0  # each workload's anchor always gets this long, however long tritongym took
PACKAGES_WITH_HEAVY_INIT = ("", "worker")  # kernelgym/__init__.py and kernelgym/worker/__init__.py
REQUIREMENTS = {  # module: the distribution to install, for the imports KernelGYM's code path makes
    "pydantic_settings": "pydantic-settings",
    "dotenv": "python-dotenv",
    "typing_inspection": "typing-inspection",
    "pydantic": "pydantic",
    "numpy": "numpy",
    "torch": "torch",
    "triton": "triton",
}

# Dr. Kernel's reward client (`compute_batch_rewards`) with its trainer config (`kernel_trainer.yaml`).
DR_KERNEL_REQUEST = {
    "backend": "triton",
    "num_correct_trials": 5,
    "num_perf_trials": 100,
    "timeout": 600,
    "priority": "normal",
    "entry_point": "Model",
    "is_valid": False,
    "verbose_errors": True,
    "enable_profiling": True,
    "detect_decoy_kernel": True,
    "reference_backend": None,
}


def default_release() -> Path:
    """The folder holding KernelGYM's `kernelgym/` package, where the project's tests look for it."""
    shared = os.environ.get("TRITONGYM_SHARED")
    return Path(shared) / "kernelgym" if shared else REPO.parent / "shared" / "kernelgym"


# --- KernelGYM's release, imported without its heavy package __init__ files --------------------------------


def missing_requirements() -> list[str]:
    """The distributions KernelGYM's toolkit path imports that this Python lacks."""
    return [dist for module, dist in REQUIREMENTS.items() if importlib.util.find_spec(module) is None]


def package_skeleton(release: Path, scratch: Path) -> Path:
    """`scratch/kernelgym`: empty `__init__.py` where KernelGYM's pulls in its server or worker stack, a
    symbolic link into `release/kernelgym` for everything else.  Returns `scratch` (the sys.path entry)."""
    source = release / "kernelgym"
    if not (source / "toolkit" / "kernelbench" / "toolkit.py").is_file():
        raise SystemExit(
            f"KernelGYM's release is not at {release} (no kernelgym/toolkit/kernelbench/toolkit.py): pass "
            "--kernelgym PATH, the folder that holds kernelgym/ (on the GPU machine, a copy carried with the "
            "call), or set TRITONGYM_SHARED to the folder that holds kernelgym/"
        )
    for sub in PACKAGES_WITH_HEAVY_INIT:
        (scratch / "kernelgym" / sub).mkdir(parents=True, exist_ok=True)
        (scratch / "kernelgym" / sub / "__init__.py").write_text(
            f'"""Empty stand-in for {source / sub / "__init__.py"}, which imports the server stack."""\n'
        )
    for sub in PACKAGES_WITH_HEAVY_INIT:
        for entry in sorted((source / sub).iterdir()):
            skipped = entry.name in ("__init__.py", "__pycache__") or (
                sub == "" and entry.name in PACKAGES_WITH_HEAVY_INIT
            )
            if not skipped:
                (scratch / "kernelgym" / sub / entry.name).symlink_to(entry.resolve())
    return scratch


class KernelGym:
    """The parts of KernelGYM's release the anchor runs, imported from one release folder."""

    def __init__(self, release: Path, scratch: Path):
        missing = missing_requirements()
        if missing:
            raise SystemExit(
                "KernelGYM's toolkit needs " + ", ".join(missing) + " (its config is a pydantic-settings "
                "BaseSettings); install them, e.g. pip install " + " ".join(missing)
            )
        if "kernelgym" in sys.modules:
            raise SystemExit("a kernelgym package is already imported in this process; run in a fresh one")
        root = str(package_skeleton(release, scratch))
        sys.path.insert(0, root)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        self.release = release
        self.root = Path(root)
        self.config = importlib.import_module("kernelgym.config")
        self.core = importlib.import_module("kernelgym.core")
        self.schema = importlib.import_module("kernelgym.schema")
        self.toolkit = importlib.import_module("kernelgym.toolkit.kernelbench.toolkit")
        self.workflow = importlib.import_module("kernelgym.workflow.kernelbench")
        self.executor = importlib.import_module("kernelgym.worker.task_executor")
        self.pool = importlib.import_module("kernelgym.worker.subprocess_pool")
        self.errors = importlib.import_module("kernelgym.utils.error_classifier")

    def file_of(self, module) -> Path:
        """Where a module of the release really lives (through the skeleton's link)."""
        return Path(module.__file__).resolve()

    def toolkit_in_a_task_process(self, timeout_s: float = 120.0) -> Path:
        """The file of the toolkit a spawned process gets from `get_toolkit("kernelbench")`, as KernelGYM's task
        processes look it up: proof, before any timing, that they import this release through the skeleton."""
        import multiprocessing
        import queue

        ctx = multiprocessing.get_context("spawn")
        answers = ctx.Queue()
        process = ctx.Process(target=_toolkit_lookup, args=(answers,))
        process.start()
        try:
            answer = answers.get(timeout=timeout_s)
        except queue.Empty:
            answer = {"error": f"no answer in {timeout_s:g} s"}
        finally:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
        if "error" in answer:
            raise SystemExit(f"a spawned process could not look up KernelGYM's toolkit: {answer['error']}")
        return Path(answer["toolkit"]).resolve()


def _toolkit_lookup(answers) -> None:
    """In a spawned process: KernelGYM's toolkit and backend adapter by name, as its task processes get them."""
    try:
        from kernelgym.backend import get_backend
        from kernelgym.toolkit import get_toolkit

        toolkit = get_toolkit("kernelbench")
        get_backend("kernelbench")
        answers.put({"toolkit": sys.modules[type(toolkit).__module__].__file__})
    except BaseException as exc:  # everything goes back to the parent, which says it
        answers.put({"error": f"{type(exc).__name__}: {exc}"})


def sized_reference(problem) -> str:
    """The problem's source with its size preset's constants set, as tritongym's worker sets them."""
    if not problem.sizes:
        return problem.source
    lines = [f"{name} = {value!r}" for name, value in problem.sizes.items()]
    return (
        f"{problem.source.rstrip()}\n\n# size preset '{problem.size}', as tritongym applies it\n"
        + "\n".join(lines)
        + "\n"
    )


def dr_kernel_request(task_id: str, reference_code: str, kernel_code: str, timeout_s: int) -> dict:
    """The payload Dr. Kernel's reward client POSTs to `/evaluate` for one sample."""
    return {
        "task_id": task_id,
        "reference_code": reference_code,
        "kernel_code": kernel_code,
        **DR_KERNEL_REQUEST,
        "timeout": timeout_s,
    }


class WorkerScheduler:
    """KernelGYM's `SchedulerAPI` as its server provides it (`TaskManagerScheduler` over the task manager and
    one GPU worker), without Redis: `submit` runs the task to its end on the worker, `wait` returns it.

    Every task is recorded (`tasks`) with its wall time, so the run can report what KernelGYM ran."""

    def __init__(self, kg: KernelGym, device_id: int, runner: str):
        self.kg = kg
        self.device_id = device_id
        self.runner = runner
        self.pool = None
        self.pool_setup_s = 0.0
        self.results: dict[str, dict] = {}
        self.tasks: list[dict] = []
        self.examples: dict[str, dict] = {}  # the first task of each type, as the worker got it (code elided)

    def start(self) -> None:
        if self.runner == "pool":
            started = time.perf_counter()
            settings = self.kg.config.settings
            try:
                self.pool = self.kg.pool.SubprocessWorkerPool(
                    device_id=self.device_id,
                    pool_size=settings.worker_pool_size,
                    worker_prefix="bench_pool",
                    max_tasks_per_worker=settings.max_tasks_per_worker,
                )
            except RuntimeError as exc:
                raise SystemExit(
                    f"KernelGYM's worker pool started no worker on cuda:{self.device_id} ({exc}): its workers "
                    "initialise CUDA; use --anchor-runner executor where there is none"
                ) from None
            self.pool_setup_s = time.perf_counter() - started

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.shutdown(timeout=10)

    def stored(self, payload: dict) -> dict:
        """The task as the task manager stores it and a GPU worker reads it back (`submit_task`, JSON)."""
        settings = self.kg.config.settings
        data = json.loads(json.dumps(payload, default=str))
        data["toolkit"] = data.get("toolkit") or settings.default_toolkit
        data["backend_adapter"] = data.get("backend_adapter") or settings.default_backend_adapter
        data["backend"] = data.get("backend") or settings.default_backend
        data["device"] = f"cuda:{self.device_id}"  # GPUWorker._process_toolkit_task
        return data

    async def _run(self, data: dict) -> dict:
        timeout = data["timeout"] if "timeout" in data else 35  # GPUWorker._run_toolkit_task
        if self.pool is not None:
            outcome = await self.pool.execute_task(data, timeout=timeout, max_retries=2)
            if not outcome.get("success", False):
                raise RuntimeError(f"{outcome.get('error_type', 'Unknown')}: {outcome.get('error_message', '')}")
            return outcome["result"]
        result, _metrics = self.kg.executor.IsolatedTaskExecutor.execute_task(data, self.device_id, timeout)
        return result

    def _failed(self, data: dict, message: str, code) -> dict:
        """`GPUWorker._build_failed_result`: what the worker stores when the task raised."""
        schema = self.kg.schema
        task_id = data.get("task_id", "unknown")
        base = data.get("base_task_id", task_id)
        common = {"metadata": {"error": message}, "status": "failed", "error_message": message, "error_code": code}
        kind = data.get("task_type", "evaluation")
        if kind == "reference_timing":
            return schema.ReferenceTimingResult(
                task_id=task_id, base_task_id=base, reference_runtime=-1.0, **common
            ).to_dict()
        if kind == "kernel_evaluation":
            return schema.KernelEvaluationResult(
                task_id=task_id,
                base_task_id=base,
                compiled=False,
                correctness=False,
                decoy_kernel=False,
                kernel_runtime=-1.0,
                **common,
            ).to_dict()
        return schema.EvaluationResult(
            task_id=task_id,
            compiled=False,
            correctness=False,
            decoy_kernel=False,
            reference_runtime=-1.0,
            kernel_runtime=-1.0,
            speedup=0.0,
            **common,
        ).to_dict()

    async def submit(self, task) -> str:
        data = self.stored(task.payload)
        elided = {k: "..." if k in ("reference_code", "kernel_code") else v for k, v in data.items()}
        self.examples.setdefault(data.get("task_type", "evaluation"), elided)
        classify = self.kg.errors.classify_error
        started = time.perf_counter()
        try:
            result = await self._run(data)
            if result.get("status") != "completed":  # GPUWorker._process_toolkit_task
                message = result.get("error_message") or "Task failed"
                if result.get("error_code") is None:
                    result["error_code"] = classify(message, "runtime")
                result["status"] = "failed"
                result["error_message"] = message
        except Exception as exc:  # GPUWorker._process_task
            message = f"Task processing failed: {exc}"
            result = self._failed(data, message, classify(str(exc), "runtime"))
        wall = time.perf_counter() - started
        self.results[data["task_id"]] = result
        self.tasks.append({"task_id": data["task_id"], "task_type": data.get("task_type"), "wall_s": wall})
        return data["task_id"]

    async def wait(self, task_id: str, timeout: float | None = None) -> dict:
        return self.results[task_id]

    async def get_status(self, task_id: str) -> dict:
        return {"status": self.results[task_id].get("status")} if task_id in self.results else {}

    async def cancel(self, task_id: str) -> bool:
        return False


def make_scheduler(kg: KernelGym, device_id: int, runner: str) -> WorkerScheduler:
    """A `WorkerScheduler` that is also a subclass of KernelGYM's `SchedulerAPI` (the controller's contract)."""
    cls = type("KernelGymWorkerScheduler", (WorkerScheduler, kg.core.SchedulerAPI), {})
    return cls(kg, device_id, runner)


def anchor_status(result: dict) -> str:
    """A KernelGYM result in tritongym's words (ok needs completed, compiled, correct, no decoy)."""
    if result.get("status") != "completed":
        message = (result.get("error_message") or "").lower()
        return "timeout" if "timeout" in message or "timed out" in message else "failed"
    if result.get("decoy_kernel"):
        return "decoy"
    if not result.get("compiled"):
        return "compile_error"
    if not result.get("correctness"):
        metadata = result.get("metadata") or {}
        return "runtime_error" if "runtime_error" in metadata else "incorrect"
    return "ok"


def run_anchor(
    kg: KernelGym,
    requests: list[dict],
    device_id: int,
    runner: str,
    budget_s: float | None,
    on_result: Callable[[int, dict, float], None],
) -> tuple[list[dict], float, WorkerScheduler]:
    """Each request through KernelGYM's workflow controller and one worker, one after another, until the
    budget is spent.  Returns (results, wall seconds over the requests, the scheduler that ran them)."""
    scheduler = make_scheduler(kg, device_id, runner)
    results: list[dict] = []

    async def main() -> float:
        scheduler.start()
        controller = kg.workflow.KernelBenchWorkflowController()
        wall = 0.0
        try:
            for i, request in enumerate(requests):
                if budget_s is not None and wall > budget_s:
                    break
                started = time.perf_counter()
                result = await controller.handle_request(dict(request), scheduler)
                took = time.perf_counter() - started
                wall += took
                results.append(result)
                on_result(i, result, took)
        finally:
            await scheduler.close()
        return wall

    return results, asyncio.run(main()), scheduler


@contextmanager
def children_output_to(path: Path):
    """Send this process's stdout/stderr (and so its spawned children's) to `path`; yield a writer that still
    reaches the terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)

        def say(text: str) -> None:
            os.write(saved_out, (text + "\n").encode())

        try:
            yield say
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved_out, 1)
            os.dup2(saved_err, 2)
            os.close(saved_out)
            os.close(saved_err)


# --- the workloads --------------------------------------------------------------------------------------


def bundled_candidates(size: str) -> list[tuple[str, str, str]]:
    """(problem, "solution", source) for each pair `tritongym run` evaluates by default, in a fixed shuffle
    (so a prefix of the anchor's run mixes light and heavy problems)."""
    from tritongym.api import pair_candidates
    from tritongym.core.problems import load_problems

    cands = [(p.name, "solution", c.source) for c, p in pair_candidates(load_problems(None, size), None)]
    random.Random(0).shuffle(cands)
    return cands


def rl_candidates(size: str) -> list[tuple[str, str, str]]:
    from candidate_set import build_candidate_set, interleaved

    return interleaved(build_candidate_set(size, RL_PROBLEMS))


def status_text(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def run_ours(name: str, cands: list, args) -> dict:
    """tritongym on every candidate of a workload: `eval_throughput.run_tritongym`'s summary and results."""
    from eval_throughput import run_tritongym

    from tritongym.core.config import EvalConfig

    backend = "triton-cuda" if args.device_type == "cuda" else "triton-cpu"
    gpus = [args.device_id] if ":" in args.device else None  # plain `cuda`: the default, every visible GPU
    config = EvalConfig(backend=backend, size=args.size, gpus=gpus, use_cache=name != "bundled")
    print(f"[{name}] {len(cands)} candidates over {len(dict.fromkeys(c[0] for c in cands))} problems", flush=True)
    with tempfile.TemporaryDirectory(prefix=f"kg-throughput-{name}-") as tmp:
        return run_tritongym(name, cands, config, Path(tmp) / "registry.db", args.plugin, None)


def run_theirs(
    name: str, cands: list, args, kg: KernelGym, budget: float | None
) -> tuple[list, float, WorkerScheduler]:
    """The anchor on a workload's candidates, one Dr. Kernel request each, until `budget` seconds are spent."""
    from _common import fmt

    from tritongym.core.problems import load_problem

    problems = {n: load_problem(n, args.size) for n in dict.fromkeys(c[0] for c in cands)}
    requests = [
        dr_kernel_request(f"{name}_{i:04d}_{p}_{v}", sized_reference(problems[p]), src, args.timeout_s)
        for i, (p, v, src) in enumerate(cands)
    ]
    print(
        f"[{name}] KernelGYM ({args.anchor_runner}) on cuda:{args.device_id} (it knows no other device), "
        f"budget {fmt(budget)} s; its output goes to {args.anchor_log}",
        flush=True,
    )
    saved_cache = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix=f"kg-anchor-{name}-") as cache, children_output_to(args.anchor_log) as say:
        os.environ["TRITON_CACHE_DIR"] = cache
        counts: Counter = Counter()

        def progress(i: int, result: dict, took: float) -> None:
            counts[anchor_status(result)] += 1
            say(
                f"[{name}] KernelGYM {i + 1}/{len(requests)} {cands[i][0]}/{cands[i][1]}: "
                f"{anchor_status(result)} ({took:.1f} s) {dict(counts)}"
            )

        try:
            return run_anchor(kg, requests, args.device_id, args.anchor_runner, budget, progress)
        finally:
            if saved_cache is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = saved_cache


def compare(name: str, cands: list, ours: dict, anchor: tuple, budget: float | None, args, kg: KernelGym) -> dict:
    """One workload's report: both sides' rates and statuses, their ratio, per-candidate verdicts."""
    from candidate_set import CORRECT_VARIANTS

    theirs, anchor_wall, scheduler = anchor
    rows = []
    for i, (problem, variant, _) in enumerate(cands):
        r = ours["results"][i]
        k = theirs[i] if i < len(theirs) else None
        rows.append(
            {
                "problem": problem,
                "variant": variant,
                "tritongym_status": r.status.value,
                "tritongym_speedup": r.speedup,
                "tritongym_message": r.message[:300],
                "kernelgym_status": anchor_status(k) if k else None,
                "kernelgym_speedup": k.get("speedup") if k else None,
                "kernelgym_kernel_runtime_ms": k.get("kernel_runtime") if k else None,
                "kernelgym_reference_runtime_ms": k.get("reference_runtime") if k else None,
                "kernelgym_message": (k.get("error_message") or "")[:300] if k else None,
            }
        )
    compared = [r for r in rows if r["kernelgym_status"] is not None]
    same = [r for r in compared if (r["tritongym_status"] == "ok") == (r["kernelgym_status"] == "ok")]
    ours_rate = ours["summary"]["per_min"]
    anchor_rate = len(theirs) / anchor_wall * 60 if anchor_wall and theirs else None
    task_walls = Counter()
    for t in scheduler.tasks:
        task_walls[t["task_type"]] += t["wall_s"]
    fingerprints = [r.fingerprint for r in ours["results"] if r.fingerprint and r.fingerprint.device_name]
    return {
        "candidates": len(cands),
        "device_name": fingerprints[0].device_name if fingerprints else "",
        "tritongym": ours["summary"],
        "kernelgym": {
            "requests": len(theirs),
            "of": len(cands),
            "wall_s": anchor_wall,
            "per_min": anchor_rate,
            "statuses": dict(Counter(anchor_status(k) for k in theirs)),
            "budget_s": budget,
            "runner": args.anchor_runner,
            "tasks": Counter(t["task_type"] for t in scheduler.tasks),
            "task_wall_s": {k: round(v, 2) for k, v in task_walls.items()},
            "pool_setup_s": scheduler.pool_setup_s,
            "task_examples": scheduler.examples,
            "device": f"cuda:{args.device_id}",
            "release": str(kg.release),
        },
        "ratio": ours_rate / anchor_rate if ours_rate and anchor_rate else None,
        "agreement": {
            "compared": len(compared),
            "same_verdict": len(same),
            "disagreements": [
                {
                    k: r[k]
                    for k in (
                        "problem",
                        "variant",
                        "tritongym_status",
                        "kernelgym_status",
                        "tritongym_message",
                        "kernelgym_message",
                    )
                }
                for r in compared
                if r not in same
            ],
            "tritongym_as_designed": sum(
                (r["tritongym_status"] == "ok") == (r["variant"] in CORRECT_VARIANTS) for r in rows
            ),
            "kernelgym_as_designed": sum(
                (r["kernelgym_status"] == "ok") == (r["variant"] in CORRECT_VARIANTS) for r in compared
            ),
        },
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--workload", choices=["bundled", "rl", "both"], default="both")
    parser.add_argument(
        "--device",
        default="cuda",
        help="cuda (tritongym: every visible GPU, as by default; KernelGYM: cuda:0), cuda:N (both on GPU N), or cpu "
        "(smoke test: TRITON_INTERPRET=1)",
    )
    parser.add_argument("--size", choices=["cpu", "gpu"], default=None, help="problem size preset (default: device's)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N candidates of each workload")
    parser.add_argument("--kernelgym", type=Path, default=default_release(), help="folder holding kernelgym/")
    parser.add_argument(
        "--anchor-runner",
        choices=["executor", "pool"],
        default="executor",
        help="KernelGYM's per-task process: IsolatedTaskExecutor, or the worker's pool (2 s pause between tasks)",
    )
    parser.add_argument(
        "--timeout-s",
        type=int,
        default=DR_KERNEL_REQUEST["timeout"],
        help="the Dr. Kernel request's timeout: KernelGYM's per-task limit (tritongym: its default)",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=540.0,
        help=f"seconds for the whole run: the anchor starts no request once its share is spent, but runs at "
        f"least {MIN_ANCHOR_S:g} s per workload (0 = no limit)",
    )
    parser.add_argument("--plugin", action="append", default=[], help="extra tritongym plugin module or file")
    parser.add_argument("--out", type=Path, default=RESULTS / "kernelgym_throughput.json")
    parser.add_argument(
        "--anchor-log", type=Path, default=None, help="KernelGYM's output (default: OUT with .anchor.log)"
    )
    args = parser.parse_args()
    run_started = time.perf_counter()
    args.device_type = "cpu" if args.device == "cpu" else "cuda"
    args.device_id = int(args.device.split(":")[1]) if ":" in args.device else 0
    args.size = args.size or ("gpu" if args.device_type == "cuda" else "cpu")
    # not OUT with `.log`: where a run's own output is usually sent (stop 34 interleaved the two in one file)
    args.anchor_log = args.anchor_log or args.out.with_suffix(".anchor.log")
    if args.device_type == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    sys.path.insert(0, str(HERE))

    from _common import fmt, print_table

    with tempfile.TemporaryDirectory(prefix="kernelgym-release-") as scratch:
        kg = KernelGym(args.kernelgym.resolve(), Path(scratch))
        in_task = kg.toolkit_in_a_task_process()
        print(f"KernelGYM's toolkit: {kg.file_of(kg.toolkit)} (in a task process: {in_task})", flush=True)
        workloads = {"bundled": bundled_candidates, "rl": rl_candidates}
        names = list(workloads) if args.workload == "both" else [args.workload]
        plans = {n: workloads[n](args.size)[: args.limit] for n in names}
        ours = {name: run_ours(name, plans[name], args) for name in names}  # both tritongym sides first
        reports: dict[str, dict] = {}
        for index, name in enumerate(names):  # then the anchor, the time left shared between the workloads
            budget = None
            if args.time_budget:
                remaining = args.time_budget - (time.perf_counter() - run_started)
                budget = max(MIN_ANCHOR_S, remaining / (len(names) - index))
            anchor = run_theirs(name, plans[name], args, kg, budget)
            reports[name] = compare(name, plans[name], ours[name], anchor, budget, args, kg)

    table = []
    for name, rep in reports.items():
        mine, theirs = rep["tritongym"], rep["kernelgym"]
        table.append(
            [
                f"{name}: tritongym",
                mine["candidates"],
                fmt(mine["wall_s"]),
                fmt(mine["per_min"]),
                fmt(rep["ratio"]),
                status_text(mine["statuses"]),
            ]
        )
        table.append(
            [
                f"{name}: KernelGYM",
                f"{theirs['requests']}/{theirs['of']}",
                fmt(theirs["wall_s"]),
                fmt(theirs["per_min"]),
                "1",
                status_text(theirs["statuses"]),
            ]
        )
    device_name = next((rep["device_name"] for rep in reports.values() if rep["device_name"]), "") or args.device
    print_table(
        f"tritongym against KernelGYM's toolkit ({args.anchor_runner}) on {device_name}",
        ["", "evaluations", "wall s", "per min", "x KernelGYM", "statuses"],
        table,
    )
    for name, rep in reports.items():
        agree = rep["agreement"]
        print(
            f"{name}: same ok/not-ok verdict {agree['same_verdict']}/{agree['compared']}; setup (not counted): "
            f"tritongym {rep['tritongym']['setup_s']:.1f} s"
            + (f", KernelGYM's pool {rep['kernelgym']['pool_setup_s']:.1f} s" if args.anchor_runner == "pool" else "")
        )
        for d in agree["disagreements"][:SHOWN_DISAGREEMENTS]:
            print(
                f"  differs: {d['problem']}/{d['variant']}: tritongym {d['tritongym_status']}, "
                f"KernelGYM {d['kernelgym_status']} ({(d['kernelgym_message'] or '')[:100]})"
            )
        if len(agree["disagreements"]) > SHOWN_DISAGREEMENTS:
            print(f"  ... and {len(agree['disagreements']) - SHOWN_DISAGREEMENTS} more (all in {args.out})")
    if args.device_type == "cpu":
        print(
            "on the CPU KernelGYM's toolkit cannot run (it asserts torch.cuda.is_available()): its statuses say "
            "so, and the ratios are no measurement"
        )

    report = {
        "device_name": device_name,
        "host": platform.node(),
        "settings": {**vars(args), "out": str(args.out), "kernelgym": str(args.kernelgym), "cpu_count": os.cpu_count()},
        "dr_kernel_request": DR_KERNEL_REQUEST,
        "kernelgym_toolkit": str(in_task),
        "workloads": reports,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out} ({time.perf_counter() - run_started:.0f} s in all; KernelGYM's output: {args.anchor_log})")


if __name__ == "__main__":
    main()
