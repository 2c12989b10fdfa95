"""A `triton.language` builtin kept under a name of the kernel's own module, under Triton's interpreter.

Before each launch the interpreter binds `triton.language`'s builtins (`tl.cast`, `tl.exp`...) to its own semantic,
but only as attributes of `triton.language` itself (`_patch_lang`).  A module that took one under another name at
import (unsloth's `triton_cast = tl.cast`, `triton_tanh = tl.math.tanh`) keeps the unbound builtin, whose call fails
with "_semantic argument must be provided outside of JIT functions": unsloth's cross-entropy was refused on
triton-cpu as a `runtime_error`, an honest production kernel that the GPU judges `ok`.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) wraps `_patch_lang` so that it
also binds every builtin among the kernel's module globals, in the same scope (undone with the rest after the launch).
"""

from __future__ import annotations

import sys


def install() -> str | None:
    """Bind builtins kept under module-level aliases; None when installed, else why not (Triton is left alone)."""
    from triton.language import core
    from triton.runtime import interpreter

    patch_lang = getattr(interpreter, "_patch_lang", None)
    bind = getattr(interpreter, "_patch_attr", None)
    builder = getattr(interpreter, "interpreter_builder", None)
    if patch_lang is None or bind is None or builder is None:
        return "this Triton's interpreter has no _patch_lang/_patch_attr/interpreter_builder"
    if getattr(patch_lang, "_tritongym_aliases", False):
        return None

    def patch_with_aliases(fn):
        scope = patch_lang(fn)
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        if module is not None and getattr(module, "__dict__", None) is fn.__globals__:
            for name, value in list(fn.__globals__.items()):
                if core.is_builtin(value):  # a builtin kept under this module's own name
                    bind(module, name, value, builder, scope)
        return scope

    patch_with_aliases._tritongym_aliases = True
    interpreter._patch_lang = patch_with_aliases
    return None
