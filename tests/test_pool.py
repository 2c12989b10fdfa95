"""The warm worker pool, run for real on the CPU (Triton's interpreter): lifecycle, retries, limits.

The GPU-only parts (timing, profiling) are in test_gpu.py; everything a pool does with processes is the
same code on either device and is checked here, in CI.  So is the GPU lock: its ordering (timers alone,
sharers together, a resumed hold ahead of a waiting timer) is plain threading, tested here on threads that
wait for one another to queue, and the worker's side of it (the frames a worker sends) on a pipe.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time

import pytest
import torch

from tests.conftest import RELU_KERNEL, settled, task_for, waits_in
from tritongym.core.errors import BackendUnavailable, ConfigError
from tritongym.core.models import Evidence
from tritongym.core.phases import not_seconds
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.sandbox.gpu_pool import GPULock, PoolOptions, WorkerPool


def frames_sent(fd: int) -> list[str]:
    """The kinds of the frames a worker's `Channel` has written to the pipe `fd` so far (the parent's side)."""
    import select

    from tritongym.core.worker import frames

    kinds = []
    while select.select([fd], [], [], 0)[0]:
        kinds.append(frames.receive(fd)[0])
    return kinds


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=2, memory_mb=4096))
    yield pool
    pool.close()


def test_solution_runs_and_outputs_are_compared_in_the_keeper(pool, relu_problem):
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert evidence.error is None and evidence.stage == "done"
    assert [t.late for t in evidence.trials] == [False, False, False, True]  # three trials, then the late one
    assert all(o.mismatched == 0 and o.device == o.ref_device for t in evidence.trials for o in t.outputs)
    assert any(rec.own for rec in evidence.trials[0].launches)
    # what the worker, the driver and the keeper measured, each kind in its home: seconds only in `phases` (the
    # driver's and the pool's writes into it are checked by no validator, so by this), the others beside them
    assert not_seconds(evidence.phases) == [] and Evidence.model_validate_json(evidence.model_dump_json())
    assert {"handout_requests", "yields"} <= set(evidence.counts) and "reference_cached" in evidence.flags
    assert {"reference_host_mb", "reference_peak_mb"} <= set(evidence.memory_mb)
    # the candidate's run split by stage, the parts within the whole
    parts = ["candidate_setup", "candidate_trials", "candidate_probes", "candidate_plugin_probes"]
    parts.append("candidate_extra_trials")
    assert all(evidence.phases[p] >= 0 for p in parts), evidence.phases
    assert sum(evidence.phases[p] for p in parts) <= evidence.phases["candidate"] + 1e-3


def test_busy_seconds_count_each_gpus_task_time(pool, relu_problem):
    before = pool.busy_seconds()["cpu"]
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    after = pool.busy_seconds()
    assert set(after) == {"cpu"} and after["cpu"] - before == pytest.approx(evidence.worker_s)


def test_wrong_output_is_seen(pool, relu_problem):
    wrong = relu_problem.solution.replace("return out", "return out * 2")
    evidence = pool.run(task_for(relu_problem, wrong), timeout_s=120)
    assert evidence.error is None
    assert any(o.mismatched for t in evidence.trials for o in t.outputs)


def test_dead_worker_is_retried_once_then_crashed(pool, relu_problem):
    evidence = pool.run(task_for(relu_problem, "import os\nos._exit(7)\n"), timeout_s=120)
    assert evidence.error.kind == "WorkerCrashed"
    assert "code 7" in evidence.error.message and "retry" in evidence.error.message
    # the pool replaced both workers and still serves
    assert pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120).error is None


def test_hang_is_a_timeout_and_the_pool_goes_on(pool, relu_problem):
    evidence = pool.run(task_for(relu_problem, "while True:\n    pass\n"), timeout_s=1)
    assert evidence.error.kind == "Timeout"
    assert "did not finish import and correctness trials within its time budget" in evidence.error.message
    assert pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120).error is None


SLOW_CALL_S = 0.05


def test_a_keeper_call_says_how_long_it_waited_behind_another_tasks_request(pool):
    """`keeper_queue_busy`, the part of a task's `keeper_queue` spent behind other tasks' requests to the same
    keeper (`KeeperProcess.waited_s`, per calling thread), apart from the relay through the pool: on two H200s the
    queue doubled against one GPU and nothing said which it was."""
    from tritongym.core.worker.protocol import KeeperRequest

    keeper = pool.keeper("cpu", 0)
    free = json.dumps({"task_id": "no-such-task"}).encode()
    assert keeper.call(KeeperRequest.FREE, free, 30.0)[0] and keeper.waited_s() < 0.2
    holding, held = threading.Event(), threading.Event()

    def another_task() -> None:  # holds the keeper as a long request of another task would
        with keeper.calls:
            holding.set()
            held.wait(0.4)

    thread = threading.Thread(target=another_task)
    thread.start()
    holding.wait(5)
    ok, _ = keeper.call(KeeperRequest.FREE, free, 30.0)
    thread.join()
    assert ok and keeper.waited_s() >= 0.3
    seen = []
    threading.Thread(target=lambda: seen.append(keeper.waited_s())).start()
    time.sleep(0.1)
    assert seen == [0.0]  # another thread's calls are its own


FLOOR_S = 1  # the configured floor: the candidate's calls alone (about 35, each SLOW_CALL_S) outlast it


def test_the_time_budget_grows_with_what_the_reference_costs(pool, relu_problem):
    """Issue 27 item 2: a problem whose reference takes seconds per call gives its candidates seconds per call
    too.  Here every forward (the reference's and the candidate's) sleeps; the candidate makes about as many
    calls as the keeper made for the reference, far more than the configured floor (`FLOOR_S`)
    allows."""
    slow_reference = relu_problem.source.replace(
        "return torch.relu(x)", f"__import__('time').sleep({SLOW_CALL_S})\n        return torch.relu(x)"
    )
    slow_candidate = relu_problem.solution.replace(
        "return out", f"__import__('time').sleep({SLOW_CALL_S})\n        return out"
    )
    assert slow_reference != relu_problem.source and slow_candidate != relu_problem.solution
    # a worker ready first (as after the module's earlier tests): a cold pool builds the record while the worker
    # starts (`prepare_ahead`), and then the task's own phases hold no reference build to measure
    assert pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120).error is None
    task = task_for(relu_problem, slow_candidate, seeds=[1, 2]).model_copy(update={"problem_source": slow_reference})
    evidence = pool.run(task, timeout_s=FLOOR_S)
    assert evidence.error is None and evidence.stage == "done", evidence.error
    assert evidence.phases["reference"] > 8 * SLOW_CALL_S  # the keeper's calls: trials, shape sets, probes
    # the keeper's own time says where its requests went: the slow build is work, not waiting (one task alone)
    assert evidence.phases["keeper_work"] >= evidence.phases["reference"]
    assert evidence.phases["keeper_queue"] < evidence.phases["keeper_work"] / 4
    assert 0.0 <= evidence.phases["keeper_queue_busy"] <= evidence.phases["keeper_queue"] + 1e-3
    assert evidence.worker_s > FLOOR_S  # past the floor, within the budget
    # a candidate that never finishes is still killed, at the grown budget (about six seconds here: it sleeps
    # through them, where test_hang_is_a_timeout_and_the_pool_goes_on spins through its one second)
    hang = task.model_copy(update={"candidate_source": "import time\n\ntime.sleep(600)\n"})
    evidence = pool.run(hang, timeout_s=FLOOR_S)
    assert evidence.error.kind == "Timeout" and "plus 6x the" in evidence.error.message, evidence.error


def test_resident_memory_is_watched(pool, relu_problem, monkeypatch):
    """The limit is read while the task runs (`TaskDriver`), so the module's pool serves with a lower one set."""
    monkeypatch.setattr(pool.options, "memory_mb", 1200)
    bomb = "import time\nblob = bytearray(3 << 30)\nblob[::4096] = b'x' * len(blob[::4096])\ntime.sleep(60)\n"
    evidence = pool.run(task_for(relu_problem, bomb), timeout_s=60)
    assert evidence.error.kind == "MemoryLimit", evidence.error
    assert "1200 MiB" in evidence.error.message


