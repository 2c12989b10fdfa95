"""GPU: no false `precomputed` or `ghost` from stale memory, and every hack those two checks exist for still caught.

On H100s and H200s two honest large-K GEMMs (an fp32 `torch.empty` output, one `tl.dot` kernel, a cast) and a
three-kernel softmax were `hacked` every time: their fresh output block held an earlier call's output, which is
within tolerance of this call's answer when every answer is alike (`verdict.DECOY_MARGIN`).  The watched call now
poisons what the candidate allocates (`scrub.poisoned_allocations`) and both checks judge against a decoy.  Each
honest pattern (`test_honest.STALE_MEMORY_CASES`) is judged five times in one batch, so later samples get memory
earlier ones freed, on every GPU the machine shows (one, or two: run it on both kinds of machine); the hack cases
of tests/hacks/test_hacks.py that expect `precomputed` or `ghost` are judged at GPU sizes too.  The CPU half of
this is tests/test_prior_answers.py and the same honest cases in test_honest.py.
"""

from __future__ import annotations

import os

import pytest
import torch

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.problems import load_problem

from ._harness import HONEST, Case, assert_caught, evaluate_cases, explain, new_host
from .test_hacks import CPU_CASES, GPU_CASES
from .test_honest import STALE_MEMORY_CASES

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.timeout(3600),
]

REPEATS = 5
CHECKS = ("precomputed", "ghost")

HACK_CASES = [c for c in CPU_CASES + GPU_CASES if any(e.check in CHECKS for e in c.expect)]


@pytest.fixture(scope="module")
def honest_runs() -> dict[str, list]:
    """Every stale-memory case `REPEATS` times, interleaved, in one `evaluate_many` batch (as an RL step's samples
    are): results by case id, in order."""
    pairs, ids = [], []
    for _ in range(REPEATS):
        for case in STALE_MEMORY_CASES:
            pairs.append(((HONEST / case.file).read_text(), load_problem(case.problem, "gpu")))
            ids.append(case.id)
    settings = dict(trials=3, timeout_s=300, use_cache=False, workers=min(2, os.cpu_count() or 1))
    with pytest.MonkeyPatch.context() as env:  # as the harness does: no installed plugins
        env.setenv("TRITONGYM_LOAD_PLUGINS", "")
        env.delenv("TRITONGYM_PLUGINS", raising=False)
        env.delenv("TRITONGYM_REGISTRY", raising=False)
        evaluator = Evaluator(EvalConfig(backend="triton-cuda", size="gpu", **settings), registry=None, host=new_host())
        try:
            results = evaluator.evaluate_many(pairs)
        finally:
            evaluator.close()
    runs: dict[str, list] = {}
    for ident, result in zip(ids, results):
        runs.setdefault(ident, []).append(result)
    return runs


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in STALE_MEMORY_CASES])
def test_a_fresh_output_after_own_kernels_is_ok_every_time(case: Case, honest_runs):
    results = honest_runs[case.id]
    assert len(results) == REPEATS
    for k, result in enumerate(results):
        flagged = [v.name for v in result.checks if not v.passed and v.name in CHECKS]
        assert not flagged, f"{case.file}, run {k + 1} of {REPEATS}: {explain(result)}"
        assert result.status == Status.ok, f"{case.file}, run {k + 1} of {REPEATS}: {explain(result)}"
        assert {v.name for v in result.checks} >= set(CHECKS), "both checks judged it"


@pytest.fixture(scope="module")
def hack_results():
    return evaluate_cases(HACK_CASES, "triton-cuda", timeout_s=300)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in HACK_CASES])
def test_the_hacks_precomputed_and_ghost_exist_for_are_still_caught(case: Case, hack_results):
    assert_caught(case, hack_results[case.id], new_host())
