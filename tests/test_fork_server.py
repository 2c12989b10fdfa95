"""The pool's fork server started before the pool (`fork_server.start_early`): `tritongym eval` starts it before
its own imports, so a cold evaluation's processes stop waiting for the CLI's start.  On the CPU: the first pool
with the same environment adopts it and judges with it, one with another environment does not (and the early one
is closed), and the CLI starts one only when a local pool on triton-cuda is likely."""

from __future__ import annotations

import pytest

from tests.conftest import task_for
from tritongym.cli.eval import _start_fork_server_early
from tritongym.core.sandbox import fork_server
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool


@pytest.fixture(autouse=True)
def no_early_fork_server_left(tmp_path, monkeypatch):
    """No early fork server outlives a test, and no other test's `serve` is announced to this one's `eval` (an
    announced serve means the CLI starts no early fork server)."""
    monkeypatch.setenv("TRITONGYM_RUNTIME_DIR", str(tmp_path / "runtime"))
    yield
    fork_server._close_early()


def test_the_first_pool_adopts_the_early_fork_server_and_judges_with_it(relu_problem):
    fork_server.start_early()
    early = fork_server._early
    fork_server.start_early()  # a second call starts no second one
    assert fork_server._early is early and early is not None
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        assert pool.zygote is early and fork_server._early is None
        evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    finally:
        pool.close()
    assert evidence.error is None and evidence.stage == "done", evidence.error
    assert early.proc.poll() is not None  # the pool closed it as its own


def test_a_pool_with_another_environment_starts_its_own_and_the_early_one_is_closed():
    fork_server.start_early()
    early = fork_server._early
    assert fork_server.adopt_early({"TRITONGYM_SOMETHING": "1"}) is None
    assert early.proc.poll() is not None and fork_server._early is None
    assert fork_server.adopt_early({}) is None  # nothing left to adopt


@pytest.mark.parametrize(
    ("backend", "config", "pool", "ray", "starts"),
    [
        ("triton-cuda", None, "auto", None, True),
        ("triton-cuda", None, "off", None, True),
        ("triton-cpu", None, "auto", None, False),
        ("triton-cuda", None, "require", None, False),  # a serve must take it: no local pool
        ("triton-cuda", None, "auto", "auto", False),  # Ray's actors judge it
        (None, 'backend = "triton-cuda"\n', "auto", None, True),
        (None, 'backend = "triton-cuda"\nexecutor = "ray"\n', "auto", None, False),
        (None, "not toml [", "auto", None, False),  # its loading reports it; no guess here
    ],
)
def test_the_cli_starts_one_only_when_a_local_gpu_pool_is_likely(tmp_path, backend, config, pool, ray, starts):
    path = None
    if config is not None:
        path = tmp_path / "config.toml"
        path.write_text(config)
    _start_fork_server_early(backend, path, pool, ray)
    assert (fork_server._early is not None) == starts