def test_garbage_on_the_worker_stdout_does_not_break_the_protocol(pool, relu_problem):
    noisy = "import sys, os\nprint('DONE' * 1000)\nos.write(1, b'REFO' + bytes(8))\n" + relu_problem.solution
    evidence = pool.run(task_for(relu_problem, noisy), timeout_s=120)
    assert evidence.error is None and evidence.stage == "done"
    assert "DONEDONE" in evidence.stdout_tail


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where CUDA cannot start")
def test_a_worker_that_cannot_start_is_backend_unavailable(relu_problem):
    broken = WorkerPool(PoolOptions(gpus=["0"], workers_per_gpu=1, start_timeout_s=60))
    try:
        with pytest.raises(BackendUnavailable, match="no GPU worker could start: GPU 0: "):
            broken.run(task_for(relu_problem, relu_problem.solution), timeout_s=30)
    finally:
        broken.close()


def test_gpus_option_refused_for_a_cpu_backend(fast_config):
    from tritongym.core.eval.evaluate import Evaluator

    with pytest.raises(ConfigError, match="--gpus applies to GPU backends"):
        Evaluator(fast_config.model_copy(update={"gpus": [0]}))


def test_a_forged_comparison_changes_nothing_the_keeper_judges(pool, relu_problem):
    """The comparison runs in the reference keeper, a process the candidate never ran in: replacing the
    worker's `compare_output` (which once judged outputs beside the candidate) leaves the verdict alone."""
    forger = relu_problem.solution.replace("return out", "return out * 2") + (
        "\n\nimport tritongym.core.measure.compare as _compare\n"
        "_real = _compare.compare_output\n"
        "_compare.compare_output = lambda i, out, ref, tol, *more: _real(i, ref, ref, tol)  # 'matches', always\n"
    )
    evidence = pool.run(task_for(relu_problem, forger), timeout_s=120)
    assert evidence.error is None
    # on the problem's own inputs a doubled ReLU is off wherever the input is positive (inputs scaled by 1e-3 put
    # the doubled values within atol)
    outputs = [o for t in evidence.trials if t.distribution in (None, "as_is") for o in t.outputs]
    assert outputs and all(o.mismatched > o.numel // 4 for o in outputs)


def test_the_keeper_builds_a_problems_reference_once_for_all_its_candidates(pool):
    silu_problem = load_problem("silu")
    """Issue 27 item 3: the second candidate of a problem (same shapes, seeds, precision) reuses the keeper's
    record: its reference phase is free, and it is judged exactly as the first."""
    first = pool.run(task_for(silu_problem, silu_problem.solution, seeds=[7, 8]), timeout_s=120)
    wrong = silu_problem.solution.replace("return out", "return out + 1")
    second = pool.run(task_for(silu_problem, wrong, seeds=[7, 8]), timeout_s=120)
    third = pool.run(task_for(silu_problem, silu_problem.solution, seeds=[7, 8]), timeout_s=120)
    assert first.flags["reference_cached"] is False and first.phases["reference"] > 0
    assert second.flags["reference_cached"] is True and third.flags["reference_cached"] is True
    assert all(o.mismatched == 0 for e in (first, third) for t in e.trials for o in t.outputs)
    assert all(o.mismatched > 0 for t in second.trials for o in t.outputs)
    other_seeds = pool.run(task_for(silu_problem, silu_problem.solution, seeds=[9, 10]), timeout_s=120)
    assert other_seeds.flags["reference_cached"] is False  # other seeds, other answers: built again


def test_outputs_of_the_wrong_shape_or_kind_are_judged_from_their_description(pool, relu_problem):
    """Only outputs that match the reference's shape and dtype are lent a handout; the others reach the
    keeper as a description, and the verdict still names what was wrong with them."""
    flat = relu_problem.solution.replace("return out", "return out.reshape(-1)")
    evidence = pool.run(task_for(relu_problem, flat), timeout_s=120)
    first = evidence.trials[0].outputs[0]
    assert first.shape == [first.numel] and first.ref_shape != first.shape and first.device == "cpu"
    double = relu_problem.solution.replace("return out", "return out.double()")
    evidence = pool.run(task_for(relu_problem, double), timeout_s=120)
    assert evidence.trials[0].outputs[0].dtype == "torch.float64"
    listed = relu_problem.solution.replace("return out", "return out.tolist()")
    evidence = pool.run(task_for(relu_problem, listed), timeout_s=120)
    assert not evidence.trials[0].outputs[0].is_tensor


def test_a_reference_that_fails_is_the_problems_error_from_the_keeper(pool, relu_problem):
    broken = relu_problem.source.replace("return torch.relu(x)", "raise ValueError('no reference today')")
    assert broken != relu_problem.source
    task = task_for(relu_problem, relu_problem.solution).model_copy(update={"problem_source": broken})
    evidence = pool.run(task, timeout_s=120)
    assert evidence.stage == "problem" and "no reference today" in evidence.error.message


def test_a_dead_keeper_is_replaced_and_the_task_retried(pool, relu_problem):
    first = pool.keeper("cpu")
    os.kill(first.pid, 9)
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert evidence.error is None and evidence.stage == "done"
    assert pool.keeper("cpu") is not first


def test_workers_are_forked_warm_from_the_zygote_or_spawned_without_it(pool, relu_problem):
    worker = pool._take()  # a ready worker, forked by the zygote: no process of its own to spawn
    try:
        assert worker.proc is None and worker.zygote is pool.zygote and worker.info["startup_s"] < 30
    finally:
        pool.ready.put(worker)
    plain = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, use_zygote=False))
    try:
        evidence = plain.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
        assert evidence.error is None and evidence.stage == "done"
    finally:
        plain.close()


def test_the_zygote_takes_a_launchers_request_without_forking_and_forks_on(pool, relu_problem):
    """The pool passes what a worker reported launching to its fork server (`triton_cache.build_launchers`): a
    request that forks nothing and is not answered, however malformed, and the next fork is unaffected."""
    pool.zygote.build_launchers([["*fp32", "*fp32", "i32", "constexpr"], ["not a type"], "junk"])
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert evidence.error is None and evidence.stage == "done"
    assert evidence.launchers == []  # Triton's interpreter compiles no launcher on the CPU
    assert not pool.zygote.dead


