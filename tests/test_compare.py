"""`compare_output`: the numbers one comparison reports, worked by hand, in one pass and across chunks."""

import math

import pytest
import torch

from tritongym.core.measure import compare
from tritongym.core.measure.compare import compare_output
from tritongym.core.worker_task import Tolerance

TOL = {"torch.float32": Tolerance(atol=0.1, rtol=0.0, rel_norm=0.0)}


@pytest.mark.parametrize("chunk", [1 << 25, 3, 1])
def test_mismatches_errors_and_nan_are_counted_across_chunks(monkeypatch, chunk):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", chunk)
    out = torch.tensor([1.0, 2.0, 3.0, float("nan"), float("inf")])
    ref = torch.tensor([1.0, 2.5, 3.0, 4.0, float("inf")])
    result = compare_output(0, out, ref, TOL)
    assert result.mismatched == 2  # 2 against 2.5 (beyond atol 0.1), NaN against 4; inf against inf matches
    assert result.max_abs_err == pytest.approx(0.5)  # over the positions finite on both sides: 0, 1, 2
    assert result.mean_abs_err == pytest.approx(0.5 / 3)
    assert result.rel_norm_err == pytest.approx(0.5 / math.sqrt(1 + 6.25 + 9))
    assert result.note == "NaN where the reference has a number (or the reverse)"


def test_a_match_within_tolerance_reports_no_mismatch_and_no_note():
    out = torch.tensor([[1.05, -2.0], [0.0, 7.0]])
    ref = torch.tensor([[1.0, -2.0], [0.0, 7.0]])
    result = compare_output(1, out, ref, TOL)
    assert result.mismatched == 0 and result.note in (None, "")
    assert result.max_abs_err == pytest.approx(0.05, rel=1e-5)


def test_nothing_finite_leaves_the_errors_unset():
    out = torch.tensor([float("nan"), float("nan")])
    ref = torch.tensor([float("nan"), float("inf")])
    result = compare_output(0, out, ref, TOL)
    assert result.mismatched == 1  # NaN against NaN matches; NaN against inf does not
    assert result.max_abs_err is None and result.mean_abs_err is None


def test_the_error_against_gold_is_a_norm_ratio_over_finite_positions():
    from tritongym.core.measure.compare import rel_err

    values = torch.tensor([1.0, 2.0, float("nan"), 4.0])
    gold = torch.tensor([1.0, 2.5, 3.0, 4.0], dtype=torch.float64)
    assert rel_err(values, gold) == pytest.approx(0.5 / math.sqrt(1 + 6.25 + 16))
    assert rel_err(torch.zeros(2), torch.zeros(2, dtype=torch.float64)) is None
    assert rel_err(torch.ones(2), torch.zeros(2, dtype=torch.float64)) == float("inf")
    assert rel_err(torch.tensor([float("nan")]), torch.tensor([1.0], dtype=torch.float64)) is None


@pytest.mark.parametrize("chunk", [1 << 25, 2])
def test_integers_are_counted_across_chunks_too(monkeypatch, chunk):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", chunk)
    out = torch.tensor([[1, 2, 3], [4, 5, 6]])
    ref = torch.tensor([[1, 0, 3], [4, 5, 0]])
    assert compare_output(0, out, ref, TOL).mismatched == 2


def test_a_reference_kept_elsewhere_is_compared_as_on_the_device_it_stands_for():
    """The keeper's parked outputs stay in host memory and are brought over a chunk at a time (`ref_device`):
    the comparison reads as if the reference were on that device; an output elsewhere is a device mismatch."""
    out = torch.tensor([1.0, 2.0, 3.5])
    ref = torch.tensor([1.0, 2.0, 3.0])
    kept = compare_output(0, out, ref, TOL, ref_device="cpu")
    assert kept.ref_device == "cpu" and kept.mismatched == 1 and kept.max_abs_err == pytest.approx(0.5)
    assert kept == compare_output(0, out, ref, TOL)
    elsewhere = compare_output(0, out.to("meta"), ref, TOL, ref_device="cpu")
    assert (
        elsewhere.device == "meta" and elsewhere.ref_device == "cpu" and elsewhere.max_abs_err is None
    )  # not compared
