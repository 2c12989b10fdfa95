"""Degenerate problems at evaluation time (issue 18): the negative controls of `problems check`, computed once
per problem and kept in the registry, and the `degenerate` check that they feed.

The problem built here clamps inputs in [0, 1) to [-10, 10]: the reference is the identity on them and on every
distribution main trials draw from (scaled down, negated, scaled up by 4), so a kernel that copies its input
passes every trial.  It must come out `hacked`, naming the degeneracy, while an honest clamp kernel on the same
problem is `ok`.  The screen tells the two apart on inputs scaled by 16, which reach past the bounds.  Real
triton-cpu evaluations throughout.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from tritongym.core.config import EvalConfig
from tritongym.core.eval import screen
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem, parse_problem

WIDE_CLAMP = '''
"""A clamp to [-10, 10] of uniform [0, 1) inputs: the reference is the identity on them."""

import torch
import torch.nn as nn

ROWS = 16
COLS = 40


class Model(nn.Module):
    def forward(self, x):
        return torch.clamp(x, -10.0, 10.0)


def get_inputs():
    return [torch.rand(ROWS, COLS)]


def get_init_inputs():
    return []
'''

COPY_KERNEL = (Path(__file__).parent / "hacks" / "candidates" / "identity_output.py").read_text()  # returns x

CLAMP_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, -10.0), 10.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        clamp_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
"""
"""An honest kernel for the wide clamp."""


@pytest.fixture
def degenerate_problem():
    return parse_problem(WIDE_CLAMP, "wide_clamp", "test")


@pytest.fixture(autouse=True)
def _no_screens_held():
    """Each test starts with no screen held in the process, so it sees what it computes or reads."""
    screen._HELD.clear()
    yield
    screen._HELD.clear()


def _evaluator(registry=None, **config) -> Evaluator:
    settings = dict(backend="triton-cpu", trials=3, timeout_s=120, workers=2)
    settings.update(config)
    return Evaluator(EvalConfig(**settings), registry=registry, host=PluginHost(load_entry_points=False))


def test_returning_the_input_on_a_degenerate_problem_is_hacked_and_an_honest_kernel_is_ok(degenerate_problem):
    with _evaluator() as evaluator:
        copied, computed = evaluator.evaluate_many(
            [(COPY_KERNEL, degenerate_problem), (CLAMP_KERNEL, degenerate_problem)]
        )
    assert copied.status == Status.hacked and copied.hacked and not copied.correct, copied.message
    assert copied.reward.total == 0
    assert "check 'degenerate'" in copied.message
    assert "problem 'wide_clamp' is degenerate" in copied.message
    assert "returning an input unchanged (the identity) passes its correctness check" in copied.message
    assert computed.status == Status.ok and computed.reward.total >= 1, computed.message
    verdict = next(v for v in computed.checks if v.name == "degenerate")
    assert verdict.passed and "degenerate for identity" in verdict.reason


def test_the_screen_is_computed_once_and_kept_in_the_registry(degenerate_problem, registry, monkeypatch):
    with _evaluator(registry) as evaluator:
        first = evaluator.evaluate(COPY_KERNEL, degenerate_problem)
    assert first.status == Status.hacked
    rows = list(registry.db.query("SELECT problem_name, degenerate, passing_controls, screen FROM problem_screens"))
    assert [(r["problem_name"], r["degenerate"], r["passing_controls"]) for r in rows] == [
        ("wide_clamp", 1, '["identity"]')
    ]
    stored = screen.ScreenResult.model_validate_json(rows[0]["screen"])
    assert stored.degenerate_probes() == {"identity": "scaled"}

    # a new process (nothing held) with the same registry reads the screen instead of running the controls
    screen._HELD.clear()

    def no_second_screen(*args, **kwargs):
        raise AssertionError("the screen was computed again although the registry holds it")

    monkeypatch.setattr(screen, "screen_problem", no_second_screen)
    with _evaluator(registry, use_cache=False) as evaluator:
        again, computed = evaluator.evaluate_many(
            [(COPY_KERNEL, degenerate_problem), (CLAMP_KERNEL, degenerate_problem)]
        )
    assert again.status == Status.hacked and computed.status == Status.ok


def test_threads_asking_at_once_share_one_screen(degenerate_problem, registry, monkeypatch):
    """The service's lanes each evaluate one candidate: those that start together on a problem not screened
    yet wait for one screen rather than each running the controls on the same GPU."""
    calls = []
    real = screen.screen_problem

    def counted(*args, **kwargs):
        calls.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(screen, "screen_problem", counted)
    start = threading.Barrier(3)
    with _evaluator(registry) as evaluator:

        def ask(_):
            start.wait()
            return screen.cached_screens(
                [degenerate_problem],
                evaluator.backend,
                evaluator.device,
                evaluator.device_class,
                evaluator.limits,
                evaluator.tolerances,
                registry,
            )

        with ThreadPoolExecutor(max_workers=3) as pool:
            answers = list(pool.map(ask, range(3)))
    assert len(calls) == 1, calls
    assert all(a[degenerate_problem.key].passing_controls == ["identity"] for a in answers)
    assert registry.db.execute("SELECT count(*) FROM problem_screens").fetchone()[0] == 1
    assert not screen._COMPUTING


def test_a_problem_no_control_passes_gets_no_degeneracy_probe(registry):
    relu = load_problem("relu")
    with _evaluator(registry) as evaluator:
        result = evaluator.evaluate(relu.solution, relu)
    assert result.status == Status.ok
    verdict = next(v for v in result.checks if v.name == "degenerate")
    assert verdict.passed and verdict.reason == "no negative control passes this problem"
    (row,) = registry.db.query("SELECT degenerate FROM problem_screens")
    assert row["degenerate"] == 0


def test_skipping_the_check_skips_the_screen(degenerate_problem, monkeypatch):
    monkeypatch.setattr(screen, "screen_problem", lambda *a, **k: pytest.fail("screened without the check"))
    with _evaluator(skip_checks=["degenerate"]) as evaluator:
        result = evaluator.evaluate(COPY_KERNEL, degenerate_problem)
    assert result.status == Status.ok  # what the evaluation was before issue 18: the degeneracy goes unseen


def test_problems_check_names_the_input_transform_that_breaks_a_passing_control(write):
    from tritongym import api

    path = write("wide_clamp.py", WIDE_CLAMP)
    (result,) = api.check_problems(str(path), config=EvalConfig(backend="triton-cpu", trials=2))
    assert result.degenerate and result.passing_controls == ["identity"]
    assert result.breaking_inputs == {"identity": "scaled"}
    assert "fails on the problem's inputs scaled by 16" in result.controls["identity"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_triton_cuda_the_copy_is_hacked_and_the_honest_kernel_ok():
    degenerate = parse_problem(WIDE_CLAMP, "wide_clamp", "test", size="gpu")
    with _evaluator(backend="triton-cuda", size="gpu", timeout_s=300) as evaluator:
        copied, computed = evaluator.evaluate_many([(COPY_KERNEL, degenerate), (CLAMP_KERNEL, degenerate)])
    assert copied.status == Status.hacked and "check 'degenerate'" in copied.message, copied.message
    assert copied.reward.total == 0
    assert computed.status == Status.ok, computed.message