class WatchedCondition(threading.Condition):
    """The GPU lock's condition, remembering which threads have blocked in it, so a test waits for a thread
    to be queued in the lock instead of sleeping and hoping.  Only a thread's first block notifies (waiters
    recheck their predicates and block again silently), so the watch cannot wake waiters back and forth."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked: set[threading.Thread] = set()
        self.events: list[str] = []

    def wait(self, timeout: float | None = None) -> bool:
        me = threading.current_thread()
        if me not in self.blocked:
            self.blocked.add(me)
            self.notify_all()
        return super().wait(timeout)

    def note(self, event: str) -> None:
        with self:
            self.events.append(event)
            self.notify_all()

    def until(self, predicate, what: str) -> None:
        """Block until `predicate()` holds (checked under the lock), failing the test after 5 s."""
        with self:
            assert self.wait_for(predicate, timeout=5), f"5 s passed and {what} did not happen: {self.events}"


def watched_lock() -> tuple[GPULock, WatchedCondition]:
    lock, cond = GPULock(), WatchedCondition()
    lock.cond = cond  # before any thread uses it
    return lock, cond


def start(target, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)  # a failed test leaves none hanging
    thread.start()
    return thread


def test_gpu_lock_lets_correctness_work_share_and_gives_timing_the_gpu_alone():
    lock, cond = watched_lock()
    events = cond.events
    lock.acquire(exclusive=False)
    lock.acquire(exclusive=False)  # two workers' correctness trials at once

    def timer():
        lock.acquire(exclusive=True)
        cond.note("timing")
        lock.release(exclusive=True)

    def late_sharer():
        lock.acquire(exclusive=False)
        cond.note("late sharer")
        lock.release(exclusive=False)

    t = start(timer, "timer")
    cond.until(lambda: t in cond.blocked or events, "the timer queueing behind the two sharers")
    late = start(late_sharer, "late sharer")
    cond.until(lambda: late in cond.blocked or events, "the late sharer queueing behind the timer")
    assert events == []  # the timer waits for the sharers; the late sharer waits behind the timer
    lock.release(exclusive=False)
    lock.release(exclusive=False)
    t.join(5)
    late.join(5)
    assert events == ["timing", "late sharer"]


def test_a_timing_window_admits_sharers_until_it_passes_then_one_drain_serves_every_waiting_timer():
    """`TimingOptions.timing_window_s`: a timer first waits with sharers still admitted, timers arriving meanwhile
    queue behind it, and once its window has passed new sharers are held back until every waiting timer has
    run: one drain of the GPU for both timings (without a window, each timer drains the GPU on arrival)."""
    lock, cond = watched_lock()
    events = cond.events
    lock.acquire(exclusive=False)  # a worker's correctness trials

    def timer(label: str, window_s: float):
        def run() -> None:
            lock.acquire(exclusive=True, window_s=window_s)
            cond.note(label)
            lock.release(exclusive=True)

        return run

    def sharer():
        lock.acquire(exclusive=False)
        cond.note("late sharer")
        lock.release(exclusive=False)

    first = start(timer("timing a", 0.5), "timer a")
    cond.until(lambda: first in cond.blocked, "timer a waiting in its window")
    lock.acquire(exclusive=False)  # within the window a new sharer still gets in, without waiting
    assert not lock.holding_back
    second = start(timer("timing b", 30.0), "timer b")  # its own window is long: it goes with a's drain
    cond.until(lambda: second in cond.blocked, "timer b queueing")
    cond.until(lambda: lock.holding_back, "a's window passing")
    late = start(sharer, "late sharer")
    cond.until(lambda: late in cond.blocked, "the late sharer held back")
    assert events == []
    lock.release(exclusive=False)
    lock.release(exclusive=False)
    for thread in (first, second, late):
        thread.join(5)
    assert sorted(events[:2]) == ["timing a", "timing b"] and events[2:] == ["late sharer"]  # timers in any order
    assert lock.exclusive_grants == 2 and not lock.holding_back


def test_a_resumed_shared_hold_goes_ahead_of_a_waiting_timer_but_not_a_running_one():
    lock, cond = watched_lock()
    events = cond.events
    lock.acquire(exclusive=False)  # another worker's correctness trials
    second: list[threading.Thread] = []  # the thread of the resume that comes while the timing runs

    def timer():
        lock.acquire(exclusive=True)
        with cond:
            cond.note("timing")
            # hold the GPU until the second resume has queued behind this running timing (or got in)
            cond.wait_for(lambda: (second and second[0] in cond.blocked) or "resumed after timing" in events, 5)
        cond.note("timing done")
        lock.release(exclusive=True)

    def resume(label: str):
        def hold() -> None:
            lock.acquire(exclusive=False, resume=True)
            cond.note(label)
            lock.release(exclusive=False)

        return hold

    t = start(timer, "timer")
    cond.until(lambda: t in cond.blocked, "the timer queueing behind the sharer")
    first = start(resume("resumed"), "first resume")  # back from compiling: not queued behind the waiting timer
    cond.until(lambda: events or first in cond.blocked, "the first resume getting in or queueing")
    assert events == ["resumed"], "a resumed hold must not queue behind a timer that is only waiting"
    first.join(5)
    lock.release(exclusive=False)  # the timer runs now; a resume waits for it to finish
    cond.until(lambda: "timing" in events, "the timing starting")
    with cond:  # registered before it starts, so the timer's wait sees it once it blocks
        second.append(threading.Thread(target=resume("resumed after timing"), name="second resume", daemon=True))
    second[0].start()
    t.join(5)
    second[0].join(5)
    assert events == ["resumed", "timing", "timing done", "resumed after timing"]


def test_a_worker_gives_the_shared_gpu_back_while_triton_compiles(monkeypatch):
    """Compiling is CPU work: a timing on the same GPU must not wait for it (the lock is retaken after,
    even when the compiler fails); an exclusive hold is never split."""
    import os

    import triton.compiler

    from tritongym.core.worker import frames
    from tritongym.core.worker.gpu_worker import Channel, release_gpu_while_compiling

    monkeypatch.setattr(triton.compiler, "compile", triton.compiler.compile)  # restored after the test
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    channel = Channel(to_worker_r, from_worker_w)
    channel.unlock_compiles = True  # TimingOptions(unlock_compiles=True)
    release_gpu_while_compiling(channel)
    release_gpu_while_compiling(channel)  # idempotent: one wrapper, not two
    assert triton.compiler.compile._tritongym_channel is channel

    def sent() -> list[str]:
        return frames_sent(from_worker_r)

    for _ in range(2):
        frames.send(to_worker_w, "GRNT")  # the parent's grants, queued ahead
    with channel.gpu(exclusive=False):
        with pytest.raises(Exception):  # noqa: B017 - Triton's own error for a source that is not a kernel
            triton.compiler.compile("not a kernel source")
        assert channel.holding == "shared"
    assert sent() == ["SHAR", "UNLK", "RSHR", "UNLK"]  # the hold is resumed ahead of waiting timers
    assert channel.compile_s > 0

    channel.unlock_compiles = False  # off: the hold is kept
    frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=False):
        with pytest.raises(Exception):  # noqa: B017
            triton.compiler.compile("not a kernel source")
    assert sent() == ["SHAR", "UNLK"]
    channel.unlock_compiles = True

    frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=True):
        with pytest.raises(Exception):  # noqa: B017
            triton.compiler.compile("not a kernel source")
        assert channel.holding == "exclusive"
    assert sent() == ["LOCK", "UNLK"]


def test_a_killed_workers_channel_is_never_written_again(tmp_path):
    """Issue 15: the descriptor number of a killed worker's channel is the next file's; an `EXIT` sent to the
    retired worker landed in a registry opened meanwhile (its WAL overwritten, the registry read as empty)."""
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        pool.keeper("cpu")  # started in the background: its descriptors are taken before the test's
        worker = pool._take()
        number = worker.write_fd
        worker.kill()
        assert not worker.reader.is_alive()
        fillers = []  # lower numbers other threads freed meanwhile (the keeper's start): taken, so the next is ours
        while (fd := os.open(os.devnull, os.O_RDONLY)) < number:
            fillers.append(fd)
        os.close(fd)
        registry = Registry(tmp_path / "registry.db")
        for fd in fillers:
            os.close(fd)
        files = {int(fd): os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")}
        assert files.get(number, "").startswith(str(tmp_path)), "the registry should have taken the freed number"
        assert worker.send("EXIT") is False
        assert (tmp_path / "registry.db").read_bytes()[:16] == b"SQLite format 3\x00"
        assert Registry(tmp_path / "registry.db").lookup("p", "k", "triton-cpu", "cpu", "x") is None
        registry.close()
    finally:
        pool.close()


def test_a_reference_slower_than_its_limit_is_the_problems_timeout(pool, relu_problem, monkeypatch):
    """The reference's side has a limit of its own (`TaskDriver.REFERENCE_LIMIT_S`, 30 minutes; 3 s here): past
    it the problem is at fault, named so, and the next task gets a fresh keeper."""
    from tritongym.core.sandbox.gpu_pool import TaskDriver

    monkeypatch.setattr(TaskDriver, "REFERENCE_LIMIT_S", 3.0)
    endless = relu_problem.source.replace("return torch.relu(x)", "__import__('time').sleep(60)")
    hung = pool.keeper("cpu")
    task = task_for(relu_problem, relu_problem.solution).model_copy(update={"problem_source": endless})
    evidence = pool.run(task, timeout_s=60)
    assert evidence.stage == "problem" and evidence.error.kind == "Timeout"
    assert "the reference did not build its outputs, gold and probes within 3 s" in evidence.error.message
    assert pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120).error is None
    assert pool.keeper("cpu") is not hung


def test_gpu_memory_is_admitted_from_measured_need():
    """Issue 27 item 1: workers are admitted while the needs granted fit; a need beyond the GPU's budget waits
    for the GPU to be idle and then has all of it, alone.  A reservation that does not fit is seen waiting in
    `reserve` (not granted, nothing added), stays waiting while another that fits goes ahead, and is granted by
    the release that makes room."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    budget = MemoryBudget(100.0)
    assert budget.reserve(60.0) == 60.0
    order: list[str] = []

    def take(name: str, need: float) -> None:
        granted = budget.reserve(need)
        order.append(f"{name}:{granted:g}")

    second = start(lambda: take("fits-after", 50.0), "fits-after")
    waits_in(budget, 1, "the 50 MiB reservation beside 60 of 100")
    assert order == [] and budget.reserved_mb == 60.0 and budget.holders == 1  # waiting: nothing granted
    assert budget.reserve(40.0) == 40.0  # 60 + 40 fits at once, beside the first
    with budget.cond:
        assert budget.waiting == 1 and budget.reserved_mb == 100.0  # 100 + 50 does not fit: still waiting
    budget.release(60.0)
    second.join(timeout=30)  # a hang guard: the release above is what wakes it
    assert order == ["fits-after:50"] and budget.reserved_mb == 90.0  # woken by the release: 40 + 50 fit
    assert budget.waiting == 0 and budget.peak_mb == 100.0


