"""The `overflow` check's `shifted` probe (`plugins/probes/shifted.py`), its two halves as plain functions: the
reference's says which outputs a shift of the inputs leaves unchanged, the candidate's counts non-finite elements.
End to end, `tests/hacks/test_hacks.py`'s `unsafe_softmax_nomax` case is refused by it and every honest suite
solution passes it (`tests/test_suite.py`, `tests/hacks/test_honest.py`)."""

from __future__ import annotations

import torch

from tritongym.plugins.probes import shifted


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class UnsafeSoftmax(torch.nn.Module):
    def forward(self, x):
        e = torch.exp(x)  # no max subtraction
        return e / e.sum(dim=-1, keepdim=True)


class LayerNormAndRelu(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:]), torch.relu(x)


def test_the_reference_half_finds_the_outputs_a_shift_leaves_unchanged():
    x = torch.randn(8, 300) * 3
    assert shifted.reference_side(Softmax(), [x]) == {"invariant": [True], "outputs": 1}
    # layer norm moves by ~1e-5 (the shifted input's rounding), within INVARIANT_RTOL; relu moves by 100
    assert shifted.reference_side(LayerNormAndRelu(), [x])["invariant"] == [True, False]
    # an answer that is not finite once shifted is not "unchanged": the unsafe softmax as a reference judges nothing
    assert shifted.reference_side(UnsafeSoftmax(), [x])["invariant"] == [False]
    integers = torch.arange(300).reshape(3, 100)
    assert shifted._shifted([integers, 2.0])[0] is integers  # only floating tensors move


def test_the_reference_half_skips_outputs_too_large_to_hold_twice(monkeypatch):
    monkeypatch.setattr(shifted, "LARGEST_BYTES", 1000)
    answer = shifted.reference_side(Softmax(), [torch.randn(8, 300)])
    assert answer["invariant"] == [False] and answer["skipped"] == "outputs too large"


def test_the_candidate_half_counts_what_overflows():
    x = torch.randn(8, 300) * 3
    assert shifted.candidate_side(UnsafeSoftmax(), [x])["nonfinite"][0] > 0
    assert shifted.candidate_side(Softmax(), [x]) == {"numel": [2400], "nonfinite": [0]}
    assert torch.isfinite(UnsafeSoftmax()(x)).all()  # unshifted, the unsafe softmax is right: only the shift shows it
