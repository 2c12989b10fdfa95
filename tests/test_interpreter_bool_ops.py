"""`and`/`or` on tensors inside a Triton kernel, on triton-cpu, as Triton's compiler reads them
(`core/worker/interpreter_bool_ops.py`).

The compiler combines `rows < M and cols < N` elementwise; Python's `and` hands back one operand whole, so in a
partial row block the interpreter kept the row mask alone and FlagGems's log_softmax stored past each row's end
(heap corruption, SIGABRT: an honest production kernel judged `crashed`)."""

from __future__ import annotations

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.worker.interpreter_bool_ops import bool_values

TRIL = """
import torch
import torch.nn as nn

M = 6
N = 37


class Model(nn.Module):
    def forward(self, x):
        return torch.tril(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
"""

# torch.tril with `and` masks: blocks of 4 rows by 64 columns, partial in one direction or both (6 rows, 37 columns).
# Read as Python reads `and` (the interpreter's bool of a block is True), `inside` is the column mask alone and
# `keep` is `inside`: nothing above the diagonal is zeroed, and rows past M are written.
TRIL_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def tril_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHECK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = rows[:, None] < M and cols[None, :] < N
    keep = rows[:, None] >= cols[None, :] and inside
    if CHECK and BLOCK_N > 0 or False:  # constexpr operands: Python's reading and the compiler's agree
        offsets = rows[:, None] * N + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
        tl.store(out_ptr + offsets, tl.where(keep, x, 0.0), mask=inside)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        grid = (triton.cdiv(x.shape[0], 4), triton.cdiv(x.shape[1], 64))
        tril_kernel[grid](x, out, x.shape[0], x.shape[1], BLOCK_M=4, BLOCK_N=64, CHECK=True)
        return out
"""


def test_a_kernel_masking_with_and_is_judged_as_the_compiler_runs_it(tmp_path):
    path = tmp_path / "tril.py"
    path.write_text(TRIL)
    problem = load_problem(str(path))
    config = EvalConfig(backend="triton-cpu", trials=2, use_cache=False, shapes="off")
    with Evaluator(config, host=PluginHost(load_entry_points=False)) as evaluator:
        result = evaluator.evaluate(TRIL_KERNEL, problem)
    assert result.status == Status.ok, result.message


def test_constexpr_operands_short_circuit_as_the_compiler_does():
    def never():
        raise AssertionError("evaluated past a settled answer")

    assert bool_values("logical_and", lambda: 0, never) == 0
    assert bool_values("logical_or", lambda: 3, never) == 3
    assert bool_values("logical_and", lambda: 1, lambda: 2) == 2  # nothing settled: the last value
    assert bool_values("logical_or", lambda: 0, lambda: "") == ""