def test_a_need_beyond_the_gpu_runs_alone():
    """A need over the budget waits for an idle GPU, nobody new goes ahead of it meanwhile (even a need that fits),
    and it then runs with the whole budget and nobody beside it; each wait seen on the budget's state."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    budget = MemoryBudget(100.0)
    first = budget.reserve(30.0)
    granted: list[float] = []
    alone = start(lambda: granted.append(budget.reserve(500.0)), "alone")
    waits_in(budget, 1, "the need beyond the GPU", alone=1)  # 30 is held: the GPU is not idle
    small = start(lambda: granted.append(budget.reserve(10.0)), "small")
    waits_in(budget, 2, "the small need", alone=1)  # 30 + 10 fits, but nobody goes ahead of the one waiting
    assert not granted and budget.reserved_mb == 30.0
    budget.release(first)
    alone.join(timeout=30)  # a hang guard: the release above is what wakes it
    assert granted == [100.0] and budget.holders == 1  # all of it, and nobody beside it
    waits_in(budget, 1, "the small need, while the large one runs")  # even 10 MiB waits while the large one runs
    assert granted == [100.0]
    budget.release(100.0)
    small.join(timeout=30)
    assert granted == [100.0, 10.0] and budget.waiting == 0


def test_a_worker_steps_aside_between_calls_for_the_waiting_timing_not_for_the_whole_queue():
    """`TimingOptions.yield_between_calls` / `yield_to_waiting_timings`: after a correctness call (handed out,
    synchronised) the worker sends `YILD`; the parent gives its shared hold back and grants it again once the timing
    that waited has had the GPU (`GPULock.step_aside`): not before it (it would never see the GPU free), and not
    behind every timer queued after it (a plain `SHAR` waited for the whole queue: 228 s against 105 s for 64 RL
    candidates on an H100)."""
    import os

    from tritongym.core.worker import frames
    from tritongym.core.worker.gpu_worker import Channel

    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    channel = Channel(to_worker_r, from_worker_w)

    def sent() -> list[str]:
        return frames_sent(from_worker_r)

    frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=False):
        channel.yield_hold()  # off (the default): the hold is kept
    assert sent() == ["SHAR", "UNLK"]
    channel.yield_calls = True
    for _ in range(2):
        frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=False):
        channel.yield_hold()
        assert channel.holding == "shared"
    assert sent() == ["SHAR", "YILD", "UNLK"] and channel.yields == 1
    with channel.gpu(exclusive=True, needed=False):
        channel.yield_hold()  # nothing held: nothing to give back
    assert sent() == []

    # what the parent does with YILD (`GPULock.step_aside`)
    lock, cond = watched_lock()
    events = cond.events
    lock.acquire(exclusive=False)  # the worker that will step aside
    lock.step_aside()  # no timer waits: taken again at once
    assert lock.readers == 1 and events == []
    lock.acquire(exclusive=False, holder="reference")  # another sharer, mid-call
    first_done = threading.Event()

    def first_timer():
        lock.acquire(exclusive=True)
        cond.note("timing 1")
        first_done.wait(5)
        lock.release(exclusive=True)

    t1 = start(first_timer, "timer 1")
    cond.until(lambda: lock.holding_back, "timer 1 holding new sharers back")
    with cond:
        lock.waiting_writers += 1  # a second timer queued behind the first (never granted here)

    def step_aside():
        lock.step_aside()
        cond.note("next call")

    sharer = start(step_aside, "sharer")
    cond.until(lambda: sharer in cond.blocked, "the sharer waiting for timer 1")
    assert events == []  # timer 1 still waits for the other sharer's call
    lock.release(exclusive=False, holder="reference")
    cond.until(lambda: "timing 1" in events, "timer 1 getting the GPU")
    assert events == ["timing 1"]  # the sharer does not go back in while the timing runs
    first_done.set()
    cond.until(lambda: "next call" in events, "the sharer's next call")
    assert lock.waiting_writers == 1 and lock.holding_back  # though the second timer still waits
    sharer.join(5)
    t1.join(5)


def test_a_sharer_gives_its_hold_back_between_calls_only_while_a_timing_waits():
    """`TimingOptions.yield_to_waiting_timings`: the lock sets a byte the workers map (`timing_flag.py`) while it
    holds new sharers back for a timing; the worker reads it after each call and gives its hold back then only.
    The worker opens the flag by the pool's /proc path, in another process here (the worker is the zygote's
    child, not the pool's), so the path must work from outside."""
    import os
    import subprocess
    import sys
    import time

    from tritongym.core.sandbox.gpu_pool import GPULock
    from tritongym.core.worker import frames
    from tritongym.core.worker.gpu_worker import Channel
    from tritongym.core.worker.timing_flag import TimingFlag, TimingWaits

    flag = TimingFlag()
    lock = GPULock(flag)
    waits = TimingWaits(flag.path)
    probe = (
        "import sys, time; from tritongym.core.worker.timing_flag import TimingWaits; w = TimingWaits(sys.argv[1]);"
        "print(w._map is not None, bool(w))"
    )

    def seen_elsewhere() -> str:
        return subprocess.run([sys.executable, "-c", probe, flag.path], capture_output=True, text=True).stdout.strip()

    lock.acquire(exclusive=False)
    assert not waits and seen_elsewhere() == "True False"
    timer = threading.Thread(target=lambda: (lock.acquire(exclusive=True), lock.release(True)))
    timer.start()
    deadline = time.monotonic() + 5
    while not waits and time.monotonic() < deadline:
        time.sleep(0.01)
    assert waits and seen_elsewhere() == "True True"  # a timing waits for this sharer

    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    channel = Channel(to_worker_r, from_worker_w)
    channel.timing_waits = waits
    channel.yield_to_timings = True

    def sent() -> list[str]:
        return frames_sent(from_worker_r)

    for _ in range(2):
        frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=False):
        channel.yield_hold()  # a timing waits: step aside for it
    assert sent() == ["SHAR", "YILD", "UNLK"] and channel.yields == 1

    lock.release(exclusive=False)  # what that UNLK does in the parent: the timing runs, and the flag clears
    timer.join(timeout=5)
    assert not timer.is_alive() and not waits and seen_elsewhere() == "True False"
    frames.send(to_worker_w, "GRNT")
    with channel.gpu(exclusive=False):
        channel.yield_hold()  # nobody waits: the hold is kept, no round trip
    assert sent() == ["SHAR", "UNLK"] and channel.yields == 1
    assert not TimingWaits(None) and not TimingWaits("/nonexistent/flag")  # no flag: never yields
    flag.close()


