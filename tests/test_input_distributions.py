"""Trial inputs from more than one distribution (issue 41 item 7), and a sample of the mutation benchmark.

A LayerNorm whose epsilon was dropped passed every trial while every trial drew the problem's own inputs (variance
4, epsilon 1e-5); trial 1 now draws them scaled by 1e-3 (`core/worker/distributions.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tritongym import api
from tritongym.core.config import EvalConfig
from tritongym.core.models import Candidate, Status, TrialEvidence
from tritongym.core.problems import load_problem
from tritongym.core.worker.distributions import atol_scales, distributed, trial_distribution

ROOT = Path(__file__).resolve().parent.parent


def test_trials_cycle_through_the_distributions_from_the_problems_own_inputs():
    assert [trial_distribution(k) for k in range(5)] == ["as_is", "scaled_down", "negated", "scaled_up", "as_is"]
    x, index, flag = torch.ones(3), torch.arange(3), torch.ones(3, dtype=torch.bool)
    scaled = distributed("scaled_down", [x, index, flag, 2])
    assert torch.equal(scaled[0], x * 1e-3) and scaled[1] is index and scaled[2] is flag and scaled[3] == 2
    assert torch.equal(distributed("negated", [x])[0], -x)
    # atol follows the outputs only where the inputs were scaled up (trial 3), never below the table's
    assert atol_scales([[2.0], [0.002], [2.0], [32.0]]) == [1.0, 1.0, 1.0, 16.0]


def test_a_failing_trial_names_its_distribution():
    trial = TrialEvidence(seed=7, distribution="scaled_down")
    assert trial.label(1) == "trial 1 (seed 7), wrong on inputs scaled by 1e-3"
    assert TrialEvidence(seed=7, distribution="as_is").label(0) == "trial 0 (seed 7)"


def test_a_layer_norm_without_its_epsilon_is_incorrect_on_inputs_scaled_down():
    """`ok` before (all 5 trials matched, max abs error 1.05e-05); `incorrect` at trial 1 now."""
    problem = load_problem("layer_norm", "cpu")
    dropped = problem.solution.replace("tl.sqrt(var + eps)", "tl.sqrt(var)")
    assert dropped != problem.solution
    config = EvalConfig(backend="triton-cpu", trials=2, seed=11)
    with api.make_evaluator(config, registry=False) as evaluator:
        results = evaluator.evaluate_many(
            [(Candidate(source=dropped), problem), (Candidate(source=problem.solution), problem)]
        )
    assert results[0].status == Status.incorrect, results[0].message
    assert "wrong on inputs scaled by 1e-3" in results[0].message
    assert results[1].status == Status.ok, results[1].message


@pytest.mark.slow  # the witness and the judge for several mutants: the slow tier
@pytest.mark.timeout(240)
def test_a_sample_of_the_mutation_benchmark_is_killed(tmp_path):
    """Five mutants of the suite's layer_norm, one per fault class the kernel offers cheaply, each witnessed wrong
    and each killed; the kernel as written is `ok`.  The precision fault (its output stored in float16, error
    ~3e-4, inside the `tf32` class's 1e-3) passed before the judge measured the outputs' width."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import mutation

    operators = ["drop_epsilon", "bound_short", "identity_other_zero_to_one", "swap_strides", "store_fp16"]
    args = ["--only", "suite:layer_norm", "--no-honest", "--sites", "1", "--witness-seeds", "1"]
    args += [f"--operator={op}" for op in operators] + ["--out", str(tmp_path / "mutation.json")]
    report = mutation.main(args)
    assert sorted(m["operator"] for m in report.mutants) == sorted(operators)
    assert all(m["witness"] == "wrong" for m in report.mutants), report.mutants
    assert report.summary["overall"]["kill_rate"] == 1.0, report.summary["survivors"]
    assert report.summary["false_rejections"]["refused"] == []


def test_the_domain_and_the_relative_norm_follow_the_reference():
    """A trial on whose inputs the reference itself gives NaN (negated probabilities) left the problem's domain;
    a trial whose outputs shrank (log-probabilities x 1e-3) has its relative-norm bound loosened by as much."""
    from tritongym.core.worker.distributions import OutputScale, out_of_domain, trial_scales

    scales = [
        [OutputScale(0.2, 0)],
        [OutputScale(0.001, 0)],  # scaled down: outputs 200x smaller
        [OutputScale(None, 1)],  # negated: the reference's one output is NaN
        [OutputScale(0.8, 0)],  # scaled up
    ]
    assert out_of_domain(scales) == [False, False, True, False]
    assert trial_scales(scales) == [(1.0, 1.0), (1.0, pytest.approx(200.0)), (1.0, 1.0), (pytest.approx(4.0), 1.0)]
    # a reference NaN on the problem's own inputs too is no sign of a domain left
    assert out_of_domain([[OutputScale(1.0, 3)], [OutputScale(1.0, 3)], [OutputScale(1.0, 3)]]) == [False] * 3


KL_DIV = '''
"""KL divergence of probabilities q from log-probabilities p, batchmean (Liger-Kernel's kl_div, small)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

M = 4
N = 32


class Model(nn.Module):
    def forward(self, p, q):
        return F.kl_div(p, q, reduction="batchmean")


def get_inputs():
    return [torch.log_softmax(torch.randn(M, N), -1), torch.softmax(torch.randn(M, N), -1)]


def get_init_inputs():
    return []
'''

KL_DIV_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def kl_div_rows(p_ptr, q_ptr, out_ptr, n_cols, inv_rows, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    p = tl.load(p_ptr + row * n_cols + offs, mask=mask, other=0.0)
    q = tl.load(q_ptr + row * n_cols + offs, mask=mask, other=0.0)
    # a target of 0 contributes 0 (as torch's xlogy): Liger writes it as a where on y > 0
    term = tl.where(q > 0, q * (tl.log(q) - p), 0.0)
    tl.atomic_add(out_ptr, tl.sum(term, axis=0) * inv_rows)


class ModelNew(torch.nn.Module):
    def forward(self, p, q):
        rows, cols = p.shape
        out = torch.zeros((), device=p.device, dtype=torch.float32)
        kl_div_rows[(rows,)](p, q, out, cols, 1.0 / rows, BLOCK=triton.next_power_of_2(cols))
        return out
"""


def test_an_honest_kernel_is_not_held_to_the_answer_outside_the_problems_domain():
    """Negated probabilities: torch's KL divergence is NaN, Liger-Kernel's (a where on q > 0) a number; it was
    `incorrect` ("NaN where the reference has a number") on an H200.  The negated trial is not judged now, and the
    verdict says so; a kernel wrong on the problem's own inputs is still `incorrect`."""
    from tritongym.core.problems import parse_problem

    problem = parse_problem(KL_DIV, "kl_div_domain", "test")
    wrong = KL_DIV_KERNEL.replace("q * (tl.log(q) - p)", "q * (tl.log(q) + p)")
    config = EvalConfig(backend="triton-cpu", trials=3, seed=5)
    with api.make_evaluator(config, registry=False) as evaluator:
        honest, broken = evaluator.evaluate_many(
            [(Candidate(source=KL_DIV_KERNEL), problem), (Candidate(source=wrong), problem)]
        )
    assert honest.status == Status.ok, honest.message
    assert "1 more not judged: the reference gives NaN or inf on inputs negated" in honest.message
    assert broken.status == Status.incorrect, broken.message


def test_the_pool_carries_a_trial_out_of_the_domain_into_its_evidence():
    """The keeper marks the trial (`ReferenceRecord.planned`); the pool builds each trial's evidence from it. It
    dropped the mark, and on an H200 Liger's KL divergence stayed `incorrect` on negated probabilities."""
    from tritongym.core.sandbox.task_evidence import EvidenceAssembly

    assembly = EvidenceAssembly.__new__(EvidenceAssembly)
    assembly.planned = [TrialEvidence(seed=1, distribution="negated", out_of_domain=True)]
    assembly.prep = {"output_counts": [1]}
    trial = assembly._trial(0, {"n_outputs": 1}, [])
    assert trial.out_of_domain and trial.distribution == "negated"
