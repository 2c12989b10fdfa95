"""A reference that draws random numbers has no one answer for a call whose generator state nobody set.

KernelBench's level 2 66 (`Matmul_Dropout_Softmax`) and 83 keep `nn.Dropout` in training mode: the seeded trials
match (the candidate's process draws from the state the trial's inputs left, as the keeper's did), but the timed
calls run many forwards in a row, so their outputs differ from the reference's by construction.  On an H100
the reference itself was judged `incorrect` there.  The keeper now says whether the reference's forward
moved torch's generators (`draws_random` in its `PREP` answer), and the pool then compares no timed outputs."""

from __future__ import annotations

import torch

from tests.conftest import task_for
from tritongym.core.keeper.keeper import ReferenceRecord
from tritongym.core.problems import load_problem

DROPOUT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        return torch.softmax(self.dropout(x), dim=1)


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
"""


def test_the_keeper_says_whether_the_reference_draws_random_numbers(tmp_path):
    relu = load_problem("relu")
    (tmp_path / "relu").mkdir()
    (tmp_path / "dropout").mkdir()
    plain = ReferenceRecord(task_for(relu, None), str(tmp_path / "relu"), torch.device("cpu"))
    assert plain.draws_random is False
    task = task_for(relu, None).model_copy(update={"problem_name": "dropout", "problem_source": DROPOUT, "sizes": {}})
    noisy = ReferenceRecord(task, str(tmp_path / "dropout"), torch.device("cpu"))
    assert noisy.draws_random is True


def test_a_reference_that_draws_random_numbers_passes_as_its_own_candidate(tmp_path):
    """The `refresh` and `repeat` probes call trial 0 again: from torch's generators as the trial found them, so
    a dropout reference run as the candidate gives trial 0's answer again.  On an H100 level 2's 66 was
    `hacked` by the determinism check: its repeated call drew another dropout mask."""
    from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
    from tritongym.core.verdict import probe_outputs_match

    candidate = DROPOUT.replace("class Model(", "class ModelNew(")
    relu = load_problem("relu")
    task = task_for(relu, candidate).model_copy(
        update={"problem_name": "dropout", "problem_source": DROPOUT, "sizes": {}}
    )
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        evidence = pool.run(task, timeout_s=120)
    finally:
        pool.close()
    assert evidence.error is None, evidence.error
    assert all(out.mismatched == 0 for trial in evidence.trials for out in trial.outputs)
    probed = {call.probe: probe_outputs_match(call) for call in evidence.probes}
    assert probed["refresh"].correct and probed["repeat"].correct, (probed["refresh"], probed["repeat"])
