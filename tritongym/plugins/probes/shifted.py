"""The `shifted` probe: the forward on the first trial's inputs with every floating input moved up by `SHIFT`.

Many operations do not change when their inputs move by a constant (softmax, log_softmax, layer norm, a
cross-entropy's logits), and their honest kernels subtract the row's maximum or mean first, so that a shift never
reaches `exp`.  A kernel that skips that step (one read of the row fewer) is exact on the judge's inputs, randn
times a few (logits near 50 at most), and overflows float32 past 88: found red-teaming, every trial passed.  The
probe's trusted half calls the reference on the same inputs, shifted and not, and says per output whether the
shift left it unchanged and finite; the check (`plugins/checks/overflow.py`) then asks the candidate only for
finite outputs there, so a kernel that loses a little precision at large inputs (a one-pass variance) still passes.

The two functions run in different processes (the candidate's worker; the keeper, or the CPU worker's parent) and
answer JSON: per output, its element count and how many are not finite (candidate), or whether it is invariant and
finite (reference).
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import Probe

SHIFT = 100.0
"""exp(100) overflows float32 (its largest finite exp argument is about 88.7), and 100 is exact in float16 too."""

LARGEST_BYTES = 1 << 30
"""Reference outputs larger than this together are not judged (two more copies would be held in the keeper)."""

INVARIANT_RTOL = 1e-2
"""How far (relative to the output's largest magnitude) the reference's shifted answer may move and still count as
unchanged: moving a float32 input of order 1 by 100 rounds it to about 1e-5."""


def _shifted(inputs: list) -> list:
    import torch

    return [x + SHIFT if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def _outputs(out) -> list:
    import torch

    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if isinstance(o, torch.Tensor)]


def candidate_side(model, inputs: list) -> dict:
    """The candidate's outputs on shifted inputs: per output, its element count and its non-finite elements."""
    import torch

    with torch.no_grad():
        outs = _outputs(model(*_shifted(inputs)))
    return {
        "numel": [int(o.numel()) for o in outs],
        "nonfinite": [int((~torch.isfinite(o)).sum()) if o.is_floating_point() else 0 for o in outs],
    }


def reference_side(model, inputs: list) -> dict:
    """Per output of the reference: whether shifting the inputs leaves it unchanged (`INVARIANT_RTOL`) and finite.

    Outputs over `LARGEST_BYTES` together are not judged (all False: the check passes them): the keeper of a
    full-size KernelBench problem would hold two more copies of an output of gigabytes.  The comparison reads the
    outputs a chunk at a time, in float64."""
    import torch

    with torch.no_grad():
        base = _outputs(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
        if sum(o.numel() * o.element_size() for o in base) > LARGEST_BYTES:
            return {"invariant": [False] * len(base), "outputs": len(base), "skipped": "outputs too large"}
        moved = _outputs(model(*_shifted(inputs)))
        invariant = [_unchanged(b, m) for b, m in zip(base, moved)]
    return {"invariant": invariant, "outputs": len(moved)}


def _unchanged(base, moved) -> bool:
    """Both finite, and `moved` within `INVARIANT_RTOL` of `base`'s largest magnitude everywhere."""
    import torch

    if base.shape != moved.shape or base.dtype != moved.dtype or not base.is_floating_point() or base.numel() == 0:
        return False
    largest, furthest = 0.0, 0.0
    for b, m in zip(base.reshape(-1).split(1 << 22), moved.reshape(-1).split(1 << 22)):
        b, m = b.double(), m.double()
        if not (torch.isfinite(b).all() and torch.isfinite(m).all()):
            return False
        largest = max(largest, float(b.abs().max()))
        furthest = max(furthest, float((m - b).abs().max()))
    return furthest <= INVARIANT_RTOL * max(largest, 1e-12)


class ShiftedProbe(Probe):
    """The forward on the first trial's inputs moved up by `SHIFT`, and the reference's answer whether that
    changes anything."""

    name = "shifted"
    target = "tritongym.plugins.probes.shifted:candidate_side"
    reference = "tritongym.plugins.probes.shifted:reference_side"


@hookimpl
def register_probes(register):
    register(ShiftedProbe)
