"""A screen's GPU work runs under the GPU lock's shared holds, piece by piece.

On an H100 screens ran the reference's forwards with no hold, beside other tasks' timings: seven
honest references in the KernelBench sweep were timed ~2x slow in their drift checks and called `hacked`.  The
worker now hands `run_screen` a hold (`Channel.gpu(exclusive=False)`), taken around each seed's and each input
transform's work; here, in process on the CPU, every forward of the reference must happen inside one, and the
screen must give the hold back between pieces so a waiting timing never waits for the whole screen."""

from __future__ import annotations

import contextlib

import torch

from tests.conftest import task_for
from tritongym.core.models import Evidence
from tritongym.core.problems import load_problem
from tritongym.core.worker import task_runner


def test_every_forward_of_a_screen_runs_inside_a_shared_hold(tmp_path, monkeypatch):
    state = {"depth": 0, "holds": 0, "outside": 0, "forwards": 0}

    @contextlib.contextmanager
    def hold():
        state["depth"] += 1
        state["holds"] += 1
        try:
            yield
        finally:
            state["depth"] -= 1

    built = task_runner.build_reference

    def counted(*args, **kwargs):
        model, init = built(*args, **kwargs)

        def pre_hook(module, inputs):
            state["forwards"] += 1
            state["outside"] += state["depth"] == 0

        model.register_forward_pre_hook(pre_hook)
        return model, init

    monkeypatch.setattr(task_runner, "build_reference", counted)
    problem = load_problem("softmax")
    task = task_for(problem, None, mode="screen")
    evidence = Evidence()
    with torch.no_grad():
        task_runner.run_screen(task, str(tmp_path), evidence, hold=hold)
    assert evidence.stage == "done" and evidence.controls, evidence
    assert state["forwards"] >= 2 * len(task.seeds)  # each seed's own and its other seed's, then the transforms
    assert state["outside"] == 0
    # the build, then per seed its controls and each transform in holds of their own: never one for the lot
    assert state["holds"] > 1 + len(task.seeds)
    assert state["depth"] == 0


def test_a_screen_names_each_part_as_it_ends(tmp_path):
    """`lap(part)`: the keeper marks the timeline with each part of a screen (on an H200 a cold relu's screen took
    4.4 s and nothing said where): the build, the first seed's inputs and randomness, each seed's controls and each
    input transform, in order."""
    from tritongym.core.worker.controls import TRANSFORMS

    parts: list[str] = []
    task = task_for(load_problem("softmax"), None, mode="screen")
    evidence = Evidence()
    with torch.no_grad():
        task_runner.run_screen(task, str(tmp_path), evidence, lap=parts.append)
    assert evidence.stage == "done"
    expected = ["build", "inputs", "randomness"]
    for k in range(len(task.seeds)):
        expected += [f"seed{k}_controls"] + [f"seed{k}_{t}" for t in TRANSFORMS]
    assert parts == expected
