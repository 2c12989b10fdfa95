"""The cross-process timeline (`core/timeline.py`): marks land in the named file, in order, whole; unset, nothing."""

import json
import multiprocessing

from tritongym.core import timeline


def _mark_many(path: str, n: int) -> None:
    import os

    os.environ[timeline.ENV] = path
    for i in range(n):
        timeline.mark("child", i=i, pad="x" * 200)


def test_marks_from_several_processes_are_whole_lines_read_back_in_time_order(tmp_path, monkeypatch):
    path = tmp_path / "marks"
    monkeypatch.setenv(timeline.ENV, str(path))
    timeline.mark("first", note="a")
    ctx = multiprocessing.get_context("spawn")
    children = [ctx.Process(target=_mark_many, args=(str(path), 50)) for _ in range(3)]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    # every line whole JSON; a daemon thread an earlier test of this xdist worker left may add a mark of its own
    events = [json.loads(line)["event"] for line in path.read_text().splitlines()]
    assert events.count("first") == 1 and events.count("child") == 150
    marks = timeline.read(path)
    assert [m["t"] for m in marks] == sorted(m["t"] for m in marks)
    assert marks[0]["event"] == "first" and marks[0]["note"] == "a"


def test_no_file_is_written_without_the_variable_and_junk_lines_are_skipped(tmp_path, monkeypatch):
    monkeypatch.delenv(timeline.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    timeline.mark("nowhere")
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "marks"
    path.write_text('{"t": 2.0, "event": "b"}\nnot json\n[1, 2]\n{"event": "no time"}\n{"t": 1.0, "event": "a"}\n')
    assert [m["event"] for m in timeline.read(path)] == ["a", "b"]
    assert timeline.read(tmp_path / "missing") == []


_POOL_WITHOUT_TORCH = """
import os, sys, time
from tritongym.core.sandbox.gpu_pool import WorkerPool
from tritongym.core.sandbox.pool_options import PoolOptions
assert "torch" not in sys.modules, "importing the pool imported torch"
pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, start_on_demand=True))
deadline = time.monotonic() + 60
marks = os.environ["TRITONGYM_TIMELINE"]
while "parent_torch_imported" not in open(marks).read() and time.monotonic() < deadline:
    time.sleep(0.05)  # waits on the file's state; the deadline is a hang guard
pool.close()
print("imported" if hasattr(sys.modules.get("torch"), "load") else "not imported")
"""


def test_a_pool_imports_torch_for_its_reports_while_its_processes_start(tmp_path):
    """The parent decodes every worker's report with `torch.load`; a CLI `eval` that had not imported torch paid
    for it on its first report, after the worker was ready (3-3.5 s on an H200).  A pool started in a process
    without torch imports it in the background, no task asked, and marks when it is done."""
    import os
    import subprocess
    import sys

    marks = tmp_path / "marks"
    env = {**os.environ, timeline.ENV: str(marks)}
    done = subprocess.run([sys.executable, "-c", _POOL_WITHOUT_TORCH], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stdout + done.stderr
    events = [m["event"] for m in timeline.read(marks)]
    assert "parent_torch_imported" in events and events.index("pool_start") < events.index("parent_torch_imported")


def test_the_keeper_marks_its_screens_parts_and_a_worker_gets_no_timeline(tmp_path, monkeypatch):
    """The keeper (trusted: no candidate code) inherits the timeline, so a screen's parts reach it (on an H200 the
    cold eval's screen took 4-6 s and its parts were never seen: the keeper's environment is stripped); a worker's
    environment, where candidate code runs, never names the file."""
    from tests.conftest import task_for
    from tritongym.core.problems import load_problem
    from tritongym.core.sandbox.gpu_pool import WorkerPool
    from tritongym.core.sandbox.pool_options import PoolOptions
    from tritongym.core.sandbox.processes import Worker
    from tritongym.core.sandbox.task_driver import screen_in_keeper

    marks = tmp_path / "marks"
    monkeypatch.setenv(timeline.ENV, str(marks))
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, start_on_demand=True))
    try:
        evidence = screen_in_keeper(pool, task_for(load_problem("relu"), None, mode="screen"), 120, "cpu")
        assert evidence.stage == "done", evidence
        assert timeline.ENV in pool.keeper("cpu").role_env()
        assert timeline.ENV not in Worker.role_env(pool.keeper("cpu"))  # the worker's own (none)
    finally:
        pool.close()
    parts = [m["part"] for m in timeline.read(marks) if m["event"] == "keeper_screen_part"]
    assert parts[:3] == ["build", "inputs", "randomness"], parts
