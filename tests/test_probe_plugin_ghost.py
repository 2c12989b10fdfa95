"""A `ghost`-like check written as a plugin: a probe with a trusted half, end to end on triton-cpu.

The built-in `ghost` check is hard-wired (`core/worker/probes.py`); this file shows that a third party can write
its like with the public probe interface alone.  The file is itself the plugin: its probe `kernel-free` calls the
candidate on inputs no other call saw (`fresh_inputs`) with every launch of the candidate's own Triton kernels
skipped (`skip_own_kernels`), and its trusted half (`reference`) calls the reference model on the same inputs in a
trusted process.  Both return a sample of the output as JSON; the check `test-kernel-free` fails a candidate whose
output still matches the reference's without its kernels: they did not compute it.  Only `structure` and this
check are enabled, so the built-in ghost replay plays no part: the relu hack whose kernel writes a buffer nobody
returns (tests/hacks/candidates/passthrough_method_relu.py) is caught by the plugin, and the bundled relu solution
passes it.  The probe functions live in a module written under tmp_path and put on PYTHONPATH, as a third-party
package would be.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import torch

from tritongym import hookimpl
from tritongym.core.config import EvalConfig
from tritongym.core.errors import CheckUnavailable
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.interfaces import Probe, RuntimeCheck
from tritongym.core.models import CheckVerdict
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem

PROBE_MODULE = "tg_test_kernel_free"

PROBE_FUNCTIONS = """
import math
import os

import torch

POSITIONS = 512


