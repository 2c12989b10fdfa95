"""On `triton-cpu`: would the candidate's kernel compile for a GPU?  Triton's front end, run without one.

Triton's interpreter (TRITON_INTERPRET=1) runs a `@triton.jit` kernel as Python, so whatever Python allows runs
there: a plain Python helper called from the kernel, numpy inside it, a global it reads.  Triton's compiler refuses
each ("Cannot access global variable gelu from within @jit'ed function"), so on a GPU the launch raises and the
candidate is a `compile_error`, while the CPU judge rewarded a kernel no GPU can compile
(`tests/hacks/candidates/plain_python_helper_gelu.py`, an open hole until this).  A policy trained against the CPU
judge would learn to write such kernels.

So before the interpreter runs one of the candidate's kernels with a new signature, the worker builds its Triton IR
for a Hopper target (`ASTSource.make_ir`: the walk over the kernel's syntax tree that raises every such error; no
LLVM, no PTX, no GPU: tens of milliseconds), and a kernel the front end refuses raises `CompilationError` at its
launch, as on a GPU, with Triton's own words.  Only the candidate's kernels are checked (`LaunchRecorder.is_own`),
once per kernel, argument types and constexpr values.

Every Triton API this relies on is looked up with a guard: on a Triton without them the check is off (`available`
is False) and the interpreter runs kernels as before; an internal failure of the front end that is not a
compilation error (an API that changed shape) lets the launch go on, never refuses an honest kernel.
"""

from __future__ import annotations

import inspect
from typing import Any

TARGET = ("cuda", 90, 32)
"""The target the IR is built for: a Hopper GPU, as `triton-cuda` runs on (the front end's checks are the same for
every NVIDIA target; the backend only adds its code-generation functions, libdevice among them)."""

LAUNCH_OPTIONS = frozenset(
    {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid"}
)
"""Keyword arguments of a launch that are compile options, not kernel parameters (an autotuner's config adds them)."""


class CompilationError(Exception):
    """A kernel Triton's compiler refuses, raised at its launch on `triton-cpu` (the name is the status's key:
    `verdict.status_of_failure` maps `CompilationError` to `compile_error`)."""


class FrontEnd:
    """Triton's front end for the candidate's kernels, each (kernel, argument types, constexprs) once."""

    def __init__(self) -> None:
        self.available = _apis() is not None
        self._seen: dict[Any, str | None] = {}  # key -> the compiler's refusal, or None: it compiles
        self._jit: dict[Any, Any] = {}  # the kernel's function -> a JITFunction of it (the interpreter's has none)

    def check(self, kernel, args: tuple, kwargs: dict) -> None:
        """Raise `CompilationError` when Triton's compiler refuses this launch's kernel; nothing otherwise."""
        if not self.available:
            return
        fn = getattr(kernel, "fn", None)
        if fn is None:
            return
        try:
            jit = self._jit.get(fn) or self._jit.setdefault(fn, _jit_function(fn))
            signature, constexprs = _signature(jit, fn, args, kwargs)
            key = (fn, tuple(signature.items()), tuple((k, _hashable(v)) for k, v in constexprs.items()))
        except Exception:  # noqa: BLE001 - arguments this cannot type: the launch goes on, unjudged here
            return
        if key not in self._seen:
            self._seen[key] = _refusal(jit, signature, constexprs)
        refused = self._seen[key]
        if refused is not None:
            name = getattr(fn, "__name__", "kernel")
            raise CompilationError(
                f"Triton's compiler refuses kernel '{name}' (the interpreter on triton-cpu runs it; a GPU would "
                f"not compile it): {refused}"
            )


def _apis():
    """(ASTSource, GPUTarget, the CUDA backend, ir, mangle_type), or None on a Triton without them."""
    try:
        from triton._C.libtriton import ir
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import CUDABackend
        from triton.compiler.compiler import ASTSource
        from triton.runtime.jit import mangle_type
    except Exception:  # noqa: BLE001 - an older or different Triton: the check is off
        return None
    return ASTSource, GPUTarget, CUDABackend, ir, mangle_type


def _jit_function(fn):
    from triton.runtime.jit import JITFunction

    return JITFunction(fn)


def _signature(jit, fn, args: tuple, kwargs: dict) -> tuple[dict[str, str], dict[str, Any]]:
    """The kernel's parameters typed as Triton types them (`mangle_type`), its constexprs by value."""
    mangle_type = _apis()[4]
    params = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
    bound = inspect.signature(fn).bind(*args, **params)
    bound.apply_defaults()
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for param in jit.params:
        value = bound.arguments.get(param.name)
        value = getattr(value, "value", value) if type(value).__name__ == "constexpr" else value
        if param.is_constexpr or value is None:
            signature[param.name] = "constexpr"
            constexprs[param.name] = value
        else:
            signature[param.name] = mangle_type(value)
    return signature, constexprs


def _refusal(jit, signature: dict[str, str], constexprs: dict[str, Any]) -> str | None:
    """Triton's compilation error for this kernel at these types, or None (it compiles, or the front end itself
    failed in a way that says nothing about the kernel)."""
    from triton.compiler.errors import CompilationError as TritonCompilationError

    ASTSource, GPUTarget, CUDABackend, ir, _ = _apis()
    try:
        target = GPUTarget(*TARGET)
        backend = CUDABackend(target)
        options = backend.parse_options({})
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        source = ASTSource(fn=jit, signature=signature, constexprs=constexprs)
        source.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
    except TritonCompilationError as exc:
        return " ".join(str(exc).split())[:600]
    except Exception:  # noqa: BLE001 - the front end's own failure (an API that changed): no verdict on the kernel
        return None
    return None


def _hashable(value) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)
