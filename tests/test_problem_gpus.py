"""Which GPU a task runs on (`core/sandbox/problem_gpus.py`): a problem's tasks stay on one GPU, so its reference side
is built by one keeper, and no GPU idles while a task waits for another's worker."""

from __future__ import annotations

from dataclasses import dataclass
from queue import Empty

import pytest

from tritongym.core.sandbox.problem_gpus import ProblemGPUs, ReadyWorkers


@dataclass(eq=False)
class FakeWorker:
    gpu: str
    name: str = ""


def test_a_problem_is_placed_on_the_least_loaded_gpu_and_stays_there():
    gpus = ProblemGPUs(["0", "1"])
    assert gpus.place("relu") == "0"
    assert gpus.place("softmax") == "1"  # GPU 0 has relu's task
    assert gpus.place("relu") == "0"  # relu's samples follow its first
    assert gpus.place("gelu") == "1"  # 0 has two tasks, 1 one
    assert gpus.load == {"0": 2, "1": 2}
    for gpu in ("0", "0", "1", "1"):
        gpus.done(gpu)
    assert gpus.load == {"0": 0, "1": 0}
    assert gpus.place("softmax") == "1"  # a later batch finds the GPU whose keeper has its record


def test_a_task_takes_a_worker_of_its_gpu_before_one_of_another():
    ready = ReadyWorkers(["0", "1"])
    mine, other_a, other_b = FakeWorker("0", "mine"), FakeWorker("1", "a"), FakeWorker("1", "b")
    for worker in (other_a, other_b, mine):
        ready.put(worker)
    assert ready.get("0", timeout=0) is mine  # GPU 1 has more ready, but relu's record is on GPU 0
    assert ready.taken_elsewhere == 0
    assert ready.qsize() == 2


def test_a_worker_of_another_gpu_is_taken_only_when_no_task_waits_for_it():
    ready = ReadyWorkers(["0", "1"])
    idle = FakeWorker("1")
    ready.put(idle)
    with ready.cond:
        ready.wanted["1"] = 1  # a task placed on GPU 1 is waiting for that worker
    with pytest.raises(Empty):
        ready.get("0", timeout=0)
    with ready.cond:
        ready.wanted["1"] = 0
    assert ready.get("0", timeout=0) is idle  # nobody wants it: GPU 1 would idle, so the task goes there
    assert ready.taken_elsewhere == 1
    assert ready.wanted == {"0": 0, "1": 0}  # a finished wait leaves no count behind


def test_a_task_waits_for_its_own_gpus_worker_on_its_way_rather_than_build_its_record_twice():
    ready = ReadyWorkers(["0", "1"])
    idle = FakeWorker("1")
    ready.put(idle)
    ready.arriving("0", 1)  # GPU 0's worker is starting
    with pytest.raises(Empty):
        ready.get("0", timeout=0)
    ready.arriving("0", -1)  # it failed to start: nothing of GPU 0's own is coming, so GPU 1's idle worker serves
    assert ready.get("0", timeout=0) is idle
