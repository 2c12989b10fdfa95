"""The `precomputed` probe's eyes on the launches (`LaunchRecorder.watch`, ARCHITECTURE.md §4): before each launch of
an own kernel, what its tensor arguments already hold where an output would be, in each form that could hold it
(`measure/layouts.py`), sampled for the trusted side (`probes.prior_answers`), the only side that knows the answer.
"""

from __future__ import annotations

from tritongym.core.measure.layouts import (
    OutputSpec,
    fingerprint,
    geometry,
    launch_tensors,
    output_specs,
    rebuilt,
    sampled,
    trivial,
)

__all__ = ["OutputSpec", "PriorAnswerWatch", "output_specs", "torch_writes", "watched_positions"]

POSITIONS = 256
"""Positions sampled per output and form: enough that 99% of them matching (`probes.prior_answers`) is no accident,
few enough that the gathers stay negligible beside any launch."""


def watched_positions(seed: int, numel: int):
    """The flat positions the watch samples in an output of `numel` elements (the keeper draws them alike)."""
    import torch

    generator = torch.Generator().manual_seed(seed + numel)
    return torch.randint(0, numel, (min(POSITIONS, numel),), generator=generator)


def torch_writes(func, args: tuple, kwargs: dict, out) -> list[tuple[object, bool]]:
    """(tensor, fresh) for each tensor an aten op wrote data into: its arguments marked `(a!)` in its schema (`out=`,
    in-place ops, `copy_`), and what it returns where it returns new tensors (fresh).  Ops that change only a
    tensor's view (`set_`, `t_`, `resize_`) write none, nor does a copy of a storage onto itself (Triton's
    interpreter hands each argument's storage back so after a launch)."""
    import torch

    schema = getattr(func, "_schema", None)
    if schema is None or torch.Tag.inplace_view in getattr(func, "tags", ()) or "resize" in schema.name:
        return []
    if schema.name == "aten::copy_" and len(args) > 1 and _same_view(args[0], args[1]):
        return []
    found = []
    for i, argument in enumerate(schema.arguments):
        if argument.alias_info is not None and argument.alias_info.is_write:
            value = args[i] if i < len(args) else kwargs.get(argument.name)
            found += [(t, False) for t in (value if isinstance(value, list | tuple) else [value])]
    if not any(r.alias_info is not None for r in schema.returns):
        found += [(t, True) for t in (out if isinstance(out, list | tuple) else [out])]
    return [(t, fresh) for t, fresh in found if isinstance(t, torch.Tensor) and t.layout == torch.strided]


def _same_view(a, b) -> bool:
    import torch

    return (
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and (a.storage_offset(), a.shape, a.stride(), a.dtype) == (b.storage_offset(), b.shape, b.stride(), b.dtype)
    )


