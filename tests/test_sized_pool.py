"""A one-candidate `eval` starts only what it needs (issue 40 item 3): the pool's on-demand mode, run for real on
the CPU (Triton's interpreter), the triton-cuda backend's choice of shape, and the Evaluator's hints to its backend
(`Backend.size_to`, `Backend.warm_up`) as a recording backend sees them."""

from __future__ import annotations

import pytest

from tests.conftest import task_for
from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.models import Candidate
from tritongym.core.plugins import get_host
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
from tritongym.plugins.backends.triton_cuda import TritonCUDABackend


@pytest.fixture(scope="module")
def on_demand_pool():
    """One on-demand pool for the module (a pool's start is about 5 s of CPU): an on-demand pool keeps no worker
    between tasks, so each test counts the workers started from where it began (`started`)."""
    pool = WorkerPool(
        PoolOptions(gpus=["cpu"], workers_per_gpu=1, keepers_per_gpu=1, start_on_demand=True, memory_mb=4096)
    )
    yield pool
    pool.close()


def started(pool: WorkerPool, since: int = 0) -> int:
    """Workers `pool` started since it had started `since`."""
    return pool.workers_started - since


def live_workers(pool: WorkerPool) -> int:
    with pool._guard:
        return len(pool._live)


def test_an_on_demand_pool_starts_a_worker_per_announced_task_and_replaces_none(on_demand_pool, relu_problem):
    pool = on_demand_pool
    pool.keeper("cpu")  # the pool's start-up done (its keeper up; a worker the pool starts is counted as it starts)
    since = pool.workers_started
    assert live_workers(pool) == 0  # the keeper only, until work is announced
    pool.expect(2)  # a screen and a candidate: both start now, side by side
    assert started(pool, since) == 2
    for _ in range(2):
        evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
        assert evidence.error is None and evidence.stage == "done"
    assert started(pool, since) == 2  # each task had its announced worker: none started beside them
    assert live_workers(pool) == 0  # and none replaced the retired ones
    # a task nobody announced still gets a worker: started when it asks for one
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert evidence.error is None and started(pool, since) == 3 and live_workers(pool) == 0


def test_an_on_demand_pool_starts_the_retry_of_a_dead_worker(on_demand_pool, relu_problem):
    pool = on_demand_pool
    since = pool.workers_started
    pool.expect(1)
    evidence = pool.run(task_for(relu_problem, "import os\nos._exit(7)\n"), timeout_s=120)
    assert evidence.error.kind == "WorkerCrashed" and "retry" in evidence.error.message
    assert started(pool, since) == 2 and live_workers(pool) == 0  # the retry's worker, and nothing after it


def test_triton_cuda_sizes_a_one_candidate_pool_unless_told_otherwise():
    """No GPU is needed to see the shape the backend would start (`pool_shape`); the pool itself runs above."""
    stream = TritonCUDABackend()
    shape = stream.pool_shape(["0", "1"])
    assert shape["gpus"] == ["0", "1"] and "start_on_demand" not in shape
    assert shape["spare_workers_per_gpu"] == shape["workers_per_gpu"] // 2

    one = TritonCUDABackend()
    one.size_to(1)
    assert one.pool_shape(["0", "1"]) == {
        "gpus": ["0"],
        "workers_per_gpu": 1,
        "spare_workers_per_gpu": 0,
        "keepers_per_gpu": 1,
        "start_on_demand": True,
    }
    told = TritonCUDABackend.from_options({"workers_per_gpu": 3, "spare_workers_per_gpu": 2, "gpus": [1]})
    told.size_to(1)
    shape = told.pool_shape(["1"])
    assert (shape["workers_per_gpu"], shape["spare_workers_per_gpu"], shape["gpus"]) == (3, 2, ["1"])


RECORDING_BACKEND = '''
from tritongym import hookimpl
from tritongym.plugins.backends.triton_cpu import TritonCPUBackend


class RecordingBackend(TritonCPUBackend):
    """triton-cpu that records the hints it is given and the tasks it measures."""

    name = "recording-cpu"
    calls = []

    def size_to(self, tasks):
        self.calls.append(("size_to", tasks))

    def warm_up(self, tasks):
        self.calls.append(("warm_up", tasks))

    def measure(self, task, limits):
        self.calls.append(("measure", task.mode))
        return super().measure(task, limits)


@hookimpl
def register_backends(register):
    register(RecordingBackend)
'''