@contextlib.contextmanager
def gpu_budget(pool: WorkerPool, budget):
    """`budget` (a `MemoryBudget`) standing for the module pool's GPU budget meanwhile (the CPU has none), 8000 MiB
    of GPU; the pool as it was afterwards, for the module's next tests."""
    saved = {name: dict(getattr(pool, name)) for name in ("memory", "total_mb")}
    pool.keeper("cpu")  # up first: a keeper's start is where a GPU pool learns its GPU's size
    pool.memory["cpu"], pool.total_mb["cpu"] = budget, 8000.0
    try:
        yield budget
    finally:
        # the keeper's FREE runs after the task's answer (in the background): a count it gives back to a budget
        # already put away would stay in `device_records`, and the module's next test would find it there
        settled(budget)
        for name, was in saved.items():
            getattr(pool, name).clear()
            getattr(pool, name).update(was)


def test_a_screen_that_ran_out_of_memory_is_run_again_alone(pool, tmp_path):
    """A screen's memory is not measured before it runs (no keeper built its reference), so screens of large
    problems running side by side can run out of GPU memory (the level-1 sweep at --jobs 6: 48 of 73 problems).
    One that does is run once more with the GPU alone; here the reference runs out of memory the first time only
    (a marker file), as beside other work."""
    marker = tmp_path / "ran-once"
    source = f"""
import json
import os
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if not os.path.exists({str(marker)!r}):
            open({str(marker)!r}, "w").close()
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB.")
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
"""
    problem = load_problem("relu")
    task = task_for(problem, None, mode="screen").model_copy(update={"problem_source": source, "sizes": {}})
    evidence = pool.run(task, timeout_s=120)
    assert marker.exists()
    assert evidence.error is None, evidence.error


def test_the_drift_check_is_answered_once_inside_the_workers_exclusive_hold(pool, relu_problem):
    """The worker asks for the reference's drift check (`RCHK`) inside its exclusive timing hold: the parent runs
    it on the keeper under that hold (no exclusive grant of its own, so no second drain of the GPU's sharers),
    only for a candidate told TIME, and once; `TIMD` then asks nothing more.  A worker that did not ask gets
    the check after `TIMD` under an exclusive hold of its own.  Real pool, keeper and driver; on the CPU the
    keeper has no timer, so its answer is a failure and the task goes on without a drift check, as before."""
    import json
    import time

    from tritongym.core.models import TimingReport
    from tritongym.core.sandbox.gpu_pool import TaskDriver
    from tritongym.core.worker import frames

    lock = pool.locks["cpu"]
    timd = frames.tensors_to_bytes(
        {"timing": TimingReport(precision="ieee").model_dump_json(), "pr": None, "profile": "[]", "timed": []}
    )
    worker = pool._take()
    drivers = []
    try:
        for early in (True, False):
            driver = TaskDriver(pool, worker, task_for(relu_problem, relu_problem.solution), timeout_s=60)
            drivers.append(driver)
            driver.deadline = time.monotonic() + 60
            driver.keeper = pool.keeper_for("cpu", driver.task)
            assert driver._prepare() is None
            driver.candidate_seen = True
            if early:
                with pytest.raises(ValueError, match="RCHK before the candidate was told TIME"):
                    driver._handle("RCHK", b"")
                driver.told_time = True  # what a CAND judged correct sets
                with pytest.raises(ValueError, match="RCHK without holding the GPU exclusively"):
                    driver._handle("RCHK", b"")
                driver._acquire(exclusive=True)  # the worker's LOCK
                with pytest.raises(ValueError, match="RCHK carries no payload"):
                    driver._handle("RCHK", b"numbers")
                grants, keeper_s = lock.exclusive_grants, driver.keeper_work_s + driver.keeper_queue_s
                driver._handle("RCHK", b"")
                assert driver.drift_checked and driver.phase == "timing"
                assert driver.holding == "exclusive" and lock.exclusive_grants == grants  # the worker's hold, kept
                assert driver.keeper_work_s + driver.keeper_queue_s > keeper_s  # counted as keeper time
                with pytest.raises(ValueError, match="RCHK after the reference's drift check was already done"):
                    driver._handle("RCHK", b"")
                driver._release()  # the worker's UNLK
            grants = lock.exclusive_grants
            driver._handle("TIMD", timd)
            assert driver.drift_checked and driver.timing is not None and driver.timing.reference_after is None
            assert lock.exclusive_grants == grants + (0 if early else 1)  # the fallback's hold of its own
            assert driver.holding is None
            with pytest.raises(ValueError, match="RCHK before the candidate was told TIME" if not early else "done"):
                driver._handle("RCHK", b"")
    finally:
        for driver in drivers:
            driver._release()
            driver.keeper.call("FREE", json.dumps({"task_id": driver.task_id}).encode(), 60.0)
        pool._retire(worker)  # it was sent RCHD while waiting for a task: not a worker to hand on


def test_a_keeper_that_fails_to_judge_is_the_infrastructures_failure_and_retried(pool, relu_problem, monkeypatch):
    """A keeper answering `FAIL` to a request about the candidate's outputs (on the H100: `CMPT` out of memory
    beside a worker holding most of the GPU) is the keeper's failure: retried (alone, had it been memory), never
    "the worker sent a malformed frame", a crash charged to the candidate.  Here the keeper forgets the task
    (`FREE`) right after preparing it, on the first attempt only, so its `CMPR` fails for real."""
    from tritongym.core.sandbox import gpu_pool

    prepare = gpu_pool.TaskDriver._prepare
    forgotten: list[str] = []

    def prepare_then_forget(self):
        failed = prepare(self)
        if not forgotten:
            forgotten.append(self.task_id)
            self.keeper.call("FREE", json.dumps({"task_id": self.task_id}).encode(), 60.0)
        return failed

    monkeypatch.setattr(gpu_pool.TaskDriver, "_prepare", prepare_then_forget)
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert len(forgotten) == 1  # the first attempt's CMPR failed; the retry ran
    assert evidence.error is None and evidence.stage == "done", evidence.error


