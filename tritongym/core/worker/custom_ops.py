"""Operators a candidate defines with `torch.library.triton_op`, seen through by the worker's dispatch modes.

`@triton_op("mylib::add", mutates_args={})` around a function that launches `wrap_triton(kernel)[grid](...)` is
PyTorch's own way to make a Triton kernel an operator that torch.compile can trace (the `forbidden` check allows
exactly those two names of `torch.library`).  Called eagerly, the operator runs its Python body.  But a dispatch mode
is handed the operator itself, and when the mode calls it the body runs with the mode set aside: the torch work
inside (a `torch.matmul` beside a GELU kernel) never reached the op trace, and the lazy hack wrapped in a
`triton_op` was judged as if the GEMM were Triton's.  A mode that meets such an operator runs its body itself, with
the mode active, so what the body does is traced, poisoned and counted as anywhere else in the forward.
"""

from __future__ import annotations

from collections.abc import Callable

TORCH_NAMESPACES = frozenset({"aten", "prim", "prims", "quantized", "_quantized", "rngprims", "profiler", "debugprims"})
"""Namespaces of torch's own operators: never a candidate's, looked up no further."""


def python_body(func, args: tuple = (), kwargs: dict | None = None) -> Callable | None:
    """The Python function the dispatcher would run for `func` on these arguments when it is an operator defined
    through `torch.library`'s custom-op API (a `CustomOpDef`, which `triton_op` makes): the kernel registered for the
    arguments' device (`register_kernel("cuda")`), else the one for every device; None for torch's own operators.
    The device's own kernel, not the body: otherwise a body of Triton would be judged and traced while the timed
    calls, which run without any mode, ran a torch kernel registered for the GPU."""
    if getattr(func, "namespace", "aten") in TORCH_NAMESPACES:
        return None
    try:
        from torch._library.custom_ops import _maybe_get_opdef
    except ImportError:  # a torch without the custom-op API has no `triton_op` either
        return None
    opdef = _maybe_get_opdef(func)
    if opdef is None:
        return None
    kernels = getattr(opdef, "_backend_fns", None) or {}
    device = _device_type([*args, *(kwargs or {}).values()])
    return kernels.get(device) or kernels.get(None) or getattr(opdef, "_init_fn", None)


def _device_type(values) -> str | None:
    """The device type of the first tensor among `values` (lists and tuples looked into), as the dispatcher keys it."""
    import torch

    for value in values:
        if isinstance(value, torch.Tensor):
            return value.device.type
        if isinstance(value, (list, tuple)):
            found = _device_type(value)
            if found is not None:
                return found
    return None


def through(mode, body: Callable, args: tuple, kwargs: dict):
    """A candidate's operator, for a dispatch mode's `__torch_dispatch__`: `body` (`python_body`'s) run with `mode`
    active again, so the operator's own ops come back to `mode` one by one."""
    with mode:
        return body(*args, **kwargs)
