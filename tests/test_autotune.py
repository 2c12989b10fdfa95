"""`@triton.autotune` candidates: they run on triton-cpu (the first config after the kernel's own pruning,
nothing timed), and every backend records the config each autotuned kernel picked, through the registry.

The CPU tests run the real interpreter in the real sandbox (and the warm pool's worker on the CPU) with a
real registry; the GPU test is skipped without CUDA (python -m pytest -m gpu tests/test_autotune.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import registry_before
from interpreted import run_interpreted
from typer.testing import CliRunner

from tritongym.cli.app import app
from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.models import AutotuneChoice, Candidate, ErrorInfo, EvaluationResult, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.registry.migrations import MIGRATIONS, migrate
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
from tritongym.core.worker.autotune import install_interpreter_policy
from tritongym.core.worker_task import WorkerTask

KERNELS = Path(__file__).parent / "autotuned"
FIRST = {"BLOCK_SIZE": 128, "num_warps": 2, "num_stages": 3}  # the first config of every kernel there


def source(name: str) -> Candidate:
    return Candidate(source=(KERNELS / name).read_text(), origin=name)


def only_choice(result) -> AutotuneChoice:
    assert len(result.autotune) == 1, result.autotune
    return result.autotune[0]


def test_autotuned_kernel_is_ok_on_triton_cpu_with_its_first_config(evaluator, relu_problem, registry):
    candidate = source("relu_autotuned.py")
    result = evaluator.evaluate(candidate, relu_problem)
    assert result.status == Status.ok, (result.message, result.error)
    choice = only_choice(result)
    assert (choice.kernel, choice.config, choice.configs, choice.declared) == ("relu_kernel", FIRST, 3, 3)
    assert (choice.how, choice.autotune_s, choice.when) == ("first", None, "trial 0")
    assert any(rec.own and rec.kernel == "relu_kernel" for rec in result.launches)

    again = evaluator.evaluate(candidate, relu_problem)  # the registry answers, choice and all
    assert again.cached and again.evaluation_id == result.evaluation_id
    assert again.autotune == result.autotune
    row = registry.db["evaluations"].get(result.evaluation_id)
    assert json.loads(row["autotune"]) == [choice.model_dump()]


def test_the_first_config_after_the_kernels_own_pruning_runs(evaluator, relu_problem):
    """The first declared config (blocks of 128) is wrong for this kernel's grid, and its own
    early_config_prune drops it: ok only if pruning ran before the first config was taken."""
    result = evaluator.evaluate(source("relu_pruned.py"), relu_problem)
    assert result.status == Status.ok, (result.message, result.error)
    choice = only_choice(result)
    assert choice.config == {"BLOCK_SIZE": 512, "num_warps": 4, "num_stages": 2}
    assert (choice.configs, choice.declared, choice.how) == (2, 3, "first")


def test_a_kernel_whose_first_config_is_wrong_is_incorrect(evaluator, relu_problem):
    result = evaluator.evaluate(source("relu_first_config_wrong.py"), relu_problem)
    assert result.status == Status.incorrect, (result.message, result.error)
    assert only_choice(result).config == FIRST  # the config it was judged with


def test_eval_prints_the_choice_and_json_carries_it(tmp_path, fast_config, relu_problem):
    path = tmp_path / "registry.db"
    registry = Registry(path)
    with Evaluator(fast_config, registry=registry, host=PluginHost(load_entry_points=False)) as evaluator:
        judged = evaluator.evaluate(source("relu_autotuned.py"), relu_problem)
    registry.close()
    assert judged.status == Status.ok
    args = ["eval", str(KERNELS / "relu_autotuned.py"), "--problem", "relu", "--backend", "triton-cpu"]
    args += ["--registry", str(path), "--trials", "3", "--timeout", "60"]
    shown = CliRunner().invoke(app, args)  # a cache hit: no worker, the stored choice
    assert shown.exit_code == 0, shown.output
    assert "(cached)" in shown.output
    assert (
        "autotune: kernel relu_kernel picked BLOCK_SIZE=128, num_warps=2, num_stages=3 of 3 configs "
        "(the first after pruning" in shown.output
    )
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).output)
    assert data["cached"] and data["autotune"] == [c.model_dump() for c in judged.autotune]


def test_a_stored_driver_failure_of_an_autotuned_kernel_is_judged_again(evaluator, relu_problem, registry):
    """Before the policy every autotuned kernel failed on triton-cpu ("0 active drivers"); such a stored
    verdict says nothing about the kernel, so it is not answered from the registry."""
    candidate = source("relu_autotuned.py")
    stale = EvaluationResult(
        problem_id=relu_problem.name,
        problem_key=relu_problem.key,
        kernel_id=candidate.kernel_id,
        backend="triton-cpu",
        device="cpu",
        device_class="cpu",
        size=relu_problem.size,
        protocol=evaluator.protocol,
        status=Status.runtime_error,
        error=ErrorInfo(kind="RuntimeError", message="0 active drivers ([]). There should only be one."),
        fingerprint=local_fingerprint(),
    )
    stored = registry.store(stale, relu_problem, candidate)
    result = evaluator.evaluate(candidate, relu_problem)
    assert not result.cached and result.status == Status.ok
    assert result.evaluation_id == stored  # the stale row is replaced, not duplicated
    assert registry.lookup(relu_problem.key, candidate.kernel_id, "triton-cpu", "cpu", evaluator.protocol).autotune


def test_m011_keeps_old_rows_and_adds_the_autotune_column(tmp_path, relu_problem):
    db = registry_before(tmp_path / "old.db", "m011")
    old = EvaluationResult(
        problem_id="relu",
        problem_key=relu_problem.key,
        kernel_id="k0",
        backend="triton-cpu",
        device="cpu",
        device_class="cpu",
        size="cpu",
        protocol="3-aaaa",
        status=Status.ok,
        correct=True,
        fingerprint=local_fingerprint(),
    )
    stored_json = old.model_dump_json(exclude={"autotune", "cached", "evaluation_id"})  # as an old build wrote it
    assert "autotune" not in stored_json
    db["problems"].insert({"key": relu_problem.key, "name": "relu", "size": "cpu", "source": relu_problem.source})
    db["kernels"].insert({"id": "k0", "source": "x"})
    key = {k: getattr(old, k) for k in ("problem_key", "kernel_id", "backend", "device_class", "protocol")}
    row_id = db["evaluations"].insert({**key, "problem_name": "relu", "status": "ok", "result": stored_json}).last_pk
    assert "autotune" not in db["evaluations"].columns_dict

    names = [m.__name__ for m in MIGRATIONS]
    assert migrate(db) == names[names.index("m011_autotune_choices") :]
    row = db["evaluations"].get(row_id)
    assert (row["status"], row["result"], row["autotune"]) == ("ok", stored_json, None)  # unknown, not "[]"
    db.close()
    registry = Registry(tmp_path / "old.db")  # the schema is whole, and the old verdict still reads
    try:
        hit = registry.lookup(relu_problem.key, "k0", "triton-cpu", "cpu", "3-aaaa")
        assert hit is not None and hit.cached and hit.status == Status.ok and hit.autotune == []
    finally:
        registry.close()


def test_the_pools_worker_records_the_choice(relu_problem):
    """The GPU worker's path (gpu_worker.py: policy, recording, evidence in DONE), run on the CPU."""
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        task = WorkerTask(
            problem_name=relu_problem.name,
            problem_source=relu_problem.source,
            sizes=relu_problem.sizes,
            candidate_source=source("relu_autotuned.py").source,
            device="cpu",
            seeds=[1, 2],
            tolerances=tolerances_for("ieee", {}),
        )
        evidence = pool.run(task, timeout_s=120)
    finally:
        pool.close()
    assert evidence.error is None and evidence.stage == "done", evidence.error
    assert all(o.mismatched == 0 for t in evidence.trials for o in t.outputs)
    assert [(c.kernel, c.config, c.how, c.when) for c in evidence.autotune] == [
        ("relu_kernel", FIRST, "first", "trial 0")
    ]


