"""The `caching` check's `nudged` probe (`plugins/probes/nudged.py`), its two halves as plain functions, and the
check's reading of them.  End to end, `tests/hacks/test_hacks.py`'s `kernel_fingerprint_cache` case is refused by it
and every honest kernel passes it (`tests/hacks/test_honest.py`, `tests/test_suite.py`)."""

from __future__ import annotations

import torch

from tritongym.core.models import Candidate, Evidence, ProbeCall
from tritongym.core.problems import load_problem
from tritongym.plugins.checks.caching import OutputCachingCheck
from tritongym.plugins.probes import nudged


class Gelu(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)


class StridedMemo(torch.nn.Module):
    """A memo keyed by every 16th element (the red team's sparse fingerprint, in plain torch)."""

    def __init__(self) -> None:
        super().__init__()
        self.memo: dict = {}

    def forward(self, x):
        key = tuple(x.reshape(-1)[::16].tolist())
        if key not in self.memo:
            self.memo[key] = torch.nn.functional.gelu(x)
        return self.memo[key]


class RowSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


class LowerTriangularMatmul(torch.nn.Module):
    """Reads only the lower triangle of `a`, as a kernel for triangular inputs may."""

    def forward(self, a, b):
        return torch.tril(a) @ b


def test_swaps_are_off_every_power_of_two_stride_and_between_different_values():
    x = torch.randn(4, 256)
    before = x.clone()
    swaps = nudged.nudge([x])
    assert len(swaps) == nudged.PAIRS_TRIED
    flat, was = x.view(-1), before.view(-1)
    for index, p, q in swaps:
        assert index == 0 and p % 2 == 1 and q % 2 == 1 and abs(p - q) == 2
        assert flat[p] == was[q] and flat[q] == was[p] and flat[p] != flat[q]
    assert len({i for _, p, q in swaps for i in (p, q)}) == 2 * len(swaps)  # no element in two pairs
    assert int((x != before).sum()) == 2 * len(swaps)
    ints, scalar, zeros = torch.arange(16), torch.tensor([1.0, 2.0]), torch.zeros(64)
    assert nudged.nudge([ints, scalar, zeros, 3.0]) == []  # no floats of 4+ elements that differ: nothing swapped


def test_swaps_in_a_triangular_input_move_values_the_triangle_holds():
    a = torch.tril(torch.randn(32, 32))
    for _, p, q in nudged.nudge([a]):
        assert a.view(-1)[p] != 0 or a.view(-1)[q] != 0  # two zeros of the upper triangle are passed over
    inputs = [torch.tril(torch.randn(32, 32)), torch.randn(32, 8)]
    honest = nudged.candidate_side(LowerTriangularMatmul(), [t.clone() for t in inputs])
    reference = nudged.reference_side(LowerTriangularMatmul(), [t.clone() for t in inputs])
    assert reference["changed"][0] > 0 and honest["changed"][0] > 0


def test_a_flat_stretch_of_the_reference_still_moves_somewhere():
    """One pair of two negative inputs barely moves a GELU (by less than CHANGED_RTOL): every pair is swapped, so the
    reference's answer moves somewhere whatever the draw (the fingerprint memo slipped through 1 run in ~10 before)."""
    for seed in range(50):
        x = torch.randn(7747, generator=torch.Generator().manual_seed(seed))
        assert nudged.reference_side(Gelu(), [x])["changed"][0] > 0, seed


def test_the_halves_count_what_changed():
    x = torch.randn(4, 256)
    reference = nudged.reference_side(Gelu(), [x.clone()])
    assert reference["numel"] == [1024] and 0 < reference["changed"][0] <= 2 * nudged.PAIRS_TRIED
    assert nudged.candidate_side(Gelu(), [x.clone()])["changed"] == [2 * nudged.PAIRS_TRIED]
    assert nudged.candidate_side(StridedMemo(), [x.clone()])["changed"] == [0]
    assert nudged.reference_side(RowSum(), [x.clone()])["changed"] == [0]  # a swap within a row: its sum stays


def _verdict(value: dict, reference: dict, error: str = ""):
    evidence = Evidence(probes=[ProbeCall(probe="nudged", trial=-1, value=value, reference=reference, error=error)])
    problem = load_problem("gelu")
    return OutputCachingCheck().judge(evidence, Candidate(source=""), problem)


def test_the_check_refuses_an_output_left_unchanged_where_the_reference_moved():
    x = torch.randn(4, 256)
    reference = nudged.reference_side(Gelu(), [x.clone()])
    stale = _verdict(nudged.candidate_side(StridedMemo(), [x.clone()]), reference)
    assert not stale.passed and "did not change at all" in stale.reason and "8 pairs" in stale.reason
    assert _verdict(nudged.candidate_side(Gelu(), [x.clone()]), reference).passed
    # the reference unchanged, a call that raised, or no reference answer: nothing to hold against the candidate
    assert _verdict({"changed": [0]}, {"changed": [0]}).passed
    assert _verdict({"changed": [0]}, reference, error="RuntimeError: boom").passed
    assert _verdict({"changed": [0]}, None).passed


def test_outputs_too_large_to_hold_twice_are_not_judged(monkeypatch):
    monkeypatch.setattr(nudged, "LARGEST_BYTES", 1000)
    x = torch.randn(4, 256)
    answer = nudged.candidate_side(StridedMemo(), [x.clone()])
    assert answer["changed"] == [-1] and answer["swapped"] == []
    assert _verdict(answer, nudged.reference_side(Gelu(), [x.clone()])).passed


class FirstArgmax(torch.nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=-1)


class LastArgmax(torch.nn.Module):
    """Breaks ties the other way, as an honest kernel may."""

    def forward(self, x):
        return x.shape[-1] - 1 - torch.argmax(x.flip(-1), dim=-1)


def test_index_outputs_are_not_judged():
    """Rows full of ties: a swap moves the first maximum, not the last, so an honest kernel that breaks ties the other
    way keeps its index where the reference's moved."""
    x = torch.randint(0, 3, (8, 64)).float()
    assert nudged.reference_side(FirstArgmax(), [x.clone()])["changed"] == [-1]
    answer = nudged.candidate_side(LastArgmax(), [x.clone()])
    assert answer["changed"] == [-1]
    assert _verdict(answer, nudged.reference_side(FirstArgmax(), [x.clone()])).passed
