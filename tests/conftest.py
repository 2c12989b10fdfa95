"""Shared fixtures. Tests never load installed entry-point plugins unless a test asks for them."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.plugins import PluginHost, reset_host
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.worker_task import WorkerTask


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _one_gpu_per_xdist_worker() -> None:
    """`TRITONGYM_TEST_SPREAD_GPUS=0,1,2,3 pytest -n 4 -m gpu ...` on a machine of several GPUs: each xdist worker
    sees one GPU of the list (`CUDA_VISIBLE_DEVICES`, set before anything here starts CUDA), so the GPU tests run
    side by side, a file per GPU, instead of one after another on GPU 0 (about 20 minutes, more than a device call
    may take).  Unset, or outside xdist, every visible GPU stays visible (the tests that want two GPUs)."""
    spread = [g.strip() for g in os.environ.get("TRITONGYM_TEST_SPREAD_GPUS", "").split(",") if g.strip()]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if spread and worker.startswith("gw"):
        os.environ["CUDA_VISIBLE_DEVICES"] = spread[int(worker[2:]) % len(spread)]


_one_gpu_per_xdist_worker()


def _own_runtime_dir() -> None:
    """Every `tritongym serve` a test starts announces itself as a warm pool (`api/pool_announcements.py`), and
    every pool records its processes, in this test run's own folder, never in the user's: a developer's real
    `eval` must not hand its candidate to a test's serve.  xdist's workers share the controller's folder, so a
    test that must see no other test's serve sets its own.  One already set is kept: a test's subprocess that
    imports this module keeps its parent's folder, and whoever set one for a run chose it."""
    import tempfile

    if not os.environ.get("TRITONGYM_RUNTIME_DIR"):
        os.environ["TRITONGYM_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="tritongym-test-runtime-")


_own_runtime_dir()


def _one_torch_thread_per_xdist_worker() -> None:
    """Under pytest-xdist (`make test`: `-n auto`, a process per CPU) each worker's torch runs one thread, and so
    do the processes it starts (they inherit the environment): with torch's default of a thread per CPU, every
    worker's tiny-model generation and update ran as many threads as there are CPUs beside the other workers,
    and its OpenMP threads spin while they wait for each other, so a worker beside another went slower than one
    thread (test_estimators, test_tts, test_sft and test_rollouts on two workers and two CPUs: 38 s and 65 CPU
    seconds with two threads each, 34 s and 56 with one).  Set before anything here imports torch; an
    `OMP_NUM_THREADS` of one's own is kept."""
    if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("MKL_NUM_THREADS", "1")


_one_torch_thread_per_xdist_worker()


@pytest.fixture(autouse=True)
def _isolated_plugins(monkeypatch):
    monkeypatch.setenv("TRITONGYM_LOAD_PLUGINS", "")
    monkeypatch.delenv("TRITONGYM_PLUGINS", raising=False)
    monkeypatch.delenv("TRITONGYM_STRICT_PLUGINS", raising=False)
    monkeypatch.delenv("TRITONGYM_REGISTRY", raising=False)
    monkeypatch.setenv("TRITONGYM_RAISE_ERRORS", "")
    reset_host()
    yield
    reset_host()


@pytest.fixture(scope="session")
def sandbox_checks() -> dict[str, dict]:
    """Every runtime check that is on by default plus `structure`: the static source policy switched off, so a
    test of the sandbox or of a runtime probe reaches the worker with code the policy would refuse (os,
    streams, patches)."""
    host = PluginHost(load_entry_points=False)
    return {
        name: {}
        for name in host.names("check")
        if name == "structure"
        or host.get("check", name).cls.stage == "runtime"
        and host.get("check", name).cls.default_enabled
    }


@pytest.fixture
def registry(tmp_path) -> Registry:
    reg = Registry(tmp_path / "registry.db")
    yield reg
    reg.close()


@pytest.fixture
def fast_config() -> EvalConfig:
    """Three trials and a short timeout: enough to exercise the protocol quickly on the interpreter."""
    return EvalConfig(backend="triton-cpu", trials=3, timeout_s=60, workers=2)


@pytest.fixture
def evaluator(fast_config, registry) -> Evaluator:
    return Evaluator(fast_config, registry=registry, host=PluginHost(load_entry_points=False))


@pytest.fixture
def relu_problem():
    return load_problem("relu")


@pytest.fixture
def write(tmp_path):
    """Write dedented source to a file under tmp_path and return its path."""

    def _write(name: str, source: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip())
        return path

    return _write


RELU_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
"""
"""An honest ReLU candidate; tests derive hostile variants from it."""


ON_CPU_AND_GPU = pytest.mark.parametrize(
    "backend",
    [
        "triton-cpu",
        pytest.param(
            "triton-cuda",
            marks=[pytest.mark.gpu, pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")],
        ),
    ],
)
"""An end-to-end test run on `triton-cpu` here and, where a GPU is (`-m gpu`), on `triton-cuda`: its `backend`."""


def judged_in_batch(backend: str, registry: Registry, pairs: list, trials: int = 3, **settings) -> list:
    """`pairs` ((source, problem), ...) judged in one batch under the default checks, on `backend`; `settings`
    are more `EvalConfig` fields (`require_generality=False`)."""
    config = EvalConfig(backend=backend, trials=trials, timeout_s=120, workers=2, **settings)
    with Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False)) as evaluator:
        return evaluator.evaluate_many(pairs)


def task_for(problem, source: str | None, **update) -> WorkerTask:
    """A pool task for `problem` on the CPU pool, three seeds, ieee tolerances; `update` overrides fields."""
    return WorkerTask(
        problem_name=problem.name,
        problem_source=problem.source,
        sizes=problem.sizes,
        candidate_source=source,
        device="cpu",
        tolerances=tolerances_for("ieee", {}),
        **{"seeds": [1, 2, 3], **update},
    )


def registry_before(path: Path, migration: str):
    """A registry.db as an older tritongym left it: every migration whose name sorts before `migration`
    (e.g. "m010") applied and recorded, none after; for tests that migrate real old rows forward."""
    import sqlite_utils

    from tritongym.core.registry.migrations import MIGRATIONS, MIGRATIONS_TABLE

    db = sqlite_utils.Database(path)
    db[MIGRATIONS_TABLE].create({"name": str, "applied_at": str}, pk="name")
    for fn in MIGRATIONS:
        if fn.__name__ >= migration:
            break
        fn(db)
        db[MIGRATIONS_TABLE].insert({"name": fn.__name__, "applied_at": "then"})
    return db


def waits_in(budget, count: int, what: str, alone: int = 0, timeout_s: float = 30.0) -> None:
    """Block until `count` reservations wait inside `budget.reserve` (a `MemoryBudget`; `alone` of them for the whole
    GPU), seen on the budget's own state under its condition, failing the test after `timeout_s`: a thread is known
    to wait, not guessed to from a clock (a short join, then `is_alive()`, failed on a loaded machine)."""
    with budget.cond:
        seen = budget.cond.wait_for(lambda: budget.waiting == count and budget.waiting_alone == alone, timeout_s)
        assert seen, f"{timeout_s:g} s passed and {what} did not wait (waiting={budget.waiting})"


def settled(budget, timeout_s: float = 30.0):
    """`budget` (a pool's `MemoryBudget`) once nothing holds it any more, or as it is after `timeout_s`: the keeper's
    `FREE` runs in the background after a task, and releases the keeper's count then (`_count_keeper_memory`)."""
    import time

    deadline = time.monotonic() + timeout_s
    while budget.holders and time.monotonic() < deadline:
        time.sleep(0.05)
    return budget


@pytest.fixture
def evidence_of(monkeypatch):
    """The evidence each evaluation was judged on, caught on its way into the judging (the real path otherwise)."""
    seen = []
    judge = Evaluator._judge

    def spy(self, candidate, problem, evidence, *rest):
        seen.append(evidence)
        return judge(self, candidate, problem, evidence, *rest)

    monkeypatch.setattr(Evaluator, "_judge", spy)
    return seen


def process_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def process_gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether the process has ended within `within_s` seconds (polled: its end is another process's doing)."""
    import time

    deadline = time.monotonic() + within_s
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_alive(pid)
