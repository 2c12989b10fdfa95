"""A comparison under Triton's interpreter typed as the compiler types it: `int1`, whatever it compared.

The interpreter computes `a < b` as a numpy bool array but records the result's Triton type as its left operand's
(`InterpreterBuilder.binary_op` keeps `lhs.dtype`).  Nothing shows it while the result stays a block.  A *scalar*
comparison that is then splat to a block (`mask = rows_ok & (batch_id < batch_size)`) is filled in that recorded
type: 0 and 1 as int64, and the `&` with the block's bool mask gives an int mask, which the interpreter's load refuses
("mask has unsupported dtype").  FlagGems's kron masks its loads so and was refused on triton-cpu as a
`runtime_error`; compiled, the comparison is `i1` and the kernel runs.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) wraps each `create_icmp*` and
`create_fcmp*` of the interpreter's builder so that its result is typed `int1`.
"""

from __future__ import annotations

import functools


def install() -> str | None:
    """Comparisons typed `int1`; None when installed, else why not (Triton is left alone)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle is None:
        return "this Triton's interpreter has no InterpreterBuilder or TensorHandle"
    names = [n for n in vars(builder) if n.startswith(("create_icmp", "create_fcmp"))]
    if not names:
        return "this Triton's interpreter builds no comparisons by create_icmp*/create_fcmp*"
    for name in names:
        original = getattr(builder, name)
        if getattr(original, "_tritongym_int1", False):
            continue

        @functools.wraps(original)
        def typed(self, lhs, rhs, _original=original):
            result = _original(self, lhs, rhs)
            if result.data.dtype == np.bool_ and result.dtype != tl.int1:
                return handle(result.data, tl.int1)
            return result

        typed._tritongym_int1 = True
        setattr(builder, name, typed)
    return None
