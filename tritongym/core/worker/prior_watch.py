"""The `precomputed` probe's eyes on the launches (`LaunchRecorder.watch`, ARCHITECTURE.md §4): before each launch of
an own kernel, what its tensor arguments already hold where an output would be, sampled for the trusted side
(`probes.prior_answers`), the only side that knows the answer.

An argument may hold an output (of trial 0's shape and dtype, `OutputSpec`) in more than its own form, and a
candidate whose Triton only moves an answer torch computed picks whichever form the watch does not read
(`_layouts`): its elements in their logical order, read as their own floating dtype and, for any other dtype, as
the output's bits (an `int32` view of a float32 answer is still the answer); its leading window along its own dims
or any order of them (a C whose rows are padded, a transposed answer); its bytes from its first element on, read as
the output's dtype (a `uint8` or `float16` view of the answer, the answer in the first rows of a larger workspace).
Each form is sampled at the output's own watched positions (`watched_positions`, where the keeper keeps
the reference's values), so the trusted side compares it as it compares any sample.

Cost: the watch runs before and after every launch of an own kernel in the watched call, which every evaluation
makes.  Each form is a gather of at most `POSITIONS` elements where they lie (no copy of the argument, however it is
strided) and one move to the host per argument, so a launch costs a few small gathers per argument, never a read of
the operands, weights or workspaces themselves, which would double the memory traffic of that call.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

POSITIONS = 256
"""Positions sampled per output and form: enough that 99% of them matching (`probes.prior_answers`) is no accident,
few enough that the gathers stay negligible beside any launch."""


def watched_positions(seed: int, numel: int):
    """The flat positions the watch samples in an output of `numel` elements (the keeper draws them alike)."""
    import torch

    generator = torch.Generator().manual_seed(seed + numel)
    return torch.randint(0, numel, (min(POSITIONS, numel),), generator=generator)


@dataclass(frozen=True)
class OutputSpec:
    """One floating output the watch looks for, as trial 0 returned it: the keeper keeps the reference's values at
    `watched_positions(seed, numel)` of the same output of the watched call (`probes.AnswerSamples`)."""

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


def _tensors(value, label: str):
    """(label, tensor) for each tensor a launch argument hands a kernel: a tensor or `nn.Parameter` (detached), the
    tensor under Triton's `reinterpret` wrapper (its bytes, read as any dtype, are what the kernel reads), each
    tensor of a tuple or list."""
    import torch

    if isinstance(value, torch.Tensor):
        yield label, value.detach()
    elif isinstance(value, tuple | list):
        for j, item in enumerate(value):
            yield from _tensors(item, f"{label}[{j}]")
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


def _layouts(tensor, spec: OutputSpec, positions):
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

    import torch

    want = [s for s in spec.shape if s != 1]
    have = view.squeeze() if view.dim() else view
    if not want or have.dim() != len(want):
        return
    coords = torch.unravel_index(positions, tuple(want))
    orders = itertools.permutations(range(len(want))) if len(want) <= 4 else [tuple(range(len(want)))]
    for order in orders:
        if list(have.shape) == want and order == tuple(range(len(want))):
            continue  # its elements in their logical order: sampled as such
        if all(have.shape[d] >= size for d, size in zip(order, want)):
            where = "its leading window" if order == tuple(range(len(want))) else f"its dims in order {order}"
            yield f"{form} ({where} of {list(have.shape)})", have.permute(order)[coords]


def _logical(view, positions):
    """`view`'s elements at flat `positions` of its logical order, gathered where they lie (no contiguous copy)."""
    import torch

    return view.reshape(-1)[positions] if view.dim() < 2 else view[torch.unravel_index(positions, view.shape)]


def written_storages(func, args: tuple, kwargs: dict) -> set[int]:
    """The storages (by data pointer) an aten op writes data into: its arguments marked `(a!)` in its schema (`out=`,
    in-place ops, `copy_`).  Ops that change only a tensor's view (`set_`, `t_`, `resize_`) write none, nor does a
    copy of a storage onto itself (Triton's interpreter hands each argument's storage back so after a launch)."""
    import torch

    schema = getattr(func, "_schema", None)
    if schema is None or torch.Tag.inplace_view in getattr(func, "tags", ()) or "resize" in schema.name:
        return set()
    if schema.name == "aten::copy_" and len(args) > 1 and _same_view(args[0], args[1]):
        return set()
    found = set()
    for i, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(argument.name)
        for tensor in value if isinstance(value, list | tuple) else [value]:
            if isinstance(tensor, torch.Tensor) and tensor.layout == torch.strided:
                found.add(tensor.untyped_storage().data_ptr())
    return found


def _same_view(a, b) -> bool:
    import torch

    return (
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and (a.storage_offset(), a.shape, a.stride(), a.dtype) == (b.storage_offset(), b.shape, b.stride(), b.dtype)
    )


def _name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def fingerprint(values) -> bytes:
    """A key of a sample's exact values (float64 on the host)."""
    return hashlib.blake2b(values.numpy().tobytes(), digest_size=16).digest()


