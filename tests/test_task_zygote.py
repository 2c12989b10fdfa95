"""The sandbox's fork server (`sandbox/task_zygote.py`): a worker forked from it is the worker a fresh interpreter
would be (same streams, descriptors, folder, environment, import path), two forked workers share nothing, the
time limit kills the whole group, and where the zygote cannot serve a fresh interpreter runs the task."""

from __future__ import annotations

import json
import os
import re
import signal
import time

import pytest
from conftest import RELU_KERNEL, task_for

from tritongym.core.problems import load_problem
from tritongym.core.sandbox import sandbox, task_zygote
from tritongym.core.sandbox.fork_server import PACKAGE_PARENT
from tritongym.core.sandbox.sandbox import run_in_sandbox
from tritongym.core.worker_task import SandboxLimits

ENV = {"TRITON_INTERPRET": "1"}

# what a candidate sees of its process, sent back as the message of the error its ModelNew raises
LOOK_AROUND = """
import json, os, random, sys, tempfile
import torch


def _descriptors():
    found = {}
    for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
        try:
            found[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return found


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        seen = {
            "fds": _descriptors(),
            "path0": sys.path[0],
            "cwd": os.getcwd(),
            "tmp": tempfile.gettempdir(),
            "home": os.environ["HOME"],
            "env": sorted(os.environ),
            "random": random.random(),
            "marks": [getattr(torch, "_left_by_another", None), os.environ.get("LEFT_BY_ANOTHER")],
        }
        torch._left_by_another = os.getcwd()
        os.environ["LEFT_BY_ANOTHER"] = os.getcwd()
        raise RuntimeError(json.dumps(seen))
"""


def _seen(zygote: bool) -> dict:
    evidence = run_in_sandbox(task_for(load_problem("relu"), LOOK_AROUND), SandboxLimits(timeout_s=120), ENV, zygote)
    assert evidence.stage == "init", evidence.error
    return json.loads(evidence.error.message)


def _shape(seen: dict) -> dict:
    """What must be alike in two workers: descriptors by number and kind (pipe, log file), paths relative to the
    worker's own folder, the environment's names."""
    folder = seen["cwd"]

    def kind(target: str) -> str:
        return "log" if target == os.path.join(folder, "worker.log") else re.sub(r"\[\d+\]", "", target)

    return {
        "fds": {fd: kind(target) for fd, target in seen["fds"].items()},
        "own folder": [seen[k] == folder for k in ("path0", "tmp", "home")],
        "env": seen["env"],
    }


def test_a_forked_worker_is_what_a_fresh_interpreter_would_be():
    fresh, forked = _seen(zygote=False), _seen(zygote=True)
    assert _shape(forked) == _shape(fresh)
    assert _shape(forked)["own folder"] == [True, True, True]
    assert "socket" not in str(forked["fds"])  # nothing of the zygote's control channel


def test_two_forked_workers_share_nothing():
    first, second = _seen(zygote=True), _seen(zygote=True)
    assert first["cwd"] != second["cwd"]
    assert second["marks"] == [None, None]  # what the first left in torch and its environment died with it
    assert first["random"] != second["random"]  # each fork reseeds, as a fresh interpreter would be seeded


def test_the_time_limit_kills_a_forked_worker_and_what_it_left_running(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    stray = f"""
import os, time
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if os.fork() == 0:  # a child of the candidate's, left to outlive it
            with open({str(pid_file)!r}, "w") as f:
                f.write(str(os.getpid()))
            while True:
                time.sleep(1)
        while True:  # past its limit, asleep: the limit is wall time, and spinning would only cost CPU
            time.sleep(1)
"""
    start = time.monotonic()
    evidence = run_in_sandbox(task_for(load_problem("relu"), stray), SandboxLimits(timeout_s=4), ENV, zygote=True)
    assert evidence.error.kind == "Timeout" and time.monotonic() - start < 60
    daemon = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(daemon)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_zygote_that_cannot_import_triton_leaves_the_task_to_a_fresh_interpreter(tmp_path):
    fake = tmp_path / "fake"
    (fake / "triton").mkdir(parents=True)
    (fake / "triton" / "__init__.py").write_text("raise ImportError('this triton is broken')\n")
    env = {**ENV, "PYTHONPATH": f"{fake}:{PACKAGE_PARENT}"}
    evidence = run_in_sandbox(task_for(load_problem("relu"), RELU_KERNEL), SandboxLimits(timeout_s=120), env, True)
    assert evidence.stage == "setup" and "this triton is broken" in evidence.error.message


def test_a_killed_zygote_is_started_again():
    relu = load_problem("relu")
    assert run_in_sandbox(task_for(relu, RELU_KERNEL), SandboxLimits(timeout_s=120), ENV, zygote=True).error is None
    first = sandbox._zygote(ENV)
    os.killpg(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    with first.cond:
        assert first.cond.wait_for(lambda: first.dead, 30)
    evidence = run_in_sandbox(task_for(relu, RELU_KERNEL), SandboxLimits(timeout_s=120), ENV, zygote=True)
    assert evidence.error is None and evidence.stage == "done"
    assert sandbox._zygote(ENV) is not first


@pytest.fixture(autouse=True, scope="module")
def _no_zygotes_left():
    yield
    task_zygote.close_all()
