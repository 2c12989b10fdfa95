"""Where a tensor may hold an output's values, sampled at given positions: the forms the `precomputed` probe's watch
reads in each launch argument (`worker/prior_watch.py`, ARCHITECTURE.md §3).

An argument may hold an output (of trial 0's shape and dtype, `OutputSpec`) in more than its own form, and a
candidate whose Triton only moves an answer torch computed picks whichever form the watch does not read (`layouts`):
its elements in their logical order, read as their own floating dtype and, for any other dtype, as the output's bits
(an `int32` view of a float32 answer is still the answer); its leading window along its own dims or any order of
them (a C whose rows are padded, a transposed answer); its bytes from its first element on, read as the output's
dtype (a `uint8` or `float16` view of the answer, the answer in the first rows of a larger workspace).  Each form is
read at the output's own flat positions (where the keeper keeps the reference's values), so the trusted side
compares it as it compares any sample.

Cost: the watch reads before and after every launch of an own kernel in the watched call, which every evaluation
makes.  Each form is a gather of a few hundred elements where they lie (no copy of the argument, however it is
strided) and `sampled` moves one argument's forms to the host at once, so a launch costs a few small gathers per
argument, never a read of the operands, weights or workspaces themselves, which would double the memory traffic of
that call.  Pure reads of tensors with no state of the watch's, beside `tensors.py`'s helpers of the worker; torch
is imported inside each function, as there.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OutputSpec:
    """One floating output the watch looks for, as trial 0 returned it: the keeper keeps the reference's values at
    the watched positions of the same output of the watched call (`probes.AnswerSamples`)."""

    shape: tuple[int, ...]
    dtype: Any

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def output_specs(outputs) -> list[OutputSpec]:
    """The `OutputSpec` of each floating, non-empty tensor among `outputs`, each spec once."""
    import torch

    specs = [
        OutputSpec(tuple(o.shape), o.dtype)
        for o in outputs
        if type(o) is torch.Tensor and o.is_floating_point() and o.numel() > 0
    ]
    return list(dict.fromkeys(specs))


def launch_tensors(value, label: str):
    """(label, tensor) for each tensor a launch argument hands a kernel: a tensor or `nn.Parameter` (detached), the
    tensor under Triton's `reinterpret` wrapper (its bytes, read as any dtype, are what the kernel reads), each
    tensor of a tuple or list."""
    import torch

    if isinstance(value, torch.Tensor):
        yield label, value.detach()
    elif isinstance(value, tuple | list):
        for j, item in enumerate(value):
            yield from launch_tensors(item, f"{label}[{j}]")
    else:
        try:
            from triton.runtime.jit import TensorWrapper
        except ImportError:
            return
        if isinstance(value, TensorWrapper) and isinstance(value.base, torch.Tensor):
            yield f"{label} (reinterpreted)", value.base.detach()


def _as(tensor, dtype):
    """`tensor`'s storage from its first element on, as a flat tensor of `dtype`; None where that byte is not
    aligned to `dtype`.  Made with `set_`, which allocates nothing and writes nothing."""
    import torch

    start = tensor.storage_offset() * tensor.element_size()
    if start % dtype.itemsize:
        return None
    storage = tensor.untyped_storage()
    count = (storage.nbytes() - start) // dtype.itemsize
    return torch.empty(0, dtype=dtype, device=tensor.device).set_(storage, start // dtype.itemsize, (count,), (1,))


def layouts(tensor, spec: OutputSpec, positions):
    """(form, values) for each form in which `tensor` could hold output `spec`: values at its watched `positions`
    (on the tensor's device), in the tensor's own dtype or the output's."""
    import torch

    if tensor.layout != torch.strided or tensor.device.type == "meta":
        return
    n = spec.numel
    views = [("", tensor)] if tensor.is_floating_point() else []
    if tensor.dtype != spec.dtype:
        try:
            views.append((f" (its bits as {_name(spec.dtype)})", tensor.view(spec.dtype)))
        except RuntimeError:  # an element size the strides cannot take: its bytes below still are
            pass
    for form, view in views:
        if view.numel() == n:
            yield form, _logical(view, positions)
        yield from _windows(view, spec, positions, form)
    flat = _as(tensor, spec.dtype)
    same = tensor.is_contiguous() and tensor.dtype == spec.dtype and tensor.numel() == n  # its elements, above
    if flat is not None and flat.numel() >= n and not same:
        yield f" (its bytes as {_name(spec.dtype)})", flat[positions]


def _windows(view, spec: OutputSpec, positions, form: str):
    """`view`'s elements where it holds the output in its leading corner, along its own dims or any order of them
    (unit dims set aside on both sides): the answer written into a C whose rows are padded, or transposed, or in an
    attention layout that only a permuted copy turns into the output's.  At most 4 dims are permuted (24 orders)."""
    import itertools

    want = [s for s in spec.shape if s != 1]
    have = view.squeeze() if view.dim() else view
    if not want or have.dim() != len(want):
        return
    coords = unravel(positions, tuple(want))
    orders = itertools.permutations(range(len(want))) if len(want) <= 4 else [tuple(range(len(want)))]
    for order in orders:
        if list(have.shape) == want and order == tuple(range(len(want))):
            continue  # its elements in their logical order: sampled as such
        if all(have.shape[d] >= size for d, size in zip(order, want)):
            where = "its leading window" if order == tuple(range(len(want))) else f"its dims in order {order}"
            yield f"{form} ({where} of {list(have.shape)})", have.permute(order)[coords]


def _logical(view, positions):
    """`view`'s elements at flat `positions` of its logical order, gathered where they lie (no contiguous copy)."""
    return view.reshape(-1)[positions] if view.dim() < 2 else view[unravel(positions, tuple(view.shape))]


def unravel(positions, shape: tuple[int, ...]) -> tuple:
    """The coordinates of flat `positions` in a C-ordered `shape`, one index tensor per dim: `torch.unravel_index`'s
    answer without its first call's import of `torch.fx.experimental.symbolic_shapes` and sympy: 0.7 s of CPU in
    every fresh worker, under the GPU's shared hold (a warm softmax took 3.7 s on an H200 with it, 2.2 s without)."""
    coords = []
    for size in reversed(shape):
        coords.append(positions % size)
        positions = positions // size
    return tuple(reversed(coords))


def _name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def fingerprint(values) -> bytes:
    """A key of a sample's exact values (float64 on the host)."""
    return hashlib.blake2b(values.numpy().tobytes(), digest_size=16).digest()


def trivial(values) -> bool:
    """No finding can come of these values: nothing finite (poison, NaN) or one value throughout (a zeroed
    accumulator; `probes.prior_answers` passes constants over too)."""
    return not bool(values.isfinite().any()) or bool(values.max() == values.min())


def geometry(tensor) -> tuple:
    """What a view of a storage is: its offset, shape, strides and dtype."""
    return (tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)


def rebuilt(tensor, view: tuple):
    """The view `view` (a `geometry`) over `tensor`'s storage, made with `set_`; None where it is empty or would
    reach past the storage (the geometry of another storage since freed at the same address)."""
    import torch

    offset, shape, stride, dtype = view
    if not all(shape):
        return None
    last = offset + sum((n - 1) * step for n, step in zip(shape, stride))
    storage = tensor.untyped_storage()
    if offset < 0 or (last + 1) * dtype.itemsize > storage.nbytes():
        return None
    return torch.empty(0, dtype=dtype, device=tensor.device).set_(storage, offset, shape, stride)


def sampled(tensor, specs: list[OutputSpec], where) -> list[tuple[OutputSpec, str, Any]]:
    """(spec, form, values as float64 on the host) for each output of `specs` and each form `tensor` could hold it in,
    at `where(numel, device)`'s positions: gathered on its device, moved to the host at once."""
    import torch

    found = [
        (spec, form, values.to(torch.float64))
        for spec in specs
        for form, values in layouts(tensor, spec, where(spec.numel, tensor.device))
    ]
    if not found:
        return []
    host = torch.cat([values for _, _, values in found]).to("cpu").split([len(v) for _, _, v in found])
    return [(spec, form, values) for (spec, form, _), values in zip(found, host)]
