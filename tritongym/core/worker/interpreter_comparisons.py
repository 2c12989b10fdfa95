"""A comparison's result under Triton's interpreter kept boolean when it is splat to a block, as compiled (`i1`).

The interpreter computes `a < b` as a numpy bool array but records the result's Triton type as its left operand's
(`InterpreterBuilder.binary_op` keeps `lhs.dtype`).  Nothing shows it while the result stays a block.  A *scalar*
comparison that is then splat to a block (`mask = rows_ok & (batch_id < batch_size)`) was filled in that recorded
type (`create_splat`): 0 and 1 as int64, and the `&` with the block's bool mask gave an int mask, which the
interpreter's load refuses ("mask has unsupported dtype").  FlagGems's kron masks its loads so and was refused on
triton-cpu as a `runtime_error`; compiled, the comparison is `i1` and the kernel runs.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) wraps the builder's
`create_splat`: a boolean value splats to a boolean block.  Only splats pay for it (wrapping every comparison
instead slowed a comparison-heavy kernel, FlagGems's var_mean, by 6%).
"""

from __future__ import annotations

import functools


def install() -> str | None:
    """Boolean splats stay boolean; None when installed, else why not (Triton is left alone)."""
    import numpy as np
    from triton.runtime import interpreter

    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle is None or not hasattr(builder, "create_splat"):
        return "this Triton's interpreter has no InterpreterBuilder.create_splat or TensorHandle"
    original = builder.create_splat
    if getattr(original, "_tritongym_bool_splat", False):
        return None

    @functools.wraps(original)
    def splat(self, ret_ty, arg):
        result = original(self, ret_ty, arg)
        if arg.data.dtype == np.bool_ and result.data.dtype != np.bool_:
            return handle(result.data.astype(np.bool_), result.dtype)
        return result

    splat._tritongym_bool_splat = True
    builder.create_splat = splat
    return None
