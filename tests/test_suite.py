"""The bundled suite validates itself: every solution is ok, and no problem is degenerate."""

from __future__ import annotations

from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.models import Status


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
