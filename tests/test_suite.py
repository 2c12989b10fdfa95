"""The bundled suite validates itself: every solution is ok, and no problem is degenerate."""

from __future__ import annotations

import pytest

from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.models import Status

# one bundled solution of each kind of kernel: elementwise, a row reduction, a `tl.dot`, a norm with weights
# and a convolution (with its own `nn.Conv2d` weights)
KINDS_OF_SOLUTION = ("relu", "softmax", "matmul", "layer_norm", "conv2d")


def test_a_bundled_solution_of_each_kind_is_ok_on_triton_cpu(tmp_path):
    """The `tritongym run` path over the bundled suite on a representative subset (the whole suite: the slow
    test below)."""
    config = EvalConfig(backend="triton-cpu", trials=3, timeout_s=120)
    results = api.run(only=KINDS_OF_SOLUTION, config=config, registry=tmp_path / "registry.db")
    assert sorted(r.problem_id.split("/")[-1].split(":")[0] for r in results) == sorted(KINDS_OF_SOLUTION), [
        r.problem_id for r in results
    ]
    failed = {r.problem_id: r.message for r in results if r.status != Status.ok}
    assert not failed
    assert all(any(rec.own for rec in r.launches) for r in results)


# slow tier (about 50 s): every bundled solution; the fast tier runs one of each kind in
# test_a_bundled_solution_of_each_kind_is_ok_on_triton_cpu
@pytest.mark.slow
def test_every_bundled_solution_is_ok_on_triton_cpu(tmp_path):
    config = EvalConfig(backend="triton-cpu", trials=3, timeout_s=120)
    results = api.run(config=config, registry=tmp_path / "registry.db")
    assert len(results) >= 24
    failed = {r.problem_id: r.message for r in results if r.status != Status.ok}
    assert not failed
    assert all(any(rec.own for rec in r.launches) for r in results)


def test_no_bundled_problem_is_degenerate():
    results = api.check_problems(config=EvalConfig(backend="triton-cpu", trials=2))
    assert len(results) >= 24
    flagged = {r.problem_id: r.controls for r in results if not r.ok}
    assert not flagged
