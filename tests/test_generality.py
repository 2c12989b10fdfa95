"""Correctness at the problem's shapes first (issue 41 item 4): a kernel right at the problem's own shapes and wrong
at an extra shape set is told apart from one wrong at its own inputs.

Its result says `generality = "problem_shapes_only"` and its message says both halves ("correct at the problem's
shapes (M=32, K=32, N=32: ...); wrong at shape set M=25, ..."); `require_generality` (on by default) decides whether
it is `incorrect` or `ok`, and `correct`, the reward and `honest_and_correct` follow.  Real triton-cpu evaluations of
a small KernelBench-style matmul, whose derived shape sets are all halved (16) and all made odd (25).
"""

from __future__ import annotations

import pytest

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import main_sizes, parse_problem

MATMUL = """
import torch
import torch.nn as nn

M = 32
K = 32
N = 32


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
"""

# As an LLM writes it for M = K = N = 32: no masks, BLOCK dividing the problem's sizes exactly (the grid and the K
# loop round down, so at 25 the last rows, columns and K-block are never computed; nothing is read out of bounds).
UNMASKED = """
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, LAST: tl.constexpr, BLOCK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K // BLOCK - LAST):
        a = tl.load(a_ptr + rm[:, None] * K + (k * BLOCK + rk)[None, :])
        b = tl.load(b_ptr + (k * BLOCK + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.zeros((M, N), device=a.device, dtype=torch.float32)
        matmul_kernel[(M // 16, N // 16)](a.contiguous(), b.contiguous(), c, M, N, K, LAST=0, BLOCK=16)
        return c
"""

# The same kernel one K-block short: wrong at the problem's own shapes too.
SHORT = UNMASKED.replace("LAST=0", "LAST=1")


@pytest.fixture(scope="module")
def matmul():
    problem = parse_problem(MATMUL, "small_matmul", "test")
    assert problem.extra_sizes == [{"M": 16, "K": 16, "N": 16}, {"M": 25, "K": 25, "N": 25}]
    return problem


def _evaluate(source: str, problem, **config):
    settings = dict(backend="triton-cpu", trials=2, timeout_s=120, workers=1, use_cache=False)
    evaluator = Evaluator(EvalConfig(**settings, **config), host=PluginHost(load_entry_points=False))
    try:
        return evaluator.evaluate(source, problem)
    finally:
        evaluator.close()


def test_a_kernel_right_only_at_the_problems_shapes_is_refused_by_default_and_says_so(matmul):
    result = _evaluate(UNMASKED, matmul)
    assert result.status == Status.incorrect, result.message
    assert result.generality == "problem_shapes_only"
    assert not result.correct and not result.honest_and_correct
    assert result.reward.components["correctness"] == 0.0
    assert result.message.startswith("incorrect: correct at the problem's shapes (M=32, K=32, N=32: all 2 trials match")
    assert "; wrong at shape set M=25, K=25, N=25 (input shapes [25, 25]; [25, 25];" in result.message
    assert "generality is required" in result.message
    assert "require_generality" in result.message


def test_without_require_generality_it_is_accepted_and_still_named(matmul):
    result = _evaluate(UNMASKED, matmul, require_generality=False)
    assert result.status == Status.ok, result.message
    assert result.generality == "problem_shapes_only"
    assert result.correct and result.honest_and_correct
    assert result.reward.components["correctness"] == 1.0
    assert result.message.startswith("ok: correct at the problem's shapes (M=32, K=32, N=32: all 2 trials match")
    assert "wrong at shape set M=25, K=25, N=25" in result.message


def test_a_kernel_wrong_at_its_own_shapes_is_plainly_incorrect(matmul):
    for required in (True, False):
        result = _evaluate(SHORT, matmul, require_generality=required)
        assert result.status == Status.incorrect, result.message
        assert result.generality is None
        assert result.message.startswith("incorrect: trial 0 (seed "), result.message
        assert "problem's shapes" not in result.message


def test_the_key_is_part_of_the_cache_key_and_validated():
    assert EvalConfig().require_generality is True
    names = ["structure"]
    assert EvalConfig(require_generality=False).protocol_key(names) != EvalConfig().protocol_key(names)
    with pytest.raises(ValueError):
        EvalConfig(require_generality="sometimes")


def test_main_sizes_reads_the_preset_else_the_module_constants(matmul):
    assert main_sizes(matmul, ["N", "M", "X"]) == {"N": 32, "M": 32}
    preset = matmul.model_copy(update={"sizes": {"M": 8}})
    assert main_sizes(preset, ["M", "K"]) == {"M": 8, "K": 32}