def _trivial(values) -> bool:
    """No finding can come of these values: nothing finite (poison, NaN) or one value throughout (a zeroed
    accumulator; `probes.prior_answers` passes constants over too)."""
    return not bool(values.isfinite().any()) or bool(values.max() == values.min())


class PriorAnswerWatch:
    """The `precomputed` probe's watch (`LaunchRecorder.watch`): samples, before each launch of an own kernel, every
    tensor argument in each form that could hold an output (`_layouts`) unless an own kernel wrote it last, so the
    trusted side can tell whether the answer existed before the candidate's Triton ran.

    An argument counts as written by an own kernel when its sampled values changed across that kernel's launch,
    until torch next modifies it (its `_version` moves; a Triton store does not move it).  Inputs, weights and
    buffers are not sampled while torch has not written into them during the call (`tracking`): an answer equal to
    one of them is the problem's, not a hack, but one torch wrote there with `out=`, `copy_` or an in-place op (a
    registered workspace buffer) is torch's.  Samples that cannot be
    a finding (`_trivial`: poisoned fresh memory, a zeroed buffer) or repeat one already taken are not kept, so
    `LIMIT` goes to what the trusted side has to judge."""

    LIMIT = 64  # samples kept per call: enough for any honest pipeline, bounded for any hostile one
    POSITIONS = POSITIONS

    def __init__(self, outputs: list[OutputSpec], seed: int) -> None:
        self.specs = [s for s in outputs if s.numel > 0]
        self.seed = seed
        self.records: list[dict] = []
        self._positions: dict[tuple[int, str], object] = {}
        self._excluded: set[int] = set()
        self._written: set[int] = set()  # storages torch wrote into during the call (`tracking`)
        self._made: dict[int, int] = {}  # storage pointer -> its `_version` right after an own kernel changed it
        self._seen: set[tuple[int, bytes]] = set()  # (numel, fingerprint) of each sample kept
        self._pending: list[tuple] = []

    def exclude(self, tensors: list) -> None:
        import torch

        self._excluded |= {t.untyped_storage().data_ptr() for t in tensors if isinstance(t, torch.Tensor)}

    def tracking(self):
        """A dispatch mode for the watched call that tells the watch which storages torch writes into: an excluded
        storage (an input, a weight, a buffer) that torch writes is watched like any other from then on.  It is
        entered below `scrub.poisoned_allocations`, so the ops of a candidate's `triton_op`, which that mode runs
        itself, reach it too."""
        from torch.utils._python_dispatch import TorchDispatchMode

        watch = self

        class TorchWrites(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                return False  # as `op_trace.op_tracer` says: no torch._dynamo import, which replaces torch.manual_seed

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                watch._written |= written_storages(func, args, kwargs)
                return out

        return TorchWrites()

    def _where(self, numel: int, device):
        key = (numel, str(device))
        if key not in self._positions:
            self._positions[key] = watched_positions(self.seed, numel).to(device)
        return self._positions[key]

    def _samples(self, tensor) -> list[tuple[OutputSpec, str, object]]:
        """(spec, form, values as float64 on the host) for each output and form `tensor` could hold it in: gathered
        on its device, moved to the host at once."""
        import torch

        found = [
            (spec, form, values.to(torch.float64))
            for spec in self.specs
            for form, values in _layouts(tensor, spec, self._where(spec.numel, tensor.device))
        ]
        if not found:
            return []
        host = torch.cat([values for _, _, values in found]).to("cpu").split([len(v) for _, _, v in found])
        return [(spec, form, values) for (spec, form, _), values in zip(found, host)]

    def _watched(self, args: tuple, kwargs: dict) -> list[tuple[str, object, int]]:
        found = []
        for label, value in [(f"argument {i}", v) for i, v in enumerate(args)] + [
            (f"argument {k}", v) for k, v in kwargs.items()
        ]:
            for name, tensor in _tensors(value, label):
                ptr = tensor.untyped_storage().data_ptr()
                if ptr not in self._excluded or ptr in self._written:
                    found.append((name, tensor, ptr))
        return found

    def before(self, kernel, args: tuple, kwargs: dict) -> None:
        name = getattr(getattr(kernel, "fn", None), "__name__", type(kernel).__name__)
        self._pending = []
        for label, tensor, ptr in self._watched(args, kwargs):
            samples = self._samples(tensor)
            self._pending.append((tensor, ptr, samples))
            if self._made.get(ptr) == tensor._version:
                continue
            for spec, form, values in samples:
                key = (spec.numel, fingerprint(values))
                if len(self.records) >= self.LIMIT or key in self._seen or _trivial(values):
                    continue
                self._seen.add(key)
                self.records.append(
                    {
                        "kernel": name,
                        "argument": label + form,
                        "numel": spec.numel,
                        "positions": self._where(spec.numel, "cpu"),
                        "values": values,
                    }
                )

    def after(self, kernel, args: tuple, kwargs: dict) -> None:
        for tensor, ptr, before in self._pending:
            now = self._samples(tensor)
            if any(fingerprint(a) != fingerprint(b) for (_, _, a), (_, _, b) in zip(now, before)):
                self._made[ptr] = tensor._version
        self._pending = []
