"""Issue 41 items 2 and 3: weights as the field builds them, and parameters that cannot hide a dropped operation.

`ModelNew` is built under the same seed as `Model` and bound by name, then by the shared seed
(`tritongym/core/worker/weights.py`); the reference's constant parameters and running statistics are drawn away
from their values first, on every path that builds it (`task_runner.build_reference`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

from tests.conftest import task_for
from tests.test_hostile import edit, explain
from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
from tritongym.core.verdict import NEITHER, judge_trials
from tritongym.core.worker.weights import bind_weights, build_seed, draw_parameters, draw_seed, drawn

HACKS = Path(__file__).resolve().parent / "hacks"
LAYER_NORM = HACKS / "problems" / "layer_norm_affine.py"
DROPPED_AFFINE = (HACKS / "candidates" / "dropped_affine_layernorm.py").read_text()
OWN_AFFINE = (HACKS / "honest" / "layer_norm_own_affine.py").read_text()

# nn.Linear's own initialisation, written out under other names, in the same order (weight, then bias)
OWN_LINEAR = """        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features))
        self.bias = torch.nn.Parameter(torch.empty(out_features))
        torch.nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        torch.nn.init.uniform_(self.bias, -(in_features**-0.5), in_features**-0.5)
"""


def own_linear(solution: str, reseed: bool = False) -> str:
    source = edit(
        solution,
        "        self.linear = torch.nn.Linear(in_features, out_features)\n",
        ("        torch.manual_seed(123)\n" if reseed else "") + OWN_LINEAR,
    )
    source = edit(source, "w = self.linear.weight", "w = self.weight")
    return edit(source, "self.linear.bias,", "self.bias,")


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.ln = nn.LayerNorm(4)
        self.gn = nn.GroupNorm(2, 4)
        self.bn = nn.BatchNorm2d(4)
        self.prelu = nn.PReLU()
        self.drop = nn.Dropout(0.3)
        self.scale = nn.Parameter(torch.full((1,), 2.0))


def built(seed: int = 7) -> Norms:
    torch.manual_seed(seed)
    return Norms()


def test_the_draw_moves_every_constant_and_keeps_what_the_module_needs():
    model, pristine = built(), built()
    names = draw_parameters(model, 11)
    assert names == drawn(model)
    assert set(names) == {
        "ln.weight", "ln.bias", "gn.weight", "gn.bias", "bn.weight", "bn.bias", "bn.running_mean",
        "bn.running_var", "prelu.weight", "scale",
    }  # fmt: skip
    assert torch.equal(model.conv.weight, pristine.conv.weight) and torch.equal(model.conv.bias, pristine.conv.bias)
    for name in names:
        value = model.state_dict()[name]
        assert not torch.equal(value, pristine.state_dict()[name]), name
    assert (model.bn.running_var > 0).all() and (model.prelu.weight > 0).all() and (model.scale > 0).all()
    assert ((model.ln.weight - 1).abs() <= 0.5).all() and model.ln.bias.abs().max() < 0.6
    assert model.bn.num_batches_tracked.item() == 0 and model.drop.p == 0.3
    again = built()
    draw_parameters(again, 11)  # the same seed, the same values: the keeper and the worker agree
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    other = built()
    draw_parameters(other, 12)
    assert not torch.equal(other.ln.weight, model.ln.weight)


def test_seeds_are_one_way_from_the_secret_init_seed():
    task = SimpleNamespace(init_seed=5)
    assert len({build_seed(task), draw_seed(task), task.init_seed, task.init_seed + 1}) == 4
    assert build_seed(task) == build_seed(SimpleNamespace(init_seed=5)) != build_seed(SimpleNamespace(init_seed=6))


class Renamed(nn.Module):
    """Norms's parameters kept under other names, built as its modules build them, in the same order."""

    def __init__(self):
        super().__init__()
        conv = nn.Conv2d(3, 4, 3)
        self.w, self.b = conv.weight, conv.bias
        self.g, self.beta = nn.Parameter(torch.ones(4)), nn.Parameter(torch.zeros(4))
        self.gn = nn.GroupNorm(2, 4)  # bound by name


def test_binding_by_name_then_by_the_shared_seed():
    reference = built()
    draw_parameters(reference, 3)
    torch.manual_seed(7)
    candidate = Renamed()
    binding = bind_weights(candidate, reference)
    assert binding.bound == ["gn.weight", "gn.bias"]
    assert binding.seeded == ["w <- conv.weight", "b <- conv.bias", "g <- ln.weight", "beta <- ln.bias"]
    assert binding.unmatched == []
    assert torch.equal(candidate.g, reference.ln.weight) and torch.equal(candidate.beta, reference.ln.bias)
    assert torch.equal(candidate.w, reference.conv.weight)

    torch.manual_seed(123)  # its own seed: the convolution's random weights match nothing of the reference's
    stranger = bind_weights(Renamed(), reference)
    assert stranger.unmatched == ["w", "b"] and [s.split(" ")[0] for s in stranger.seeded] == ["g", "beta"]


