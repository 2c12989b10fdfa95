"""A float argument of a Triton kernel, under Triton's interpreter, as the compiler passes it: an fp32 scalar.

Compiled, `kernel[grid](x, eps)` hands the kernel `eps` as a float32 scalar tensor, so `eps.to(tl.float32)` and
`eps.dtype` work and `x_fp16 * eps` is computed in float32.  The interpreter converts int and bool arguments to
tensors (`_implicit_cvt`) but passes a float on as Python's: Liger-Kernel's RMSNorm, LayerNorm, GroupNorm, PolyNorm
and fused add-RMSNorm call `eps.to(...)` and were refused on triton-cpu as a `runtime_error` ("'float' object has no
attribute 'to'"), honest production kernels that the GPU judges `ok`.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) wraps the interpreter's
`_implicit_cvt` so a float becomes a float32 scalar tensor; constexpr arguments are not converted (the interpreter
never passes them through it).
"""

from __future__ import annotations


def install() -> str | None:
    """Pass float arguments as fp32 scalars; None when installed, else why not (Triton is left alone)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    convert = getattr(interpreter, "_implicit_cvt", None)
    if convert is None or not hasattr(interpreter, "TensorHandle"):
        return "this Triton's interpreter has no _implicit_cvt/TensorHandle"
    if getattr(convert, "_tritongym_floats", False):
        return None

    def implicit_cvt(arg):
        if isinstance(arg, float):
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return convert(arg)

    implicit_cvt._tritongym_floats = True
    interpreter._implicit_cvt = implicit_cvt
    return None
