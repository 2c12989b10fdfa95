"""A `tl.range` loop's index, under Triton's interpreter, as the compiler makes it: a scalar tensor.

Compiled, `for row in tl.range(pid, n_rows, num_programs)` gives the loop a tensor index (int32, or int64 where a
bound is 64-bit), so `row.to(tl.int64)` widens it before `row * stride` can overflow.  The interpreter maps `tl.range`
to Python's `range`, whose index is an int: the persistent row loop vLLM and SGLang write (`row.to(tl.int64)`) was a
`runtime_error` on triton-cpu ("'int' object has no attribute 'to'"), an honest kernel that the GPU judges `ok`.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) wraps the interpreter's
`_patch_lang_core`, which binds `tl.range` for each launch, so that `tl.range` yields each index as a scalar tensor of
that type.  `tl.static_range` keeps Python ints, as compiled (it is unrolled: its index is a constexpr), and so does
Python's own `range` in a kernel, as fast as it was.
"""

from __future__ import annotations

_INT32 = range(-(2**31), 2**31)


def install() -> str | None:
    """Yield `tl.range` indices as scalar tensors; None when installed, else why not (Triton is left alone)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    patch_core = getattr(interpreter, "_patch_lang_core", None)
    handle = getattr(interpreter, "TensorHandle", None)
    np_dtype = getattr(interpreter, "_get_np_dtype", None)
    if patch_core is None or handle is None or np_dtype is None:
        return "this Triton's interpreter has no _patch_lang_core/TensorHandle/_get_np_dtype"
    if getattr(patch_core, "_tritongym_range", False):
        return None

    def index_type(bounds) -> tl.dtype:
        """int64 where a bound is a 64-bit tensor or an int past int32, else int32 (the compiler's promotion)."""
        for bound in bounds:
            bound = bound.value if isinstance(bound, tl.constexpr) else bound
            if isinstance(bound, tl.tensor) and bound.dtype.is_int() and bound.dtype.primitive_bitwidth > 32:
                return tl.int64
            if isinstance(bound, int) and bound not in _INT32:
                return tl.int64
        return tl.int32

    def patch_lang_core(lang, scope):
        patch_core(lang, scope)
        python_range = lang.range  # the interpreter's own, of Python ints

        def tensor_range(arg1, arg2=None, step=None, **kwargs):
            dtype = index_type((arg1, arg2, step))
            kind = np_dtype(dtype)
            for index in python_range(arg1, arg2, step, **kwargs):
                yield tl.tensor(handle(np.array([index], dtype=kind), dtype), dtype)

        scope.set_attr(lang, "range", tensor_range)

    patch_lang_core._tritongym_range = True
    interpreter._patch_lang_core = patch_lang_core
    return None
