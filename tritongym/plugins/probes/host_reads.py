"""The `host_reads` probe: the forward once more, counting the tensor elements the candidate's own code reads out as
host values (numpy arrays, Python lists and numbers).

Work done with numpy or plain Python on the host never reaches torch's dispatcher, so `torch_compute` sees nothing
of it, and a Triton kernel that only finishes the job (divides by row sums numpy made, copies a product numpy
multiplied) passes `precomputed` and `ghost` too: found red-teaming, a softmax whose exponentials and sums came from
numpy and a matmul done by `numpy.matmul` were `ok` under every policy.  An honest Triton forward reads at most a
few scalars to the host (a maximum for a grid, a length); computing on the data there means reading all of it.

The probe wraps, for one call, the ways tensor data becomes host values (`Tensor.numpy`, `__array__` (what
`numpy.asarray` and `numpy.array` call), `__dlpack__` (`numpy.from_dlpack`), `tolist`, `item`, the conversions to
Python numbers and truth values, `apply_`/`map_`/`map2_` (a Python callable per element), and a storage's `tolist`,
iteration and indexing), and counts
the elements only where the wrapped method was called from the candidate's own file: Triton's interpreter converts
every kernel argument to numpy itself (on `triton-cpu`), and torch's own Python (printing a tensor) is not the
candidate's choice.  The answer is `{"elements": N, "calls": {method: count}, "input_elements": M}`.

A wrapper is only seen by code that looks the method up after it was installed: `_to_host = torch.Tensor.numpy` at
import keeps the C method itself, and a softmax computed by numpy through it was `ok` (red-teamed,
`tests/hacks/candidates/captured_numpy_softmax.py`).  So the forward also runs under a profile function
(`sys.setprofile`, and `threading.setprofile` for threads it starts), which sees every call where it is made: a C
method called from the candidate's file whose bound object is a tensor or storage (CPython binds an unbound method
descriptor's call to its first argument for the profiler), and torch's own Python methods of those names
(`Tensor.__array__`, `UntypedStorage.tolist`) entered straight from the candidate's file.  A call through a
wrapper is counted once, by the wrapper: the profile sees it made from this file.  A forward that takes the profile
function away has it reported (`"profile_removed": true`).
"""

from __future__ import annotations

import sys

from tritongym import hookimpl
from tritongym.core.interfaces import Probe

_TENSOR_METHODS = ("numpy", "__array__", "__dlpack__", "tolist", "item", "__float__", "__int__", "__index__")
_TENSOR_METHODS += ("__bool__", "__complex__", "apply_", "map_", "map2_")  # apply_/map_: a Python callable per element
_STORAGE_METHODS = ("tolist", "__iter__", "__getitem__")  # bytes(storage) iterates it


def _candidate_file(model) -> str:
    module = sys.modules.get(type(model).__module__)
    return getattr(module, "__file__", "") or ""


def _size(obj, name: str) -> int:
    """Elements (a tensor's) or bytes (a storage's) the call reads: one for a storage's single index."""
    if name == "__getitem__":
        return 1
    if hasattr(obj, "numel"):
        return int(obj.numel())
    size = getattr(obj, "nbytes", None)
    return int(size() if callable(size) else len(obj))


def _count(tally: dict, obj, name: str, label: str) -> None:
    """One host read of `obj` by its method `name`, under `label`, into `tally`."""
    tally["calls"][label] = tally["calls"].get(label, 0) + 1
    try:
        tally["elements"] += _size(obj, name)
    except Exception:  # noqa: BLE001 - a count the object refuses is one element
        tally["elements"] += 1


def _counting(original, name: str, label: str, tally: dict, own_file: str):
    def counted(self, *args, **kwargs):
        caller = sys._getframe(1)
        if own_file and caller.f_code.co_filename == own_file:
            _count(tally, self, name, label)
        return original(self, *args, **kwargs)

    return counted


def _profiling(tally: dict, own_file: str, readers: tuple):
    """The profile function: host reads made from `own_file` that no wrapper saw (see the module's doc)."""
    import torch

    tensor_names = frozenset(_TENSOR_METHODS)
    storage_names = frozenset(_STORAGE_METHODS)
    torch_files = {getattr(sys.modules.get(m), "__file__", None) for m in ("torch._tensor", "torch.storage")} - {None}

    def seen(bound, name: str) -> None:
        if isinstance(bound, torch.Tensor) and name in tensor_names:  # iterating a tensor reads nothing
            _count(tally, bound, name, name)
        elif isinstance(bound, readers) and name in storage_names:
            _count(tally, bound, name, f"storage.{name}")

    def profile(frame, event, arg):
        if event == "c_call" and frame.f_code.co_filename == own_file:
            seen(getattr(arg, "__self__", None), getattr(arg, "__name__", ""))
        elif event == "call" and frame.f_code.co_filename in torch_files:
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename == own_file:
                seen(frame.f_locals.get("self"), frame.f_code.co_name)

    return profile


def candidate_side(model, inputs: list) -> dict:
    """The forward on `inputs`, with the elements the candidate's code read out to the host counted."""
    import threading

    import torch

    own_file = _candidate_file(model)
    tally: dict = {"elements": 0, "calls": {}}
    readers = tuple(c for c in (getattr(torch, "UntypedStorage", None), getattr(torch, "TypedStorage", None)) if c)
    targets = [(torch.Tensor, name, name) for name in _TENSOR_METHODS if hasattr(torch.Tensor, name)]
    for storage in readers:
        targets += [(storage, name, f"storage.{name}") for name in _STORAGE_METHODS if hasattr(storage, name)]
    saved = [(cls, name, cls.__dict__.get(name)) for cls, name, _ in targets]
    profile = _profiling(tally, own_file, readers)
    was, was_threads = sys.getprofile(), threading.getprofile()
    removed = False
    try:
        for cls, name, label in targets:
            setattr(cls, name, _counting(getattr(cls, name), name, label, tally, own_file))
        threading.setprofile(profile)
        sys.setprofile(profile)
        try:
            with torch.no_grad():
                model(*inputs)
        finally:
            removed = sys.getprofile() is not profile
            sys.setprofile(was)
            threading.setprofile(was_threads)
    finally:
        for cls, name, original in saved:
            if original is None:
                delattr(cls, name)  # inherited before (from torch._C.TensorBase, _StorageBase): inherited again
            else:
                setattr(cls, name, original)
    sizes = [int(x.numel()) for x in inputs if isinstance(x, torch.Tensor)]
    answer = {"elements": tally["elements"], "calls": tally["calls"], "input_elements": sum(sizes)}
    if removed:
        answer["profile_removed"] = True
    return answer


class HostReadsProbe(Probe):
    """The forward on the first trial's inputs, counting the tensor elements the candidate's code made host values."""

    name = "host_reads"
    target = "tritongym.plugins.probes.host_reads:candidate_side"


@hookimpl
def register_probes(register):
    register(HostReadsProbe)
