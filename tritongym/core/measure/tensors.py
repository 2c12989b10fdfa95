"""Tensor helpers of the worker: moving, cloning and comparing values bit for bit, and what an output is sent as.

Imported by the task runner, the candidate's child, the probes and the compiled reference; torch is imported
inside each function so that importing this module stays cheap.
"""

from __future__ import annotations


def to_device(value, device):
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    return value


def clone_all(values):
    import torch

    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def sharing_memory(values: list, others: list) -> list[bool]:
    """For each of `values`, whether it is a tensor over the same memory as one of `others` (an output that is an
    input, or a view of one): a caller that refills `others` in place must copy those first."""
    import torch

    held = {v.untyped_storage().data_ptr() for v in others if type(v) is torch.Tensor}
    return [type(v) is torch.Tensor and v.untyped_storage().data_ptr() in held for v in values]


def same_value(a, b) -> bool:
    import torch

    if isinstance(b, torch.Tensor):
        if type(a) is not torch.Tensor or a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(torch.equal(a, b)) or (
            b.is_floating_point()
            and bool(torch.equal(a.isnan(), b.isnan()))
            and bool(torch.equal(a.nan_to_num(), b.nan_to_num()))
        )
    return True


def tensor_bytes(values) -> int:
    """Bytes held by the tensors among `values` (anything else weighs nothing)."""
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def plain_output(value):
    """A tensor output as sent to the judge; anything else only by the name of its type."""
    import torch

    if type(value) is torch.Tensor:
        return value.detach()
    return {"not_a_tensor": f"{type(value).__module__}.{type(value).__qualname__}"}


TIMING_INPUT_BYTES = 4 << 30  # what timing's pristine input sets may weigh together


def timing_inputs(make, n: int, budget: int = TIMING_INPUT_BYTES, least: int = 2) -> list[list]:
    """Timing's pristine sets, main trials 0, 1, ... (`make(k)`), as many as fit `budget` but `least` (two) when
    there are: between samples every buffer is refilled with another trial's values (a pointer-keyed cache goes
    stale).  One set (`least=1`) serves a trusted forward, the reference, where memory is short."""
    sets = [make(0)]
    per_set = max(tensor_bytes(sets[0]), 1)
    want = min(n, max(least, budget // per_set))
    while len(sets) < want:
        sets.append(make(len(sets)))
    return sets