class PriorAnswerWatch:
    """The `precomputed` probe's watch (`LaunchRecorder.watch`): samples, before each launch of an own kernel, every
    tensor argument in each form that could hold an output (`layouts.layouts`) unless an own kernel wrote it last,
    so the trusted side can tell whether the answer existed before the candidate's Triton ran.

    What an own kernel wrote is known by its contents, not by the tensor it came through: a sample that changed
    across an own launch is the kernel's (`_made`, its fingerprint), and the same values read again later, through
    any argument and in any form (a view, a torch copy of it), are not sampled again; once torch writes other values
    there they are.  Not by `_version`, which a Triton store does not move and a `set_` or `.data` alias, whose
    counter is its own, hides: a scratch an own kernel filled first and torch then wrote through such an alias was
    passed over.  Inputs, weights and buffers are not sampled while torch has not written into them during the call
    (`tracking`): an answer equal to one of them is the problem's, not a hack, but one torch wrote there with `out=`,
    `copy_` or an in-place op (a registered workspace buffer) is torch's.  Samples that cannot be a finding
    (`layouts.trivial`: poisoned fresh memory, a zeroed buffer) or repeat one already taken are not kept, so `LIMIT`
    goes to what the trusted side has to judge."""

    LIMIT = 64  # samples kept per call: enough for any honest pipeline, bounded for any hostile one
    POSITIONS = POSITIONS

    def __init__(self, outputs: list[OutputSpec], seed: int) -> None:
        self.specs = [s for s in outputs if s.numel > 0]
        self.seed = seed
        self.records: list[dict] = []
        self._positions: dict[tuple[int, str], object] = {}
        self._excluded: set[int] = set()
        self._written: set[int] = set()  # storages torch wrote into during the call (`tracking`)
        self._wrote: dict[int, list[tuple]] = {}  # storage -> the last two views torch wrote it through (`geometry`)
        self._made: set[tuple[int, bytes]] = set()  # (numel, fingerprint) of each sample an own kernel changed
        self._seen: set[tuple[int, bytes]] = set()  # (numel, fingerprint) of each sample kept
        self._pending: list[tuple] = []

    def exclude(self, tensors: list) -> None:
        import torch

        self._excluded |= {t.untyped_storage().data_ptr() for t in tensors if isinstance(t, torch.Tensor)}

    def tracking(self):
        """A dispatch mode for the watched call that tells the watch which storages torch writes into, and through
        which views (`_wrote`, the last two per storage: `_samples` reads them): an excluded storage (an input, a
        weight, a buffer) that torch writes is watched like any other from then on.  It is entered below
        `scrub.poisoned_allocations`, so the ops of a candidate's `triton_op`, which that mode runs itself, reach it
        too."""
        from torch.utils._python_dispatch import TorchDispatchMode

        watch = self

        class TorchWrites(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                return False  # as `op_trace.op_tracer` says: no torch._dynamo import, which replaces torch.manual_seed

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                for tensor, fresh in torch_writes(func, args, kwargs, out):
                    ptr = tensor.untyped_storage().data_ptr()
                    if not fresh:
                        watch._written.add(ptr)
                    watch._wrote[ptr] = [*([] if fresh else watch._wrote.get(ptr, [])[-1:]), geometry(tensor)]
                return out

        return TorchWrites()

    def _where(self, numel: int, device):
        key = (numel, str(device))
        if key not in self._positions:
            self._positions[key] = watched_positions(self.seed, numel).to(device)
        return self._positions[key]

    def _samples(self, tensor) -> list[tuple[OutputSpec, str, object]]:
        """`tensor`'s forms, and those of the views torch wrote its storage through (the 2-D `out=` view of a flat
        buffer, a slice at an offset: the kernel reads the storage however it likes, an int telling it where)."""
        found = sampled(tensor, self.specs, self._where)
        for view in self._wrote.get(tensor.untyped_storage().data_ptr(), []):
            made = rebuilt(tensor, view) if view != geometry(tensor) else None
            if made is not None:
                found += [
                    (s, f" (as torch wrote it){form}", v) for s, form, v in sampled(made, self.specs, self._where)
                ]
        return found

    def _watched(self, args: tuple, kwargs: dict) -> list[tuple[str, object]]:
        found = []
        for label, value in [(f"argument {i}", v) for i, v in enumerate(args)] + [
            (f"argument {k}", v) for k, v in kwargs.items()
        ]:
            for name, tensor in launch_tensors(value, label):
                ptr = tensor.untyped_storage().data_ptr()
                if ptr not in self._excluded or ptr in self._written:
                    found.append((name, tensor))
        return found

    def before(self, kernel, args: tuple, kwargs: dict) -> None:
        name = getattr(getattr(kernel, "fn", None), "__name__", type(kernel).__name__)
        self._pending = []
        for label, tensor in self._watched(args, kwargs):
            samples = self._samples(tensor)
            self._pending.append((tensor, samples))
            for spec, form, values in samples:
                key = (spec.numel, fingerprint(values))
                if len(self.records) >= self.LIMIT or key in self._made or key in self._seen or trivial(values):
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
        for tensor, before in self._pending:
            then = {(spec.numel, form): fingerprint(values) for spec, form, values in before}
            for spec, form, values in self._samples(tensor):
                key = (spec.numel, fingerprint(values))
                if then.get((spec.numel, form), key[1]) != key[1]:
                    self._made.add(key)
        self._pending = []
