"""An index output (topk's, argmax's) is compared exactly, and a refusal says so in its own words: "elements
outside tolerance; non-finite values" (the float wording, with no error to size) read as if the kernel had
written NaN where it had returned two other indices."""

import torch

from tritongym.core.measure.compare import compare_output
from tritongym.core.models import TrialEvidence
from tritongym.core.verdict import judge_trials
from tritongym.core.worker_task import Tolerance

TOLERANCES = {"torch.float32": Tolerance(atol=1e-5, rtol=1e-5, rel_norm=1e-4)}


def judged(outputs: list[torch.Tensor], refs: list[torch.Tensor]):
    compared = [compare_output(i, out, ref, TOLERANCES) for i, (out, ref) in enumerate(zip(outputs, refs))]
    trial = TrialEvidence(seed=7, late=True, outputs=compared, n_outputs=len(outputs), ref_n_outputs=len(refs))
    return judge_trials([trial])


def test_two_swapped_indices_are_named_as_values_that_differ_not_as_non_finite_errors():
    x = torch.randn(4, 64)
    values, indices = torch.topk(x, 8)
    swapped = indices.clone()
    swapped[2, [3, 4]] = swapped[2, [4, 3]]
    judgement = judged([values, swapped], [values, indices])
    assert not judgement.correct
    assert "output 1: 2 of 32 values differ (torch.int64, compared exactly)" in judgement.message, judgement.message
    assert "non-finite" not in judgement.message
    assert judged([values, indices.clone()], [values, indices]).correct


def test_a_float_output_keeps_its_error_sizes():
    ref = torch.randn(16)
    judgement = judged([ref + 1.0], [ref])
    assert "16 of 16 elements outside tolerance" in judgement.message and "max abs error 1" in judgement.message
