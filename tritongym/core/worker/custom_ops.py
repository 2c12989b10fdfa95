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


def python_body(func) -> Callable | None:
    """The Python function behind `func` when it is an operator defined through `torch.library`'s custom-op API (a
    `CustomOpDef`, which `triton_op` makes), else None."""
    if getattr(func, "namespace", "aten") in TORCH_NAMESPACES:
        return None
    try:
        from torch._library.custom_ops import _maybe_get_opdef
    except ImportError:  # a torch without the custom-op API has no `triton_op` either
        return None
    opdef = _maybe_get_opdef(func)
    return None if opdef is None else getattr(opdef, "_init_fn", None)


def through(mode, func, args: tuple, kwargs: dict):
    """`func(*args, **kwargs)` for a dispatch mode's `__torch_dispatch__`: a candidate's operator runs its body with
    `mode` active again (its ops come back to `mode` one by one); anything else runs as the mode would run it."""
    body = python_body(func)
    if body is None:
        return func(*args, **kwargs)
    with mode:
        return body(*args, **kwargs)
