"""Triton's compile seconds are kept off a candidate's time budget, up to a cap (`sandbox/compile_clock.py`).

On one H200 an honest, autotuned FlagGems `mm` was refused as a `timeout` while an RL-sized batch compiled beside
it: the compiler's seconds depend on the machine's load.  The worker says when it gives its hold back to compile
(`UNLK` with `COMPILING`, then `RSHR`); the task driver moves the deadline on by those seconds, as by its waits
for the GPU lock, and a candidate forging the frames buys at most the cap."""

from __future__ import annotations

import os
import time

import pytest
import torch

from tests.conftest import task_for
from tritongym.core.sandbox.compile_clock import CompileClock
from tritongym.core.worker.protocol import COMPILING


def test_a_compile_is_excused_as_it_goes_and_once_it_ends():
    clock = CompileClock(allowance_s=10.0)
    clock.given_back(100.0, COMPILING)
    assert clock.pending_s(103.0) == 3.0  # under way: a long compile is not killed at the old deadline
    assert clock.taken_back(104.0, resumed=True) == 4.0
    assert clock.excused_s == 4.0 and clock.pending_s(200.0) == 0.0


def test_a_release_that_is_not_a_compile_excuses_nothing():
    clock = CompileClock(allowance_s=10.0)
    clock.given_back(100.0, b"")  # the end of a hold: what follows is the candidate's own time
    assert clock.pending_s(150.0) == 0.0
    assert clock.taken_back(150.0, resumed=False) == 0.0
    clock.given_back(160.0, COMPILING)
    assert clock.taken_back(161.0, resumed=False) == 0.0  # taken again as a plain SHAR: not a compile's end
    assert clock.excused_s == 0.0


def test_forged_compiles_buy_at_most_the_cap():
    clock = CompileClock(allowance_s=5.0)
    excused = 0.0
    for start in range(0, 100, 10):  # a candidate writing UNLK compile / RSHR itself, ten times 9 s
        clock.given_back(float(start), COMPILING)
        assert clock.pending_s(start + 9.0) <= 5.0 - excused
        excused += clock.taken_back(start + 9.0, resumed=True)
    assert excused == clock.excused_s == 5.0
    assert clock.said() == ", 5 s of Triton compiles not counted"  # what a timeout's message adds
    assert CompileClock().said() == ""


def test_the_task_driver_moves_the_deadline_on_by_compiles_and_not_by_other_releases(relu_problem):
    """Real pool, keeper lock and driver on the CPU: the frames a GPU worker sends around a compile, as
    `Channel.cpu_only` sends them, move the deadline by the compile's seconds (and the lock waits) only."""
    from tritongym.core.sandbox.gpu_pool import PoolOptions, TaskDriver, WorkerPool

    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    worker = pool._take()
    try:
        driver = TaskDriver(pool, worker, task_for(relu_problem, relu_problem.solution), timeout_s=60)
        driver.compiles.allowance_s = 0.5
        driver.deadline = start = time.monotonic() + 60
        driver._handle("SHAR", b"")
        driver._handle("UNLK", COMPILING)
        time.sleep(0.3)
        driver._handle("RSHR", b"")
        assert 0.3 <= driver.compiles.excused_s <= 0.5
        assert driver.deadline - start == pytest.approx(driver.compiles.excused_s + driver.lock_wait_s, abs=1e-6)
        driver._handle("UNLK", b"")  # a plain release: the time until the next hold is the candidate's
        time.sleep(0.2)
        before = driver.deadline
        driver._handle("SHAR", b"")
        assert driver.deadline - before < 0.1  # the lock wait only
        driver._handle("UNLK", COMPILING)
        time.sleep(0.4)
        driver._handle("RSHR", b"")
        assert driver.compiles.excused_s == pytest.approx(0.5)  # the cap: the second compile bought what was left
        driver._handle("UNLK", b"")
    finally:
        pool._retire(worker)  # sent grants it never asked for: not a worker to hand on
        pool.close()


def test_a_worker_says_which_release_is_for_a_compile(monkeypatch):
    import triton.compiler

    from tritongym.core.worker import frames
    from tritongym.core.worker.gpu_worker import Channel, release_gpu_while_compiling

    monkeypatch.setattr(triton.compiler, "compile", triton.compiler.compile)  # restored after the test
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    channel = Channel(to_worker_r, from_worker_w)
    channel.unlock_compiles = True
    release_gpu_while_compiling(channel)
    for _ in range(2):
        frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=False):
        with pytest.raises(Exception):  # noqa: B017 - Triton's own error for a source that is not a kernel
            triton.compiler.compile("not a kernel source")
    sent = [frames.receive(from_worker_r) for _ in range(4)]
    assert sent == [("SHAR", b""), ("UNLK", COMPILING), ("RSHR", b""), ("UNLK", b"")]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_the_candidates_own_compile_is_excused(registry):
    """The real path: the GPU worker compiles the candidate's kernel with its hold given back, and the driver
    keeps those seconds off the deadline (`compile_excused`, at most what the worker timed as `compile_unlocked`)."""
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.models import Status
    from tritongym.core.plugins import PluginHost
    from tritongym.core.problems import load_problem

    problem = load_problem("relu", "gpu")
    config = EvalConfig(backend="triton-cuda", size="gpu", use_cache=False, timeout_s=300)
    with Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False)) as evaluator:
        (result,) = evaluator.evaluate_many([(problem.solution, problem)])
    assert result.status == Status.ok, result.message
    excused, compiled = result.phases.get("compile_excused", 0.0), result.phases.get("compile_unlocked", 0.0)
    assert 0 < excused <= compiled + 0.5, result.phases  # the driver's clock and the worker's differ by frame latency
