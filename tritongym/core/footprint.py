"""What one forward of a problem's reference holds at its configured size, weighed on torch's meta device.

The pool reserves GPU memory for the reference's side before the keeper builds it: the first
time a problem is seen its peak is not measured yet, and a full-size KernelBench problem built beside others
without a reservation ran the H100 out of memory for everyone.  The meta device allocates nothing and computes
nothing, so weighing takes milliseconds: the inputs, the parameters and the outputs, in bytes.  Intermediates are
not counted (the pool multiplies).  An op without a meta kernel leaves what was weighed before it.

In the kernel, not the worker: the keeper weighs with it (`SIZE`) and so does the KernelBench sweep. Trusted
code only: the problem's own file, run as the keeper runs it.
"""

from __future__ import annotations

import warnings


def tensor_bytes(value) -> int:
    """Bytes of every tensor in `value` (nested lists, tuples and dicts)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


def weigh(module, outputs: bool = True) -> dict[str, int | str | None]:
    """`{"inputs", "params", "outputs"}` bytes of one forward of `module`'s `Model` (a loaded problem, its
    sizes applied), each None where weighing stopped, and `error` saying why."""
    import torch

    found: dict[str, int | str | None] = {"inputs": None, "params": None, "outputs": None, "error": None}
    try:
        with warnings.catch_warnings(), torch.device("meta"):
            warnings.simplefilter("ignore")
            inputs = module.get_inputs()
            found["inputs"] = tensor_bytes(inputs)
            model = module.Model(*module.get_init_inputs())
            found["params"] = tensor_bytes(list(model.parameters()) + list(model.buffers()))
            if outputs:
                with torch.no_grad():
                    found["outputs"] = tensor_bytes(model(*inputs))
    except Exception as exc:  # noqa: BLE001 - an op without a meta kernel: what was weighed stays
        found["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return found


def forward_bytes(found: dict) -> int | None:
    """The weighed parts summed; None when nothing could be weighed."""
    known = [v for k, v in found.items() if k != "error" and v is not None]
    return sum(known) if known else None