def test_the_evaluator_announces_each_task_before_it_measures_and_none_for_a_cached_verdict(tmp_path, relu_problem):
    plugin = tmp_path / "recording_backend.py"
    plugin.write_text(RECORDING_BACKEND)
    calls = get_host([str(plugin)]).get("backend", "recording-cpu").cls.calls
    config = EvalConfig(backend="recording-cpu", size="cpu", trials=2, timeout_s=60)
    registry = tmp_path / "registry.db"

    def evaluate(source: str):
        calls.clear()
        result = api.evaluate(Candidate(source=source), relu_problem, config, registry, [str(plugin)], pool="off")
        assert result.status.value == "ok", result.message
        return list(calls)

    first = evaluate(relu_problem.solution)
    # one candidate: the backend is sized to it; the candidate's worker is announced as soon as the registry has
    # no verdict, the screen's as soon as it is known to be missing, each before anything is measured
    assert first == [("size_to", 1), ("warm_up", 1), ("warm_up", 1), ("measure", "screen"), ("measure", "evaluate")]
    assert evaluate(relu_problem.solution) == [("size_to", 1)]  # cached: nothing started, nothing measured
    other = relu_problem.solution.replace("return out", "return out.view_as(x)")
    assert evaluate(other) == [("size_to", 1), ("warm_up", 1), ("measure", "evaluate")]  # the screen is stored


def test_a_screen_runs_in_the_keeper_and_no_worker_starts_for_it(on_demand_pool, relu_problem):
    """A screen runs the reference and the negative controls, no candidate code: the GPU's keeper runs it
    (`keeper/screen.py`), up before any worker, so nothing waits for a worker's start (a CUDA context and
    CUPTI's set-up) to screen a problem; the one worker started serves the candidate and retires as always."""
    pool = on_demand_pool
    since = pool.workers_started
    screen = pool.run(task_for(relu_problem, None, mode="screen"), timeout_s=120)
    assert screen.error is None, screen.error
    assert set(screen.controls) >= {"zeros", "other_seed_output"} and screen.stage == "done"  # the controls ran
    assert started(pool, since) == 0 and live_workers(pool) == 0
    pool.expect(1)
    candidate = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert candidate.error is None and candidate.stage == "done"
    assert started(pool, since) == 1
    assert live_workers(pool) == 0  # and retired after the candidate


def test_a_task_waiting_for_a_worker_has_its_reference_side_built_meanwhile(on_demand_pool, relu_problem):
    """With no worker ready, the keeper builds the task's record ahead (`task_driver.prepare_ahead`), so the task's
    own `PREP`, once a worker comes, finds it cached: a cold `eval` built it after its worker's start, not during
    it.  Once per problem: a problem built before is not built ahead again; nothing stays reserved or held."""
    from tritongym.core.sandbox.task_driver import prepare_ahead

    pool = on_demand_pool
    since = pool.workers_started
    task = task_for(relu_problem, relu_problem.solution).model_copy(  # a problem the module's pool never built
        update={"problem_source": relu_problem.source + "\n# built ahead\n"}
    )
    ahead = prepare_ahead(pool, task, 120, "cpu")
    assert ahead is not None and started(pool, since) == 0
    ahead.join(120)
    assert not ahead.is_alive() and not pool.ahead
    assert prepare_ahead(pool, task, 120, "cpu") is None  # built on this pool already
    assert all(b.reserved_mb == 0 for b in pool.memory.values())
    candidate = pool.run(task, timeout_s=120)
    assert candidate.error is None and candidate.stage == "done"
    assert candidate.flags["reference_cached"] is True and candidate.phases["reference"] == 0.0


def _most_starting_at_once(marks: list[dict]) -> int:
    starting, most = 0, 0
    for m in marks:
        if m["event"] == "worker_start":
            starting += 1
            most = max(most, starting)
        elif m["event"] == "worker_ready":
            starting -= 1
    return most


@pytest.mark.parametrize("limit", [None, 1])
def test_starts_at_once_limits_the_workers_starting_together(tmp_path, monkeypatch, limit):
    """`PoolOptions.starts_at_once`: with a limit, a pool's workers start a few at a time (on four H100s, 48 starting
    together made each CUDA context 3.4 s and the first worker ready at 26 s); without one, all together (the
    control: the marks do show starts overlapping)."""
    import time

    from tritongym.core import timeline

    marks_path = tmp_path / "marks"
    monkeypatch.setenv(timeline.ENV, str(marks_path))
    pool = WorkerPool(
        PoolOptions(gpus=["cpu"], workers_per_gpu=3, keepers_per_gpu=1, memory_mb=4096, starts_at_once=limit)
    )
    try:
        deadline = time.monotonic() + 180
        while sum(m["event"] == "worker_ready" for m in timeline.read(marks_path)) < 3:
            assert time.monotonic() < deadline, timeline.read(marks_path)  # a hang guard; the wait is on the marks
            time.sleep(0.05)
    finally:
        pool.close()
    most = _most_starting_at_once(timeline.read(marks_path))
    assert most == 1 if limit == 1 else most > 1
