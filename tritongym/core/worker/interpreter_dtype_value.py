"""A dtype given as a `tl.constexpr`, under Triton's interpreter, read as the compiler hands it: `dtype.value`.

Compiled, a `tl.constexpr` parameter arrives wrapped (`tl.constexpr(tl.float32)`), and library helpers read it
through `.value`: FlagGems's `get_dtype_max(dtype: tl.constexpr)` and `get_dtype_min` (`flag_gems.utils.limits`)
do, inside max, min, amax, argmax, argmin, max_pool2d and cummax.  The interpreter passes the dtype itself, which has
no `.value`, and those honest kernels were refused on triton-cpu as a `runtime_error`.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) gives `tl.dtype` a read-only
`value` that is the dtype itself, as `tl.constexpr(dtype).value` is.
"""

from __future__ import annotations


def install() -> str | None:
    """`dtype.value` is the dtype; None when installed, else why not (Triton is left alone)."""
    import triton.language as tl

    dtype = getattr(tl, "dtype", None)
    if dtype is None:
        return "this Triton has no triton.language.dtype"
    if "value" in vars(dtype) and not isinstance(vars(dtype)["value"], property):
        return "triton.language.dtype already has a `value` of its own"
    dtype.value = property(lambda self: self, doc="the dtype itself, as a constexpr-wrapped dtype's `.value` is")
    return None