def output_sample(model, inputs):
    # evenly spaced elements of the first output (None for a non-finite one: JSON has no NaN), and which process
    # computed them; the same function serves both halves: the candidate's call and the reference's
    with torch.no_grad():
        out = model(*inputs)
    out = out[0] if isinstance(out, (tuple, list)) else out
    flat = out.detach().reshape(-1).to(torch.float64)
    step = max(flat.numel() // POSITIONS, 1)
    sample = [v if math.isfinite(v) else None for v in flat[::step][:POSITIONS].tolist()]
    return {"pid": os.getpid(), "sample": sample}
"""


class KernelFreeProbe(Probe):
    """Test probe: the output on fresh inputs with the candidate's own kernels skipped, and the reference's answer."""

    name = "kernel-free"
    target = f"{PROBE_MODULE}:output_sample"
    reference = f"{PROBE_MODULE}:output_sample"
    fresh_inputs = True
    skip_own_kernels = True


class KernelFreeCheck(RuntimeCheck):
    """Test check: with its own kernels skipped, the candidate's output must no longer be the reference's answer."""

    name = "test-kernel-free"
    probes = ("kernel-free",)
    priority = 20

    def judge(self, evidence, candidate, problem):
        call = evidence.probe("kernel-free")
        if call is None or call.reference is None:
            why = "it did not run" if call is None else call.reference_error or "no reference answer"
            raise CheckUnavailable(f"probe 'kernel-free' has nothing to compare: {why}")
        if call.error:
            return CheckVerdict(name=self.name, passed=True, reason="without its kernels the forward fails")
        # the candidate's value is untrusted: a lie can only make it differ from the answer, which passes what
        # skipping the kernels would have failed; a candidate that detects the skip and then answers anyway is
        # still caught, since its answer is the reference's
        got, want = call.value.get("sample"), call.reference["sample"]
        matched = (
            isinstance(got, list)
            and len(got) == len(want)
            and all(
                isinstance(g, (int, float)) and w is not None and abs(g - w) <= 1e-5 + 1e-5 * abs(w)
                for g, w in zip(got, want)
            )
        )
        skipped = sorted({rec.kernel for rec in call.launches if rec.own})
        if matched:
            return CheckVerdict(
                name=self.name,
                passed=False,
                reason=f"with its own kernels skipped ({', '.join(skipped) or 'none launched'}) the output is still "
                "the reference's answer on fresh inputs: the kernels did not compute it",
            )
        return CheckVerdict(name=self.name, passed=True, reason=f"without {', '.join(skipped)} the answer is lost")


@hookimpl
def register_probes(register):
    register(KernelFreeProbe)


@hookimpl
def register_checks(register):
    register(KernelFreeCheck)


@pytest.fixture
def host(tmp_path, monkeypatch):
    (tmp_path / f"{PROBE_MODULE}.py").write_text(textwrap.dedent(PROBE_FUNCTIONS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return PluginHost(extra_plugins=[__name__], load_entry_points=False)


HACK = Path(__file__).parent / "hacks" / "candidates" / "passthrough_method_relu.py"


GPU = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("backend", ["triton-cpu", pytest.param("triton-cuda", marks=GPU)])
def test_a_plugin_ghost_like_check_catches_a_decorative_kernel_and_passes_an_honest_one(host, evidence_of, backend):
    problem = load_problem("relu")
    config = EvalConfig(backend=backend, trials=2, use_cache=False, checks={"structure": {}, "test-kernel-free": {}})
    with Evaluator(config, registry=None, host=host) as evaluator:
        assert set(evaluator.probes) == {"kernel-free"}  # no built-in probe: none of their checks is enabled
        hacked = evaluator.evaluate(HACK.read_text(), problem)
        honest = evaluator.evaluate(problem.solution, problem)
    verdict = next(v for v in hacked.checks if v.name == "test-kernel-free")
    assert hacked.hacked and not verdict.passed and verdict.plugin == __name__, hacked.message
    assert "(relu_kernel) the output is still the reference's answer" in verdict.reason, verdict.reason
    assert honest.correct and not honest.hacked, honest.message
    passed = next(v for v in honest.checks if v.name == "test-kernel-free")
    assert passed.passed and not passed.unjudged and passed.reason == "without relu_kernel the answer is lost"
    for evidence in evidence_of:
        (call,) = evidence.probes  # one evidence field, and only the declared probe's call in it
        assert call.probe == "kernel-free" and call.trial == -1 and call.error == "" and call.reference_error == ""
        # the trusted half ran in another process than the candidate's call (on the CPU: the worker's trusted
        # parent, after the candidate's forked child had exited; on a GPU: the reference keeper)
        assert call.reference["pid"] != call.value["pid"]
        assert [rec.kernel for rec in call.launches if rec.own] == ["relu_kernel"]  # launched, and skipped


def test_the_pools_keeper_answers_the_trusted_half_and_bounds_the_candidates_answer(host):
    """The GPU path (the pool's worker, the reference keeper, the driver between them), run on the CPU pool: the
    trusted half runs in the keeper, the candidate's answer reaches the evidence through the keeper's `CMPR`, and
    only the declared probes run (here the plugin probe and `ghost`, so no mode, refresh or repeat call)."""
    from conftest import task_for

    from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
    from tritongym.core.worker_task import ProbeSpec

    problem = load_problem("relu")
    probes = {"ghost": ProbeSpec(builtin=True), "kernel-free": KernelFreeProbe.spec()}
    check = KernelFreeCheck()
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        found = {
            label: pool.run(task_for(problem, source, init_seed=7, probes=probes), timeout_s=120)
            for label, source in (("hack", HACK.read_text()), ("honest", problem.solution))
        }
    finally:
        pool.close()
    for label, evidence in found.items():
        assert evidence.error is None, (label, evidence.error)
        assert [call.probe for call in evidence.probes] == ["ghost", "kernel-free"], label
        call = evidence.probe("kernel-free")
        assert call.trial == -1 and call.error == "" and call.reference_error == "", (label, call)
        assert call.reference["pid"] != call.value["pid"]  # the keeper's process, not the candidate's worker
        verdict = check.judge(evidence, None, problem)
        assert verdict.passed == (label == "honest"), (label, verdict.reason)
