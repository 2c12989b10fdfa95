"""The GPU pool's processes are its process's own (`sandbox/owned.py`), run for real on the CPU (`gpus=["cpu"]`).

Its zygote, workers and keepers are recorded with their pid and start and the pool's process's, hold that process's
lifeline (so they die with it however it dies), and have their folders made by `owned.make_folder` (so the next
tritongym process removes those a killed pool left); a worker killed by something other than the pool's own limits
is the infrastructure's failure, run again, never the candidate's `crashed`.  The GPU's own paths are the same code
with `CUDA_VISIBLE_DEVICES` set: `python -m pytest -m gpu tests/test_pool_ownership.py` runs the lifeline test on a
GPU pool too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from tests.conftest import process_alive, process_gone, task_for
from tritongym.core.sandbox import owned
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool

ROOT = Path(__file__).parents[1]

# A process that runs a pool, as a service, an `eval` or a Ray actor does, and keeps a keeper and a worker busy, where
# only the lifeline can end them (idle, they end when their channel to the pool closes): one task whose reference hangs
# (in its keeper's PREP) and one whose candidate hangs (in its worker), each first saying its process on a FIFO of its
# own.  Two keepers: the two tasks' records go to different ones (`WorkerPool.keeper_for` spreads new records over a
# GPU's keepers), so that the second task's reference is built while the first's hangs.  It prints its processes and
# their folders, then waits.
OWNER = """
import json, os, sys, threading
from tests.conftest import task_for
from tritongym.core.problems import load_problem
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
from tritongym.core.worker.protocol import record_key

gpu, how, fifos = sys.argv[1], sys.argv[2], sys.argv[3:]
options = PoolOptions(gpus=[gpu], workers_per_gpu=2, keepers_per_gpu=2, memory_mb=None, use_zygote=how == "zygote")
pool = WorkerPool(options)
relu = load_problem("relu")
device = "cpu" if gpu == "cpu" else "cuda"
hang = "import os, signal\\nfd = os.open({!r}, os.O_WRONLY)\\nos.write(fd, str(os.getpid()).encode())\\nos.close(fd)\\n"
hang += "while True:\\n    signal.pause()\\n"
reference = task_for(relu, relu.solution).model_copy(
    update={"problem_source": hang.format(fifos[0]) + relu.source, "device": device}
)
candidate = task_for(relu, hang.format(fifos[1]) + relu.solution, seeds=[1, 2, 3]).model_copy(update={"device": device})
assert record_key(candidate) != record_key(reference)
for task in (reference, candidate):
    threading.Thread(target=pool.run, args=(task, 600), daemon=True).start()
busy = []
for fifo in fifos:
    with open(fifo) as f:
        busy.append(int(f.read()))
processes = {pid: [kind, process.tmp] for kind, group in [("keeper", pool.keepers.values()), ("worker", pool._live)]
             for process in group for pid in [process.pid]}
if pool.zygote is not None:
    processes[pool.zygote.proc.pid] = ["zygote", pool.zygote.tmp]