def test_a_candidate_that_ran_out_of_gpu_memory_beside_others_is_run_again_alone(pool, tmp_path):
    """The pool sizes a candidate's worker from its reference's forward (`TaskDriver.worker_need_mb`) and caps
    its allocator there; one that runs out of memory anyway is run once more with the GPU alone before the
    failure is the candidate's.  Here the candidate runs out the first time only (a marker file), as beside
    other work; a memory budget stands for the GPU's (the CPU has none)."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    marker = tmp_path / "ran-once"
    hungry = RELU_KERNEL.replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n"
        f"        import os\n\n        if not os.path.exists({str(marker)!r}):\n"
        f"            open({str(marker)!r}, 'w').close()\n"
        "            raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 6.00 GiB.')\n",
    )
    relu = load_problem("relu")
    with gpu_budget(pool, MemoryBudget(8000.0)) as budget:
        evidence = pool.run(task_for(relu, hungry), timeout_s=120)
        assert marker.exists()
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert evidence.flags.get("ran_alone") is True  # a batch's summed flags count such runs
        assert settled(budget).reserved_mb == 0.0 and budget.holders == 0
        # out of memory alone too: the candidate's own failure, once retried
        marker.unlink()
        always = hungry.replace(f"if not os.path.exists({str(marker)!r}):", "if True:")
        failed = pool.run(task_for(relu, always, seeds=[4, 5]), timeout_s=120)
        assert failed.error is not None and "out of memory" in failed.error.message.lower()


def test_a_reference_that_ran_out_of_gpu_memory_beside_others_is_built_again_alone(pool, tmp_path):
    """The reference's side is the problem's, but running out of memory beside other work is not: on the H100
    three full-size level-1 problems started together each ran out (the keeper's build, a worker's copy of the
    reference, a screen) beside the others' 16-49 GiB, and the sweep called them problem errors ("do not fit
    this GPU").  Such a task runs once more with the GPU alone, from the keeper's build on; only out of memory
    alone is the problem's error.  Here the reference runs out the first time only (a marker file); a memory
    budget stands for the GPU's (the CPU has none)."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    marker = tmp_path / "ran-once"
    relu = load_problem("relu")
    source = relu.source.replace(
        "        return torch.relu(x)",
        f"        import os\n\n        if x.device.type != 'meta' and not os.path.exists({str(marker)!r}):\n"
        f"            open({str(marker)!r}, 'w').close()\n"
        "            raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 6.00 GiB.')\n"
        "        return torch.relu(x)",
    )
    assert source != relu.source
    with gpu_budget(pool, MemoryBudget(8000.0)) as budget:
        evidence = pool.run(task_for(relu, relu.solution).model_copy(update={"problem_source": source}), timeout_s=120)
        assert marker.exists()
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert evidence.flags.get("ran_alone") is True  # a batch's summed flags count such runs
        assert settled(budget).reserved_mb == 0.0 and budget.holders == 0
        # out of memory alone too: the problem's error, once retried
        always = source.replace(f"if x.device.type != 'meta' and not os.path.exists({str(marker)!r}):", "if True:")
        failed = pool.run(
            task_for(relu, relu.solution, seeds=[4, 5]).model_copy(update={"problem_source": always}), timeout_s=120
        )
        assert failed.error is not None and failed.stage == "problem", failed.error
        assert "out of memory" in failed.error.message.lower()
        assert settled(budget).reserved_mb == 0.0 and budget.holders == 0


def test_a_retired_workers_gpu_memory_is_released_only_once_its_process_is_gone(pool, monkeypatch):
    """A task's GPU reservation used to go back when the task ended, before its worker was killed: the next task
    then allocated beside a dying process still holding its GiBs (full-size problems at `--jobs 4` on the H100
    ran out of memory beside processes no reservation stood for).  Now the pool retires the worker, waits for
    its process to be gone, and only then releases what it held."""

    from tritongym.core.sandbox.gpu_pool import MemoryBudget, TaskDriver

    events: list = []
    retired: list[int] = []

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(") ")[-1][:1] != "Z"
        except OSError:
            return False

    class Watching(MemoryBudget):
        def release(self, granted_mb: float) -> None:
            if granted_mb >= TaskDriver.WORKER_SLACK_MB:  # a worker's grant, not the keeper's few MiB for its record
                events.append(("release", [alive(pid) for pid in retired]))
            super().release(granted_mb)

    relu = load_problem("relu")
    retire = pool._retire

    def watched_retire(worker, replace: bool = True) -> None:
        retired.append(worker.pid)
        events.append(("retire", worker.pid))
        retire(worker, replace)

    monkeypatch.setattr(pool, "_retire", watched_retire)
    with gpu_budget(pool, Watching(8000.0)) as budget:
        evidence = pool.run(task_for(relu, relu.solution), timeout_s=120)
        assert evidence.error is None, evidence.error
        assert settled(budget).reserved_mb == 0.0 and budget.holders == 0  # given back in the background
        assert [kind for kind, _ in events][-2:] == ["retire", "release"], events  # the worker's grant last
        assert events[-1][1] == [False], events  # and by then its process was gone


def test_a_verdict_goes_back_before_its_retired_worker_is_gone_and_the_grant_after(pool, monkeypatch):
    """Waiting for a retired worker's death was 0.1 s of every warm `eval` on an H200, and only the memory needs it:
    the task is answered at once, and its worker's end is awaited in the background (`gpu_pool._end_in_background`),
    its GPU grant given back after that, to the budget it came from.  Here the worker's end is held back until the
    test lets it go: the verdict is back meanwhile, the grant still held."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget, TaskDriver
    from tritongym.core.sandbox.processes import Worker

    let_go = threading.Event()
    wait_gone = Worker.wait_gone

    def held_back(self, timeout: float = 30.0) -> None:
        let_go.wait(60)
        wait_gone(self, timeout)

    monkeypatch.setattr(Worker, "wait_gone", held_back)
    relu = load_problem("relu")
    with gpu_budget(pool, MemoryBudget(8000.0)) as budget:
        try:
            evidence = pool.run(task_for(relu, relu.solution, seeds=[31, 32]), timeout_s=120)
            assert evidence.error is None and evidence.stage == "done", evidence.error
            assert pool.finishing == 1 and budget.reserved_mb >= TaskDriver.WORKER_SLACK_MB  # answered, grant held
        finally:
            let_go.set()
        assert settled(budget).reserved_mb == 0.0 and budget.holders == 0
        with pool._guard:
            assert pool.finished.wait_for(lambda: pool.finishing == 0, 30)


def test_a_lone_task_waits_for_the_workers_of_tasks_answered_before_it(pool):
    """A task alone in its pool reserves the whole GPU rather than weighing its problem (`TaskMemory._alone_in_pool`);
    a task answered a moment before may still be giving its worker's memory back, and the lone check waits for that
    (notified as each ends) rather than calling the GPU busy: an `eval` right after another is still alone.  The
    module's pool, with one answered task's end still to come."""
    from tritongym.core.sandbox.admission import MemoryBudget, TaskMemory

    class LoneCheck(TaskMemory):  # the check alone, on the real pool: no task around it
        def __init__(self, pool) -> None:
            self.pool = pool

    budget = MemoryBudget(8000.0)
    held = budget.reserve(3000.0)  # the answered task's worker, not yet gone
    with pool._guard:
        assert pool.finishing == 0 and pool.tasks_in_flight == 0
        pool.finishing = 1
    answers: list[bool] = []
    lone = start(lambda: answers.append(LoneCheck(pool)._alone_in_pool(budget)), "lone check")
    try:
        lone.join(0.3)
        assert lone.is_alive() and not answers  # waiting for the worker's end, not answering "busy"
        budget.release(held)
    finally:
        with pool._guard:
            pool.finishing = 0
            pool.finished.notify_all()
    lone.join(10)
    assert answers == [True]


def test_the_gpu_budget_leaves_out_every_processs_context_idle_workers_included():
    """On the H100 nine idle workers held 690-794 MiB each, 6.6 GiB no reservation stood for, and full-size
    problems ran out of memory inside their budget.  The budget leaves out a context for every worker and
    keeper (started ahead of need), the keepers' cache share and a margin; never below a quarter of the GPU."""
    from tritongym.core.sandbox.gpu_pool import CONTEXT_MB, gpu_budget_mb

    assert CONTEXT_MB >= 794
    h100 = 81559.0
    assert gpu_budget_mb(h100, keepers=4, workers=8) == pytest.approx(0.95 * h100 - 0.25 * h100 - 12 * CONTEXT_MB)
    assert gpu_budget_mb(h100, keepers=4, workers=8) < gpu_budget_mb(h100, keepers=1, workers=2)
    assert gpu_budget_mb(8000.0, keepers=4, workers=8) == pytest.approx(2000.0)  # a small GPU: its floor