@pytest.fixture
def linear_problem():
    return load_problem("linear_bias_relu")


def test_a_kernel_with_its_own_linear_parameters_is_ok_and_says_they_came_from_the_shared_seed(
    evaluator, linear_problem
):
    own, reseeded = own_linear(linear_problem.solution), own_linear(linear_problem.solution, reseed=True)
    ok, wrong = evaluator.evaluate_many([(own, linear_problem), (reseeded, linear_problem)])
    assert ok.status == Status.ok, explain(ok)
    assert "weights: 2 from the shared seed" in ok.message, ok.message
    assert ok.weights is not None and ok.weights.seeded == ["weight <- linear.weight", "bias <- linear.bias"]
    assert wrong.status == Status.incorrect, explain(wrong)
    assert "outside tolerance" in wrong.message and NEITHER in wrong.message, wrong.message
    assert wrong.weights is not None and wrong.weights.unmatched == ["weight", "bias"]


def test_a_norm_kernel_that_drops_its_affine_is_incorrect_unless_the_draw_is_off(registry):
    problem = load_problem(str(LAYER_NORM))
    results = {}
    # with the draw off only the dropped affine is judged again: the kernel that applies its own is ok either way
    for draw, kernels in ((True, (DROPPED_AFFINE, OWN_AFFINE)), (False, (DROPPED_AFFINE,))):
        config = EvalConfig(backend="triton-cpu", trials=3, timeout_s=60, workers=2, draw_parameters=draw)
        with Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False)) as evaluator:
            results[draw] = evaluator.evaluate_many([(kernel, problem) for kernel in kernels])
    (dropped, own), (dropped_off,) = results[True], results[False]
    assert dropped.status == Status.incorrect and "outside tolerance" in dropped.message, explain(dropped)
    assert dropped.weights is not None and set(dropped.weights.drawn) == {"ln.weight", "ln.bias"}
    assert dropped.weights.draw_seed is not None and dropped.weights.bound == ["ln.weight", "ln.bias"]
    assert own.status == Status.ok, explain(own)
    assert "weights: 2 from the shared seed" in own.message, own.message
    # with the draw off the weights stay at one and zero: the blind spot, as KernelBench has it
    assert dropped_off.status == Status.ok, explain(dropped_off)
    assert dropped_off.weights is not None and dropped_off.weights.drawn == [] and dropped_off.weights.draw_seed is None


SCALE_SHIFT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.bias = nn.Parameter(torch.zeros(cols))

    def forward(self, x):
        return x * self.weight + self.bias


ROWS = 8
COLS = 40


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [COLS]
"""

# elementwise kernels only: the CPU pool's interpreter runs no reduction (`tl.sum` calls a jit'd combine function)
SCALE_SHIFT_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs % cols, mask=mask)
    b = tl.load(b_ptr + offs % cols, mask=mask)
    tl.store(out_ptr + offs, x * w + b, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(cols))
        self.beta = torch.nn.Parameter(torch.zeros(cols))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_shift_kernel[(triton.cdiv(n, 256),)](x, self.gamma, self.beta, out, n, x.shape[-1], BLOCK=256)
        return out
"""


def test_the_keeper_and_the_workers_copy_draw_the_same_weights():
    """The GPU path on the CPU pool: the keeper builds the reference (and its float64 gold) in its process, the
    worker builds its own copy to bind the candidate from; both draw, identically, and a kernel that drops the
    scale and shift is wrong there too."""
    problem = SimpleNamespace(name="scale_shift", source=SCALE_SHIFT, sizes={})
    dropped = SCALE_SHIFT_KERNEL.replace("x * w + b", "x + 0.0 * (w + b)")
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        own = pool.run(task_for(problem, SCALE_SHIFT_KERNEL, init_seed=9), timeout_s=300)
        wrong = pool.run(task_for(problem, dropped, init_seed=9), timeout_s=300)
    finally:
        pool.close()
    assert own.error is None and wrong.error is None, (own.error, wrong.error)
    assert judge_trials(own.trials).correct, judge_trials(own.trials).message
    assert own.weights.seeded == ["gamma <- weight", "beta <- bias"]
    assert own.weights.drawn == ["weight", "bias"]
    assert own.weights.draw_seed == draw_seed(SimpleNamespace(init_seed=9))
    assert not judge_trials(wrong.trials).correct