BENCHMARKED = """
import json

import torch
import triton
import triton.language as tl

from tritongym.core.worker.launches import LaunchRecorder

recorder = LaunchRecorder(__file__)  # the kernels below are the "candidate's"
recorder.install()  # no interpreter policy: Triton's own autotuning, as on a GPU
calls = []


def bench(kernel_call, quantiles=None, **kwargs):  # each config "faster" than the one before: the last wins
    kernel_call()
    calls.append(1)
    return [10.0 - len(calls)] * len(quantiles)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 128}, num_warps=2),
        triton.Config({"BLOCK_SIZE": 512}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8, num_ctas=2, maxnreg=128),
    ],
    key=["n"],
    do_bench=bench,
)
@triton.jit
def tuned(x_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 64}, num_warps=1)], key=[])
@triton.jit
def single(x_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch(kernel, n):
    x = torch.randn(n)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, n)


recorder.phase = ("trial", 0)
launch(tuned, 300)
launch(tuned, 300)  # the same key: Triton's cache answers, nothing new to record
launch(single, 300)
recorder.phase = None
launch(tuned, 700)  # a new key: tuned again
launch(single, 700)
print(json.dumps(recorder.autotune.dump()))
"""


def test_a_benchmarked_choice_is_recorded_with_its_cost(tmp_path):
    """Triton's own autotuning (what a GPU does), here through the interpreter with a kernel-supplied
    benchmarker and no first-config policy: each new tuning key gives one choice, with Triton's bench_time."""
    choices = [AutotuneChoice.model_validate(c) for c in run_interpreted(BENCHMARKED, tmp_path, "benchmarked.py")]
    last = {"BLOCK_SIZE": 1024, "num_warps": 8, "num_stages": 3, "num_ctas": 2, "maxnreg": 128}
    assert [(c.kernel, c.config, c.configs, c.how, c.when) for c in choices] == [
        ("tuned", last, 3, "benchmarked", "trial 0"),
        ("single", {"BLOCK_SIZE": 64, "num_warps": 1, "num_stages": 3}, 1, "only", "trial 0"),
        ("tuned", last, 3, "benchmarked", ""),
    ]
    assert all(c.autotune_s is not None and c.autotune_s > 0 for c in choices if c.how == "benchmarked")
    assert choices[1].autotune_s is None
    assert (
        choices[0]
        .describe()
        .startswith(
            "kernel tuned picked BLOCK_SIZE=1024, num_warps=8, num_stages=3, num_ctas=2, maxnreg=128 of 3 configs ("
        )
    )


