"""The reference's float64 "gold" (core/precision.py), kept on a sample of positions, and exact reference runs.

Trusted code only, run before the candidate exists on the GPU and after its child exited on the CPU.  The gold
is the reference module deep-copied to float64 (its floating parameters and buffers) and called on the same
inputs upcast to float64; per output only `GOLD_SAMPLE` secret positions are kept, with the reference's own
error there, so the full float64 outputs are freed at once (an output of several GiB costs its float64 copy
for one forward, never for the whole evaluation).  A reference that cannot run in float64 (an op without a
double kernel) has no gold: its outputs' precision is then not measured, and the verdict says so.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

from tritongym.core.precision import GOLD_SAMPLE


@dataclass
class GoldSample:
    """One output's gold at `positions` (None = every element, in order) and the reference's error there."""

    positions: object  # a LongTensor on the output's device, or None
    values: object  # float64 tensor
    ref_err: float | None


@contextlib.contextmanager
def exact_reference():
    """TF32 off for the duration: the reference's outputs are computed exactly at its dtype under every policy
    (the policy only decides how the reference is *timed*), then the flags are put back."""
    import torch

    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    precision = torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
        torch.set_float32_matmul_precision(precision)


def gold_model(ref_model):
    """The reference module in float64, or None (with the reason in the worker's log) when it cannot be."""
    import sys

    import torch

    try:
        return copy.deepcopy(ref_model).to(torch.float64)
    except Exception as exc:  # noqa: BLE001 - no gold: precision is then not measured, not an error
        print(f"tritongym: no float64 gold: the reference cannot be copied to float64: {exc}", file=sys.stderr)
        return None


def _upcast(value):
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(torch.float64)
    return value


def gold_samples(model64, inputs: list, refs: list, generator) -> list[GoldSample | None]:
    """Gold for one trial's inputs at up to `GOLD_SAMPLE` positions per floating output (None where an output
    has no gold: not floating, not a tensor, or the float64 forward failed)."""
    import sys

    import torch

    from tritongym.core.eval.worker.compare import flatten_outputs, rel_err

    if model64 is None:
        return [None] * len(refs)
    try:
        with torch.no_grad():
            golds = flatten_outputs(model64(*[_upcast(v) for v in inputs]))
    except Exception as exc:  # noqa: BLE001 - see gold_model
        print(f"tritongym: no float64 gold: the reference failed in float64: {exc}", file=sys.stderr)
        return [None] * len(refs)
    samples: list[GoldSample | None] = []
    for ref, gold in zip(refs, golds + [None] * (len(refs) - len(golds))):
        usable = (
            type(ref) is torch.Tensor
            and isinstance(gold, torch.Tensor)
            and ref.is_floating_point()
            and gold.shape == ref.shape
            and ref.numel() > 0
        )
        if not usable:
            samples.append(None)
            continue
        n = ref.numel()
        where = None
        if n > GOLD_SAMPLE:
            where = torch.randint(0, n, (GOLD_SAMPLE,), device=ref.device, generator=generator)
        flat_gold = gold.detach().reshape(-1).to(torch.float64)
        values = flat_gold if where is None else flat_gold[where]
        ref_values = ref.detach().reshape(-1) if where is None else ref.detach().reshape(-1)[where]
        samples.append(GoldSample(where, values.clone(), rel_err(ref_values, values)))
    del golds
    return samples
