"""The worker's own failures are never blamed on the candidate."""

from __future__ import annotations

import pytest
from conftest import RELU_KERNEL

from tritongym.core.config import EvalConfig
from tritongym.core.errors import BackendUnavailable
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.plugins import PluginHost
from tritongym.core.sandbox.fork_server import PACKAGE_PARENT
from tritongym.core.sandbox.sandbox import SandboxLimits, run_in_sandbox
from tritongym.core.worker_task import WorkerTask

BROKEN_TRITON_BACKEND = """
from tritongym import hookimpl
from tritongym.core.sandbox.fork_server import PACKAGE_PARENT
from tritongym.core.sandbox.sandbox import run_in_sandbox
from tritongym.plugins.backends.triton_cpu import TritonCPUBackend


class BrokenTritonBackend(TritonCPUBackend):
    '''triton-cpu whose worker finds a Triton that fails to import.'''

    name = "broken-triton"

    def measure(self, task, limits):
        env = {{"TRITON_INTERPRET": "1", "PYTHONPATH": "{fake}:" + PACKAGE_PARENT}}
        return run_in_sandbox(task.model_copy(update={{"device": "cpu"}}), limits, env)


@hookimpl
def register_backends(register):
    register(BrokenTritonBackend)
"""


@pytest.fixture
def fake_triton(tmp_path):
    fake = tmp_path / "fake"
    (fake / "triton").mkdir(parents=True)
    (fake / "triton" / "__init__.py").write_text("raise ImportError('this triton is broken')\n")
    return fake


def test_a_broken_triton_is_a_setup_error_not_a_candidate_verdict(fake_triton, relu_problem):
    task = WorkerTask(
        problem_name="relu",
        problem_source=relu_problem.source,
        sizes=relu_problem.sizes,
        candidate_source=RELU_KERNEL,
        seeds=[0],
    )
    env = {"TRITON_INTERPRET": "1", "PYTHONPATH": f"{fake_triton}:{PACKAGE_PARENT}"}
    evidence = run_in_sandbox(task, SandboxLimits(timeout_s=60), env)
    assert evidence.stage == "setup" and "this triton is broken" in evidence.error.message


def test_the_evaluator_reports_it_as_backend_unavailable(fake_triton, tmp_path, relu_problem):
    plugin = tmp_path / "broken_backend.py"
    plugin.write_text(BROKEN_TRITON_BACKEND.format(fake=fake_triton))
    host = PluginHost(extra_plugins=[str(plugin)], load_entry_points=False, strict=True)
    evaluator = Evaluator(EvalConfig(backend="broken-triton", trials=1), host=host)
    with pytest.raises(BackendUnavailable, match="broken-triton.*this triton is broken"):
        evaluator.evaluate(RELU_KERNEL, relu_problem)


def _killed_first(marker) -> str:
    """The honest kernel, whose worker is SIGKILLed (as another process or the OOM killer would) while `marker`
    does not exist; the marker is made first, so only the first attempt dies."""
    return (
        "import os as _os, signal as _signal\n"
        f"if not _os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    _os.kill(_os.getpid(), _signal.SIGKILL)\n" + RELU_KERNEL
    )


def test_a_worker_killed_from_outside_runs_again_and_twice_is_no_verdict(relu_problem, tmp_path):
    """Killed by a signal its limits never send: not the candidate's crash.  Once, the task runs again on a fresh
    worker (and is judged there); twice, it is an infrastructure failure (stage setup: the backend's error)."""
    env = {"TRITON_INTERPRET": "1"}

    def task(source: str) -> WorkerTask:
        return WorkerTask(
            problem_name="relu",
            problem_source=relu_problem.source,
            sizes=relu_problem.sizes,
            candidate_source=source,
            seeds=[0],
            device="cpu",
        )

    once = run_in_sandbox(task(_killed_first(tmp_path / "killed")), SandboxLimits(timeout_s=60), env, zygote=True)
    assert once.error is None and once.stage == "done", once.error
    always = "import os as _os, signal as _signal\n_os.kill(_os.getpid(), _signal.SIGKILL)\n" + RELU_KERNEL
    twice = run_in_sandbox(task(always), SandboxLimits(timeout_s=60), env, zygote=True)
    assert twice.stage == "setup" and twice.error.kind == "InfrastructureFailure", twice.error
    assert "SIGKILL" in twice.error.message and "not a verdict" in twice.error.message
    own = "import ctypes as _c\n_c.string_at(0)\n" + RELU_KERNEL  # its own segfault stays its own crash
    crashed = run_in_sandbox(task(own), SandboxLimits(timeout_s=60), env, zygote=True)
    assert crashed.error.kind == "WorkerCrashed" and "SIGSEGV" in crashed.error.message
