"""A reference that draws random numbers is found by the screen and judged as such (issue 41 item 5).

The screen calls the reference twice on the same inputs from two generator states (`worker/stochastic.py`).
`nn.Dropout(0.5)` in train() mode differs there and agrees in eval() mode: the screen says "train_mode", and every
evaluation judges Model and ModelNew in eval() mode, saying so in its message, so the reference submitted as its own
candidate is `ok` and a kernel that leaves dropout out (its eval() answer) is `ok` too, while one that drops
whatever the mode is `incorrect`, told why.  `torch.rand_like` in forward differs in eval() mode too: "always", and
the problem is refused (`ProblemFormatError`) with what differed, never a candidate's `incorrect`.  On the CPU
backend before this, both references were `incorrect` as their own candidates (222 and 488 of 512 elements).
"""

from __future__ import annotations

import pytest

from tritongym.core.config import EvalConfig
from tritongym.core.errors import ProblemFormatError
from tritongym.core.eval.evaluate import EVAL_MODE_NOTE, Evaluator
from tritongym.core.eval.screen import SCREEN_SEEDS, screen_problem
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import parse_problem
from tritongym.core.worker_task import SandboxLimits

DROPOUT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        return self.dropout(torch.relu(x))


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
"""

RAND = DROPOUT.replace("return self.dropout(torch.relu(x))", "return torch.relu(x) + torch.rand_like(x)")

RELU = """
import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out
"""


def _with_relu(model_new: str) -> str:
    return RELU + "\n\n" + model_new


# the reference as its own candidate: its dropout module kept, the relu in Triton
AS_REFERENCE = _with_relu("""
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.dropout(relu(x))
""")

# ignores the randomness entirely: no dropout at all
IGNORES = _with_relu("""
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return relu(x)
""")

# drops whatever the module's mode (training=True written in)
ALWAYS_DROPS = _with_relu("""
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return F.dropout(relu(x), 0.5, training=True)
""")

RAND_AS_REFERENCE = _with_relu("""
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return relu(x) + torch.rand_like(x)
""")


def _screen(source: str, name: str):
    evaluator = Evaluator(EvalConfig(backend="triton-cpu", trials=2), host=PluginHost(load_entry_points=False))
    try:
        problem = parse_problem(source, name, "test")
        return screen_problem(
            problem, evaluator.backend, "cpu", SandboxLimits(timeout_s=120), evaluator.tolerances, SCREEN_SEEDS
        )
    finally:
        evaluator.close()


def test_the_screen_finds_dropout_in_train_mode_and_rand_in_forward():
    dropout = _screen(DROPOUT, "dropout")
    assert dropout.stochastic == "train_mode", dropout
    assert "differ in train() mode" in dropout.stochastic_note and "not in eval() mode" in dropout.stochastic_note
    assert dropout.refusal() is None
    assert dropout.controls  # the controls ran, in eval() mode
    rand = _screen(RAND, "rand")
    assert rand.stochastic == "always" and not rand.ok, rand
    assert "whatever its mode" in rand.refusal() and "elements outside tolerance" in rand.refusal()
    plain = _screen(DROPOUT.replace("self.dropout(torch.relu(x))", "torch.relu(x)"), "relu")
    assert plain.stochastic is None and plain.ok


@pytest.fixture(scope="module")
def evaluator():
    config = EvalConfig(backend="triton-cpu", trials=2, timeout_s=120, workers=1, use_cache=False)
    evaluator = Evaluator(config, host=PluginHost(load_entry_points=False))
    yield evaluator
    evaluator.close()


def test_a_dropout_problem_is_judged_in_eval_mode(evaluator):
    problem = parse_problem(DROPOUT, "dropout", "test")
    itself = evaluator.evaluate(AS_REFERENCE, problem)
    assert itself.status == Status.ok, itself.message
    assert itself.message.endswith(f"({EVAL_MODE_NOTE})")
    ignores = evaluator.evaluate(IGNORES, problem)
    assert ignores.status == Status.ok, ignores.message
    assert EVAL_MODE_NOTE in ignores.message
    drops = evaluator.evaluate(ALWAYS_DROPS, problem)
    assert drops.status == Status.incorrect, drops.message
    assert EVAL_MODE_NOTE in drops.message and "apply dropout only while self.training" in drops.message


def test_a_reference_random_whatever_its_mode_is_refused_not_charged_to_the_candidate(evaluator):
    problem = parse_problem(RAND, "rand", "test")
    with pytest.raises(ProblemFormatError, match="draws random numbers in forward whatever its mode"):
        evaluator.evaluate(RAND_AS_REFERENCE, problem)


def test_the_warm_worker_path_judges_in_eval_mode(tmp_path):
    """The keeper and the GPU worker's code (run on the CPU): with the screen's "train_mode" the reference is built
    in eval() mode on both sides and no mode probe calls the candidate in train() mode."""
    from tests.conftest import task_for
    from tritongym.core.problems import load_problem
    from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
    from tritongym.core.verdict import judge_trials

    task = task_for(load_problem("relu"), AS_REFERENCE).model_copy(
        update={"problem_name": "dropout", "problem_source": DROPOUT, "sizes": {}, "stochastic": "train_mode"}
    )
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        evidence = pool.run(task, timeout_s=120)
    finally:
        pool.close()
    assert evidence.error is None, evidence.error
    assert judge_trials(evidence.trials).correct
    probes = {call.probe for call in evidence.probes}
    assert "mode:no_grad+eval" in probes and not any(p.endswith("+train") for p in probes), probes