print(json.dumps({"busy": busy, "processes": processes}), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    """Records of started processes apart from other tests' (the owner started here inherits it)."""
    monkeypatch.setenv(owned.RUNTIME_DIR_ENV, str(tmp_path / "runtime"))
    return tmp_path / "runtime" / "owned"


def _records(directory: Path) -> dict[int, dict]:
    """The records in `directory` of processes (pid -> record) and of folders (by their folder, pid None)."""
    found: dict = {}
    for path in directory.glob("*.json"):
        body = json.loads(path.read_text())
        found[body["pid"] if body["pid"] is not None else body["folder"]] = body
    return found


def _check_a_killed_pool_leaves_nothing(gpu: str, how: str, tmp_path: Path, runtime_dir: Path) -> None:
    fifos = [tmp_path / "reference", tmp_path / "candidate"]
    for fifo in fifos:
        os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, gpu, how, *map(str, fifos)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = owner.stdout.readline()
        assert line, "the pool's process did not say what it started"
        said = json.loads(line)
        processes = {int(pid): (kind, Path(folder)) for pid, (kind, folder) in said["processes"].items()}
        kinds = sorted(kind for kind, _ in processes.values())
        assert kinds == (["keeper"] * 2 + ["worker"] * 2 + (["zygote"] if how == "zygote" else []))
        busy_keeper, busy_worker = said["busy"]  # the hung reference's process and the hung candidate's
        assert processes[busy_keeper][0] == "keeper" and processes[busy_worker][0] == "worker"
        records = _records(runtime_dir)
        for pid, (kind, folder) in processes.items():
            assert records[pid]["kind"] == kind and records[pid]["owner"] == owner.pid, records
            assert records[pid]["start"] == owned.process_start(pid)  # the one recorded, not a reused pid
            assert records[str(folder)]["owner"] == owner.pid and folder.is_dir()
            assert folder.name.startswith(f"tritongym-{owner.pid}-{kind}-")  # findable by name too
        # a clean-up in another process (a service's start) leaves a live owner's processes alone
        assert owned.sweep().killed == [] and all(process_alive(pid) for pid in processes)
        owner.kill()  # kill -9: no `finally`, no atexit
        owner.wait()
        left = {pid: kind for pid, (kind, _) in processes.items() if not process_gone(pid)}
        assert not left, f"still running after their pool's process was killed (busy: {said['busy']}): {left}"
        assert all(folder.is_dir() for _, folder in processes.values())  # until a clean-up
        swept = owned.sweep()
        assert swept.killed == []  # they died with their owner: nothing left to kill
        assert sorted(swept.removed) == sorted(str(folder) for _, folder in processes.values())
        assert not any(folder.exists() for _, folder in processes.values())
        assert list(runtime_dir.glob("*.json")) == []
    finally:
        owner.kill()
        owner.wait()


# spawned in the slow tier (8 s: a fresh interpreter per worker and keeper); the fast tier's [zygote] case is the
# CPU pool's own way, and test_pool.py's test_workers_are_forked_warm_from_the_zygote_or_spawned_without_it
# spawns workers in the fast tier
@pytest.mark.parametrize("how", ["zygote", pytest.param("spawned", marks=pytest.mark.slow)])
def test_a_pools_zygote_workers_and_keepers_are_recorded_and_die_with_its_process(how, tmp_path, runtime_dir):
    """Forked by the zygote (the pid from its answer) or spawned directly: each is recorded with the pool's
    process as its owner, left alone by another process's clean-up while that owner lives, and killed by the
    lifeline when the owner is SIGKILLed; the folders they leave go at the next clean-up."""
    _check_a_killed_pool_leaves_nothing("cpu", how, tmp_path, runtime_dir)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_pools_processes_die_with_its_process(tmp_path, runtime_dir):
    _check_a_killed_pool_leaves_nothing("0", "zygote", tmp_path, runtime_dir)


def test_a_retired_workers_record_and_folder_go_with_it(relu_problem, runtime_dir):
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        keeper, worker = pool.keeper("cpu"), pool._take()
        assert keeper.pid in _records(runtime_dir) and worker.pid in _records(runtime_dir)
        assert os.path.isdir(worker.tmp)
        pool._retire(worker, replace=False)
        assert worker.pid not in _records(runtime_dir) and not os.path.exists(worker.tmp)
    finally:
        pool.close()
    assert list(runtime_dir.glob("*.json")) == []  # the zygote's and the keeper's went with `close`


# The candidate says its process (the worker's) on a FIFO, then waits to be killed: by the test, as another process
# or the OOM killer would.  `once`: only its first run does (a marker says it ran); the next is the honest relu.
KILLED = """
import os, signal
if not os.path.exists({marker!r}):
    if {once}:
        os.close(os.open({marker!r}, os.O_CREAT | os.O_WRONLY))
    fd = os.open({fifo!r}, os.O_WRONLY)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    while True:
        signal.pause()
"""


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    yield pool
    pool.close()


def _run_and_kill(pool: WorkerPool, problem, tmp_path: Path, once: bool, kills: int):
    """Run the relu solution behind `KILLED` in the pool while SIGKILLing, from here, the worker it reports, `kills`
    times; the evidence and the pids killed."""
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    source = KILLED.format(marker=str(tmp_path / "ran"), fifo=str(fifo), once=once) + problem.solution
    result = {}
    thread = threading.Thread(target=lambda: result.update(evidence=pool.run(task_for(problem, source), timeout_s=120)))
    thread.start()
    killed = []
    for _ in range(kills):
        with open(fifo) as f:  # blocks until the candidate opens it
            pid = int(f.read())
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    thread.join(300)
    assert not thread.is_alive()
    return result["evidence"], killed


def test_a_worker_killed_from_outside_is_run_again_on_a_fresh_one(pool, relu_problem, tmp_path):
    evidence, killed = _run_and_kill(pool, relu_problem, tmp_path, once=True, kills=1)
    assert evidence.error is None and evidence.stage == "done"  # the honest kernel's verdict, from its retry


def test_a_worker_killed_from_outside_twice_is_the_infrastructures_failure_never_a_crash(pool, relu_problem, tmp_path):
    """Not `crashed` (a verdict stored against an honest kernel): stage `setup`, which the Evaluator raises as the
    backend's error (`BackendUnavailable`) and never stores."""
    evidence, killed = _run_and_kill(pool, relu_problem, tmp_path, once=False, kills=2)
    assert len(set(killed)) == 2  # two workers
    assert evidence.stage == "setup" and evidence.error.kind == "InfrastructureFailure", evidence.error
    assert "SIGKILL" in evidence.error.message and "not a verdict on the candidate" in evidence.error.message
    # and a worker that dies of its own is still the candidate's crash
    own = pool.run(task_for(relu_problem, "import os\nos._exit(7)\n"), timeout_s=120)
    assert own.stage != "setup" and own.error.kind == "WorkerCrashed" and "code 7" in own.error.message