def test_a_workers_need_comes_from_one_forward_not_the_keepers_whole_build():
    """A full-size ReLU measured on an H100: its keeper's build peaked at 49156 MiB (the float64
    gold's temporaries), one forward at 18432 MiB (6 GiB in, its clone, 6 GiB out).  Sized from the build, its
    worker needed more than the 55 GiB the pool's budget has and took the GPU alone; sized from the forward it
    fits beside a small problem's worker.  A record without the forward's peak (an older keeper) falls back
    to the build's."""
    from tritongym.core.sandbox.gpu_pool import TaskDriver, gpu_budget_mb

    def need(prep: dict) -> float:
        driver = TaskDriver.__new__(TaskDriver)
        driver.prep = prep
        return driver.worker_need_mb()

    budget_mb = gpu_budget_mb(81559, keepers=4, workers=8)  # an H100 with the default 8 workers, 4 keepers
    relu = need({"peak_mb": 49156.0, "forward_peak_mb": 18432.0})
    older = need({"peak_mb": 49156.0})
    assert 2 * 18432 <= relu < budget_mb - 4096 < budget_mb < older
    # never less than a floor with room to spare: capped at 1 GiB, the smallest problems' workers ran out of
    # memory on the H100 (Triton's benchmarking buffer, the poisoned free blocks) and each ran again alone
    assert need({"peak_mb": 3.0, "forward_peak_mb": 1.0}) >= 2048


def test_a_worker_alone_on_the_gpu_is_capped_at_the_gpu_less_contexts_and_its_keeper_not_at_the_budget():
    """Level 1's 45_Average_Pooling_2D (16 GiB input) ran again alone on an H100 and its worker, capped at
    the budget (46 GiB: the keepers' cache share left out), ran out of memory asking for 16 GiB with 36 GiB of the
    GPU free.  Alone, the cap is the GPU less every context and what the keeper holds for the task; a task beside
    others keeps its grant, and a cap the configuration set is never touched."""
    import types

    from tritongym.core.sandbox.gpu_pool import MemoryBudget, TaskDriver, alone_room_mb, gpu_budget_mb

    h100, workers, keepers = 81559.0, 8, 4
    budget = MemoryBudget(gpu_budget_mb(h100, keepers, workers))
    prep = {"forward_peak_mb": 16519.0, "record_device_mb": 200.0, "lent_mb": 135.0}

    def fraction_for(alone: bool, configured: float | None = None) -> float:
        d = TaskDriver.__new__(TaskDriver)
        d.pool = types.SimpleNamespace(
            memory={"0": budget},
            total_mb={"0": h100},
            outside_mb={},
            options=PoolOptions(gpus=["0"], workers_per_gpu=workers),
            keepers_per_gpu=keepers,
        )
        d.worker, d.gpu = types.SimpleNamespace(gpu="0"), "0"
        d.task = task_for(load_problem("relu"), None, gpu_memory_fraction=configured)
        d.alone, d.prep, d.capped_here, d.granted_mb, d.deadline, d.memory_wait_s = alone, prep, False, None, 0.0, 0.0
        d._admit(alone=alone)
        try:
            d._widen_alone_cap()
            return d.task.gpu_memory_fraction
        finally:
            budget.release(d.granted_mb)

    room = alone_room_mb(h100, keepers, workers) - 335.0
    assert fraction_for(alone=True) == pytest.approx(room / h100, abs=1e-4)
    assert room > budget.capacity_mb + 0.2 * h100 - 1  # the keepers' cache share is the worker's when alone
    assert (room / h100) * h100 - 32.77 * 1024 > 16 * 1024  # the 16 GiB it asked for beside its 32.77 now fit
    need = TaskDriver.worker_need_mb(types.SimpleNamespace(prep=prep, WORKER_SLACK_MB=TaskDriver.WORKER_SLACK_MB))
    assert fraction_for(alone=False) == pytest.approx(need / h100, abs=1e-4)  # beside others: its grant
    assert fraction_for(alone=True, configured=0.3) == 0.3
    assert budget.holders == 0 and budget.reserved_mb == 0.0


def test_the_reference_timed_before_one_candidate_serves_the_others_of_its_problem_while_fresh(monkeypatch):
    """Every task took an exclusive hold of the GPU for the reference's timing before its candidate (on an H100, most of
    an RL batch's drains).  A timing another task of the problem took at most `shared_check_s` ago (before this
    candidate existed) serves this task instead; one still being taken is waited for rather than queued behind.
    A stale or failed one, a known timing the pool has dropped, or sharing turned off: the task times its own.
    (The GPU path runs in tests/test_gpu.py's RL-batch test; here the decision, on the pool's real records.)"""
    import threading
    import time
    import types

    from tritongym.core.models import TimingReport, TimingStats
    from tritongym.core.sandbox import reference_timing
    from tritongym.core.sandbox.gpu_pool import TaskDriver, _ReferenceCheck
    from tritongym.core.worker_task import TimingOptions

    stats = TimingStats(median_ms=0.25, iqr_ms=0.01, samples=40, mode="graph")
    report = TimingReport(precision="ieee", reference_before=stats).model_dump_json()
    relu = load_problem("relu")

    def driver(shared_s=30.0, known=True, **update):
        pool = types.SimpleNamespace(
            _guard=threading.Lock(),
            reference_checks={},
            bandwidth={},
            references={"key": stats.model_dump()} if known else {},
        )
        d = TaskDriver.__new__(TaskDriver)
        d.pool, d.worker, d.gpu, d.reference_key = pool, types.SimpleNamespace(gpu="0"), "0", "key"
        d.task = task_for(relu, None, timing=TimingOptions(shared_check_s=shared_s), **update)
        d.deadline, d.lock_wait_s, d.reference_flags, d.timing, d.reference_before = 0.0, 0.0, {}, None, None
        return d

    def taken(d, age_s=0.0, timing=report):
        check = d.pool.reference_checks["key"] = _ReferenceCheck()
        check.timing, check.at = timing, time.monotonic() - age_s
        check.done.set()
        return check

    d = driver()
    assert not d._shared_reference_check()  # nobody timed it yet
    taken(d)
    assert d._shared_reference_check()
    assert d.reference_before == stats and d.reference_flags == {"reference_check_shared": True}
    assert d.timing.reference_cached == stats  # reconciled with the known timing, as its own check would be

    stale = driver()
    taken(stale, age_s=31.0)
    assert not stale._shared_reference_check()
    failed = driver()
    taken(failed, timing=None)
    assert not failed._shared_reference_check()
    dropped = driver(known=False)  # the known timing disagreed and was dropped: a full timing of its own
    taken(dropped)
    assert not dropped._shared_reference_check()
    off = driver(shared_s=0.0)
    taken(off)
    assert not off._shared_reference_check()
    compiled = driver(compile_reference=True)  # torch.compile's timing still to be measured
    taken(compiled)
    assert not compiled._shared_reference_check()

    # one being taken: waited for, and its wait counted as waiting for the GPU, not as the candidate's time.  The
    # answer comes only once the task is seen waiting in `done.wait`, and five seconds pass then on the module's clock
    clock = [time.monotonic()]
    monkeypatch.setattr(reference_timing, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    waiting = driver()
    check = waiting.pool.reference_checks["key"] = _ReferenceCheck()
    waiter_in = threading.Event()

    class SeenWaiting(threading.Event):
        def wait(self, timeout=None):
            waiter_in.set()
            return super().wait(timeout)

    check.done = SeenWaiting()

    def answer():
        assert waiter_in.wait(30), "the task never waited for the timing being taken"
        clock[0] += 5.0  # the keeper's timing takes five seconds
        check.timing, check.at = report, clock[0]
        check.done.set()

    answering = threading.Thread(target=answer, daemon=True)
    answering.start()
    assert waiting._shared_reference_check()
    answering.join(30)
    assert waiting.lock_wait_s == 5.0 and waiting.deadline == 5.0  # all of it: the deadline moves by the wait


def test_the_keeper_frees_a_tasks_memory_under_a_shared_hold_never_beside_a_timing(pool, relu_problem, monkeypatch):
    """`FREE` runs kernels in the keeper (it poisons what it gives back, `scrub.py`: GiBs of fills for a large
    record).  Sent with no hold, it overlapped other tasks' timings on the H100 and two honest level-2
    references ran 2.2x slower in their drift checks, judged `hacked`.  It is sent under a shared hold now: a
    timing waiting or running keeps it back."""
    from tritongym.core.sandbox.gpu_pool import KeeperProcess

    lock = pool.locks["cpu"]
    seen: list[tuple[int, bool]] = []
    call = KeeperProcess.call

    def watched(self, kind, payload, timeout, **kw):
        if kind == "FREE":
            seen.append((lock.readers, lock.writer))
        return call(self, kind, payload, timeout, **kw)

    monkeypatch.setattr(KeeperProcess, "call", watched)
    evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
    assert evidence.error is None, evidence.error
    with lock.cond:  # sent in the background (the task's slot is not held for it): given back once done
        assert lock.cond.wait_for(lambda: seen and lock.readers == 0 and not lock.writer, timeout=30), seen
    assert all(readers >= 1 and not writer for readers, writer in seen), seen


def test_spare_workers_wait_warm_on_standby_and_never_raise_the_tasks_run_at_once(relu_problem, monkeypatch):
    """Every candidate gets a fresh process, so after each task a replacement starts (fork, CUDA context, warm-up
    under the GPU lock) while the next task waits for it.  `spare_workers_per_gpu` keeps warm workers on standby
    beyond `workers_per_gpu`: a slot that frees goes to one at once, and no more than `workers_per_gpu` tasks
    run at a time (more sharers of the GPU lengthen every timing's drain)."""
    import time

    from tritongym.core.sandbox.gpu_pool import TaskDriver

    running, most = [0], [0]
    guard = threading.Lock()
    drive = TaskDriver.drive

    def counted(self):
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return drive(self)
        finally:
            with guard:
                running[0] -= 1

    monkeypatch.setattr(TaskDriver, "drive", counted)
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, spare_workers_per_gpu=2, memory_mb=4096))
    try:
        deadline = time.monotonic() + 120
        while pool.ready.qsize() + len(pool._standby["cpu"]) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.ready.qsize() == 1 and len(pool._standby["cpu"]) == 2  # one slot; two warm on standby
        # on standby is not on its way (`WorkerPool._offer`): a task of another GPU may take an idle GPU's worker
        # rather than wait for a running task here to end
        assert pool.ready.coming["cpu"] == 0
        threads = [
            threading.Thread(target=lambda: pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120))
            for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert most[0] == 1  # three tasks, one at a time, as with no spares
        evidence = pool.run(task_for(relu_problem, relu_problem.solution), timeout_s=120)
        assert evidence.error is None and evidence.phases["worker_startup"] > 0
        assert pool._slotted["cpu"] <= 1
    finally:
        pool.close()


