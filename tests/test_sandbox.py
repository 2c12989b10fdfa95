"""The worker's own failures are never blamed on the candidate."""

from __future__ import annotations

import pytest
from conftest import RELU_KERNEL

from tritongym.core.config import EvalConfig
from tritongym.core.errors import BackendUnavailable
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.plugins import PluginHost
from tritongym.core.sandbox.sandbox import _PACKAGE_PARENT, SandboxLimits, run_in_sandbox
from tritongym.core.worker_task import WorkerTask

BROKEN_TRITON_BACKEND = """
from tritongym import hookimpl
from tritongym.core.sandbox.sandbox import _PACKAGE_PARENT, run_in_sandbox
from tritongym.plugins.backends.triton_cpu import TritonCPUBackend


class BrokenTritonBackend(TritonCPUBackend):
    '''triton-cpu whose worker finds a Triton that fails to import.'''

    name = "broken-triton"

    def measure(self, task, limits):
        env = {{"TRITON_INTERPRET": "1", "PYTHONPATH": "{fake}:" + _PACKAGE_PARENT}}
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
    env = {"TRITON_INTERPRET": "1", "PYTHONPATH": f"{fake_triton}:{_PACKAGE_PARENT}"}
    evidence = run_in_sandbox(task, SandboxLimits(timeout_s=60), env)
    assert evidence.stage == "setup" and "this triton is broken" in evidence.error.message


def test_the_evaluator_reports_it_as_backend_unavailable(fake_triton, tmp_path, relu_problem):
    plugin = tmp_path / "broken_backend.py"
    plugin.write_text(BROKEN_TRITON_BACKEND.format(fake=fake_triton))
    host = PluginHost(extra_plugins=[str(plugin)], load_entry_points=False, strict=True)
    evaluator = Evaluator(EvalConfig(backend="broken-triton", trials=1), host=host)
    with pytest.raises(BackendUnavailable, match="broken-triton.*this triton is broken"):
        evaluator.evaluate(RELU_KERNEL, relu_problem)
