"""A problem too large for its device is the problem's error, with its need and the device's size (issue 27
item 1): never a candidate's crash.  On the CPU the device is the worker's memory limit; on a GPU the keeper
names the GPU's size (tests/test_gpu.py)."""

from __future__ import annotations

import pytest

from tritongym.core.config import EvalConfig
from tritongym.core.errors import ProblemFormatError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem

TOO_LARGE = """
import torch
import torch.nn as nn

N = 1 << 32  # 16 GiB of float32


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""


def test_a_problem_larger_than_the_workers_memory_is_the_problems_error(tmp_path, relu_problem):
    path = tmp_path / "too_large.py"
    path.write_text(TOO_LARGE)
    problem = load_problem(str(path))
    config = EvalConfig(backend="triton-cpu", size="cpu", use_cache=False, memory_mb=4096)
    with Evaluator(config, host=PluginHost(load_entry_points=False)) as evaluator:
        with pytest.raises(ProblemFormatError) as caught:
            evaluator.evaluate(relu_problem.solution, problem)
    message = str(caught.value)
    assert "the reference of problem 'too_large' failed in the worker" in message
    assert "17179869184 bytes" in message  # its need
    assert "does not fit the worker's memory limit, 4096 MiB" in message  # the device's size
