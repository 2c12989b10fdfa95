"""Which module an attribute chain of an installed package reaches: `torch.os` is `os`, `numpy.os` too.

A package's namespace holds every module its code imported (`torch/__init__.py` runs `import os`), so
`torch.os.system("...")` starts a shell through a path that the `forbidden` check's rules, matched against the path
as written, would call part of torch.  The check matches its rules against every module such a chain reaches under
another name as well (`reached`), naming the module it reached.

The chain is followed through the modules themselves, read as dicts (`vars`: no attribute hook, no descriptor,
nothing called), in the judge's own process, which never runs candidate code.  A module of the chain that this
process has not imported yet is imported first, but only a trusted package's (torch, triton, numpy: every worker
imports them) or the standard library's, less the few whose import acts (opens a browser, prints, starts a GUI).
Nothing is computed ahead: a candidate's chains are a handful of lookups in namespaces the process already holds.

Why not a table of every module's attributes, read once from a clean interpreter: building it imported the whole
standard library beside torch in a child process, 3-9 s in every judge process (a cold `tritongym eval` took 7-8 s
on an H200 in all), for chains a candidate writes a few of.  What the judge's own imports add to these namespaces
are submodules under their own names (importing `torch.utils.dlpack` binds `torch.utils.dlpack`), which the rules
match as written.  What cannot be seen: attributes a package creates on first access (a module `__getattr__`,
torch's lazy submodules); those too are the package's own submodules under their own names.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types

TRUSTED_PACKAGES = ("torch", "triton", "numpy")
"""The packages a candidate computes with: imported here when a chain starts at one this process has not imported."""
NOISY = frozenset("antigravity this __hello__ __phello__ idlelib tkinter turtle turtledemo".split())
"""Standard-library modules never imported here: importing them opens a browser, prints, or starts a GUI toolkit.
A candidate reaching one is refused by the rules as written or finds nothing a chain through them would add."""

_lock = threading.Lock()


def _importable(name: str) -> bool:
    root = name.partition(".")[0]
    return root in TRUSTED_PACKAGES or (root in sys.stdlib_module_names and root not in NOISY)


def _namespace(name: str) -> dict | None:
    """The namespace of module `name`, imported first where it may be (`_importable`); None otherwise."""
    module = sys.modules.get(name)
    if module is None and _importable(name):
        with _lock:
            try:
                module = importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - a module that cannot be imported here reaches nothing
                return None
    if not isinstance(module, types.ModuleType):
        return None
    return vars(module)


def reached(path: str) -> list[tuple[str, str]]:
    """(the chain as written, the module it is) for each module `path` reaches under another name than its chain:
    `torch.os.path.join` -> [("torch.os", "os"), ("torch.os.path", "posixpath")].  Attributes are followed from the
    module the chain has reached, so `torch.os.path` is looked up as `os`'s `path`."""
    parts = path.split(".")
    module = parts[0]
    found = []
    for n, part in enumerate(parts[1:], 2):
        space = _namespace(module)
        value = space.get(part) if space is not None else None
        if not isinstance(value, types.ModuleType):
            break
        target = vars(value).get("__name__")
        if not isinstance(target, str):
            break
        written = ".".join(parts[:n])
        if target != written:
            found.append((written, target))
        module = target
    return found