def test_the_gpu_backend_keeps_half_its_workers_again_on_standby_unless_told():
    """Spares won once a worker's start held no GPU lock (the 27 bundled pairs on an H100: 54 s with 4 spares
    against 89.5 s with none), so the triton-cuda backend keeps half of `workers_per_gpu` on standby by
    default; a configured number, 0 included, is kept as given."""
    from tritongym.plugins.backends.triton_cuda import TritonCUDABackend

    assert TritonCUDABackend().spare_workers_per_gpu(8) == 4
    assert TritonCUDABackend().spare_workers_per_gpu(1) == 0
    assert TritonCUDABackend.from_options({"spare_workers_per_gpu": 0}).spare_workers_per_gpu(8) == 0
    assert TritonCUDABackend.from_options({"spare_workers_per_gpu": 6}).spare_workers_per_gpu(8) == 6


def test_the_keepers_memory_for_a_task_is_counted_until_its_free(pool, monkeypatch):
    """From `PREP` to its `FREE` the keeper holds the task's record and handouts on the GPU; the budget counts them
    until the keeper has freed them (`TaskDriver._count_keeper_memory`), so a large problem is not admitted beside
    a freeing keeper's GiBs (the KernelBench sweep on an H100: 2 GiB free after a 40 GiB record, one
    problem at a time).  Real pool and keeper on the CPU, with a budget as a GPU's first keeper would make."""

    from tritongym.core.sandbox.gpu_pool import KeeperProcess, MemoryBudget

    budget = MemoryBudget(1_000_000.0)
    seen = []
    call = KeeperProcess.call

    def watched(self, kind, payload, timeout_s, **kw):
        if kind == "FREE":
            seen.append((budget.reserved_mb, len(pool.device_records)))
        return call(self, kind, payload, timeout_s, **kw)

    monkeypatch.setattr(KeeperProcess, "call", watched)
    pool.memory["cpu"], pool.total_mb["cpu"] = budget, 1_000_000.0
    try:
        evidence = pool.run(task_for(load_problem("relu"), RELU_KERNEL), timeout_s=120)
        assert evidence.error is None, evidence.error
        settled(budget)
        assert seen and seen[0][0] > 0 and seen[0][1] == 1  # the record and the handouts, while FREE ran
        assert budget.holders == 0 and budget.reserved_mb == 0.0 and not pool.device_records
    finally:
        del pool.memory["cpu"], pool.total_mb["cpu"]


def test_when_workers_set_up_the_profiler_reaches_them_and_junk_is_refused(relu_problem):
    """`profiler_warm_up` (the backend's option, the pool's, then each worker's environment): "cupti" (the
    default) reads CUPTI's activity API directly, "unlocked" has a worker set Kineto up at its start holding no
    GPU lock, "startup" under a shared hold (~4 s per fresh worker on an H100).  The GPU path is a device A/B
    (`lock_options_ab.py ... unlocked+profiler=startup`) and the GPU tests; here, that the setting reaches the
    candidate's process as set, and that the backend refuses a value it does not know (a set-up after the
    candidate's modules loaded sees none of its kernels on an H100)."""
    from pydantic import ValidationError

    from tritongym.plugins.backends.triton_cuda import TritonCUDABackend

    assert TritonCUDABackend.Options().profiler_warm_up == PoolOptions(gpus=["cpu"]).profiler_warm_up == "cupti"
    assert TritonCUDABackend.Options(profiler_warm_up="startup").profiler_warm_up == "startup"
    assert TritonCUDABackend.Options(profiler_warm_up="unlocked").profiler_warm_up == "unlocked"
    for junk in ("background", "before_timing"):
        with pytest.raises(ValidationError):
            TritonCUDABackend.Options(profiler_warm_up=junk)

    tells = 'import os\nraise RuntimeError("warm-up: " + os.environ.get("TRITONGYM_PROFILER_WARM_UP", "unset"))\n'
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, profiler_warm_up="startup"))
    try:
        evidence = pool.run(task_for(relu_problem, tells), timeout_s=120)
    finally:
        pool.close()
    assert evidence.error is not None and "warm-up: startup" in evidence.error.message


def test_the_gpu_locks_draining_seconds_are_split_among_the_sharers_a_timer_waited_for():
    """`GPULock.drained_by`: while a timer waits for sharers to finish, each second goes to what the sharers still
    running hold the GPU for, by their numbers; shared seconds with no timer waiting go to nobody."""
    lock, cond = watched_lock()
    now = [100.0]
    lock.clock = lambda: now[0]
    lock._since = now[0]
    lock.acquire(exclusive=False, holder="reference")  # a keeper's build
    lock.acquire(exclusive=False, holder="candidate")  # a worker's correctness trials
    now[0] += 5.0  # shared, nobody waiting: no drain

    def timer():
        lock.acquire(exclusive=True)
        cond.note("timing")
        lock.release(exclusive=True)

    t = start(timer, "timer")
    cond.until(lambda: lock.holding_back, "the timer holding new sharers back")
    now[0] += 2.0  # both sharers run on: one second each
    lock.release(exclusive=False, holder="candidate")
    now[0] += 3.0  # the build alone keeps the timer waiting
    lock.release(exclusive=False, holder="reference")
    t.join(5)
    assert cond.events == ["timing"]
    assert lock.drained_by() == {"reference": 4.0, "candidate": 1.0}
    assert lock.seconds()["draining"] == 5.0
