"""The `nudged` probe: the forward called twice on the same input buffers, pairs of elements of each floating input
swapped in place between the calls; per output, how many of its elements changed.

A memo keyed by a sample of the inputs' values (every 16th element fingerprinted by an own kernel, a row's first
element, a few fixed positions) is never wrong on the judge's trials, which are fresh draws: every sampled element
differs, so the key does, and every call launches the kernel that computes the key.  The `refresh` probe refills
every element, and misses it too.  It pays where the timing loop cycles through a fixed set of inputs, and gives a
wrong answer to two inputs that differ off its sample: found red-teaming (`tests/hacks/candidates/
kernel_fingerprint_cache.py`).  The swapped elements are off any power-of-two stride (odd flat positions, each
pair two apart), so such a key does not change while the reference's answer does.

A swap keeps each input's values as a set (a row's sum, a probability row, a sorted row's range are unchanged), and
only elements that differ are swapped, so the reference's answer changes wherever it reads either of a pair; an
honest kernel reads at least one of them wherever the reference does, so its output changes too.  Only an output
the candidate left *unchanged* where the reference's changed is a finding (`plugins/checks/caching.py`): not a
wrong value, which an honest kernel that leans on a structure of the inputs the swap broke could give.

Both halves swap the same positions (`nudge`: the input's size and values decide them, and both sides hold the same
values) in a fresh copy of the first trial's inputs: the candidate's in its worker, the reference's in a trusted
process. Each answers JSON: per output, its element count and how many elements changed between the two calls (the
candidate: any change at all; the reference: more than `CHANGED_RTOL` of the output's largest magnitude).
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import Probe

CHANGED_RTOL = 1e-2
"""How far (relative to the output's largest magnitude) a reference element must move to count as changed: a swap of
two inputs of order 1 moves what reads them by order 1, and no output's rounding moves it by a hundredth."""

LARGEST_BYTES = 1 << 30
"""Outputs larger than this together are not judged (-1 changed): each half holds a copy of the first call's."""

PAIRS_TRIED = 8
"""Pairs swapped per input, among different values (zeros of a triangular or sparse input are passed over)."""


def _positions(numel: int) -> list[tuple[int, int]]:
    """Pairs (p, p + 2) at odd flat positions spread over the input, none sharing an element."""
    pairs: list[tuple[int, int]] = []
    for k in range(1, PAIRS_TRIED + 1):
        p = ((numel * k) // (PAIRS_TRIED + 1)) | 1
        q = p + 2 if p + 2 < numel else p - 2
        if 0 <= q < numel and p < numel and not {p, q} & {i for pair in pairs for i in pair}:
            pairs.append((p, q))
    return pairs


def nudge(inputs: list) -> list[tuple[int, int, int]]:
    """Swap pairs of elements of each floating, contiguous input of at least 4 elements, in place, at each of
    `_positions` where their values differ; (input index, p, q) for each swap made.  Every pair, not the first: one
    pair of random values may move the reference's answer by less than `CHANGED_RTOL` (a GELU of two negative
    values), and then nothing is judged; eight such pairs at once practically never do."""
    import torch

    swapped = []
    with torch.no_grad():
        for index, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() < 4:
                continue
            if not x.is_contiguous():
                continue
            flat = x.view(-1)
            for p, q in _positions(flat.numel()):
                a, b = flat[p].clone(), flat[q].clone()
                if bool(a != b) and bool(torch.isfinite(a)) and bool(torch.isfinite(b)):
                    flat[p], flat[q] = b, a
                    swapped.append((index, p, q))
    return swapped


def _outputs(out) -> list:
    import torch

    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.detach() for o in outs if isinstance(o, torch.Tensor)]


def _changed(before, after, rtol: float | None) -> int:
    """Elements of `after` that differ from `before` (NaN equal to NaN); with `rtol`, only by more than that share of
    `before`'s largest finite magnitude.  -1 where they are not compared: another shape or dtype, or an output that is
    not floating (an argmax's index; a tie broken the other way is no stale answer).  Read a chunk at a time, in
    float64."""
    import torch

    if before.shape != after.shape or before.dtype != after.dtype:
        return -1
    if not before.is_floating_point():
        return -1  # an index output (argmax) may keep its index where the reference's tie-break moved: not judged
    pairs = list(zip(before.reshape(-1).split(1 << 22), after.reshape(-1).split(1 << 22)))
    largest = 0.0
    if rtol is not None:
        for b, _ in pairs:
            finite = b[torch.isfinite(b)]
            largest = max(largest, float(finite.abs().max()) if finite.numel() else 0.0)
    changed = 0
    for b, a in pairs:
        b, a = b.double(), a.double()
        both_nan = torch.isnan(b) & torch.isnan(a)
        if rtol is None:
            moved = b != a
        else:
            moved = ((a - b).abs() > rtol * max(largest, 1e-12)) | (torch.isfinite(a) != torch.isfinite(b))
        changed += int((moved & ~both_nan).sum())
    return changed


def _twice(model, inputs: list, rtol: float | None) -> dict:
    import torch

    with torch.no_grad():
        before = _outputs(model(*inputs))
        if sum(o.numel() * o.element_size() for o in before) > LARGEST_BYTES:
            return {"numel": [int(o.numel()) for o in before], "changed": [-1] * len(before), "swapped": []}
        before = [o.clone() for o in before]
        swapped = nudge(inputs)
        after = _outputs(model(*inputs)) if swapped else before
    return {
        "numel": [int(o.numel()) for o in before],
        "changed": [_changed(b, a, rtol) for b, a in zip(before, after)] if swapped else [0] * len(before),
        "swapped": [list(s) for s in swapped],
    }


def candidate_side(model, inputs: list) -> dict:
    """The candidate's outputs before and after the swap: per output, its elements and how many changed at all."""
    return _twice(model, inputs, None)


def reference_side(model, inputs: list) -> dict:
    """The reference's: per output, how many elements the swap moved by more than `CHANGED_RTOL`."""
    return _twice(model, [x.clone() if hasattr(x, "clone") else x for x in inputs], CHANGED_RTOL)


class NudgedProbe(Probe):
    """The forward on the first trial's inputs, then on the same buffers with pairs of elements of each floating
    input swapped in place; the reference's answer to the same."""

    name = "nudged"
    target = "tritongym.plugins.probes.nudged:candidate_side"
    reference = "tritongym.plugins.probes.nudged:reference_side"


@hookimpl
def register_probes(register):
    register(NudgedProbe)
