"""Index outputs at ties: `torch.topk`, `sort`, `max(dim)` and `argmax` return indices, compared exactly, and where
two input values are equal either index is an answer (`torch.topk` leaves the order of equal values unspecified).

Float32 values drawn on a GPU tie among a 4096-wide row's top eight in a few input sets in a hundred: the field
corpus's FlagGems topk was refused once in five repeats for two swapped indices at a tie.  An index
output that differs from the reference's only where the values both point to are equal, along one dimension of a
floating input, with no index repeated where the reference repeats none, is the same answer.
"""

from __future__ import annotations

import torch

MAX_ELEMENTS = 1 << 26
"""Index outputs larger than this are not examined (a tie explanation gathers from the input for each element)."""


def could_be_ties(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Whether `out` is an index output small enough to be examined (asked before the inputs are made again)."""
    return not (out.is_floating_point() or out.is_complex() or out.dtype == torch.bool or ref.numel() > MAX_ELEMENTS)


def tied_mismatches(out: torch.Tensor, ref: torch.Tensor, inputs: list) -> int:
    """How many of `out`'s differences from `ref` are ties, all or nothing: the number of differing elements when
    every one of them points, along one dimension of one floating input, to a value equal to the one the
    reference's index points to; 0 otherwise."""
    if not could_be_ties(out, ref):
        return 0
    ref = ref.to(out.device)
    differ = out != ref
    count = int(differ.sum())
    if not count:
        return 0
    for x in inputs:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.device != out.device:
            continue
        for o, r, d, along in _alignments(out, ref, x):
            if _ties(o, r, d, along):
                return count
    return 0


def _alignments(out, ref, x):
    """Each way `out` can index `x` along one dimension `d`: same rank (topk, sort), one dimension fewer (argmax,
    max(dim) without keepdim), or one index into the flattened input (argmax without dim)."""
    if out.numel() == 1 and x.dim() != out.dim():
        yield out.reshape(1), ref.reshape(1), 0, x.reshape(-1)
        return
    for d in range(x.dim()):
        others = [n for j, n in enumerate(x.shape) if j != d]
        if out.dim() == x.dim() and [n for j, n in enumerate(out.shape) if j != d] == others:
            yield out, ref, d, x
        elif out.dim() == x.dim() - 1 and list(out.shape) == others:
            yield out.unsqueeze(d), ref.unsqueeze(d), d, x


def _ties(out, ref, d: int, x: torch.Tensor) -> bool:
    n = x.shape[d]
    if bool(((out < 0) | (out >= n)).any()):
        return False
    got = x.gather(d, out.long())
    want = x.gather(d, ref.long())
    if not bool(((got == want) | (got.isnan() & want.isnan())).all()):
        return False
    if out.shape[d] > 1:  # topk and sort name each element once: a tie is no licence to name one twice
        repeats = (out.sort(dim=d).values.diff(dim=d) == 0).any()
        if bool(repeats) and not bool((ref.sort(dim=d).values.diff(dim=d) == 0).any()):
            return False
    return True