def test_the_policy_leaves_an_unknown_autotuner_alone(monkeypatch):
    """Triton's internals differ (no prune_configs to wrap): nothing is patched, the reason is given."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")

    class Autotuner:
        def __init__(self, fn, do_bench=None):
            self.fn = fn

        def run(self, *args, **kwargs):
            return None

    before = dict(vars(Autotuner))
    why = install_interpreter_policy(Autotuner)
    assert why is not None and "prune_configs" in why
    assert dict(vars(Autotuner)) == before


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_autotuned_kernel_on_triton_cuda_records_the_benchmarked_choice(tmp_path):
    """On a GPU the autotuner benchmarks every config in the first correctness trial, before timing: the
    result names the config it picked and what benchmarking cost, beside a runtime."""
    problem = load_problem("relu", "gpu")
    config = EvalConfig(backend="triton-cuda", size="gpu", use_cache=False, timeout_s=300)
    registry = Registry(tmp_path / "registry.db")
    try:
        with Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False)) as evaluator:
            result = evaluator.evaluate(source("relu_autotuned.py"), problem)
    finally:
        registry.close()
    assert result.status == Status.ok, (result.message, result.error)
    choice = only_choice(result)
    assert choice.kernel == "relu_kernel" and (choice.configs, choice.declared) == (3, 3)
    assert choice.config["BLOCK_SIZE"] in (128, 512, 1024) and choice.config["num_warps"] in (2, 4, 8)
    assert choice.how == "benchmarked" and choice.autotune_s is not None and choice.autotune_s > 0
    assert choice.when == "trial 0"  # tuned in the correctness trials, not while timing
    assert result.runtime_ms is not None and result.runtime_ms > 0
    assert not any("autotuning ran during timing" in n for n in result.timing.notes)
