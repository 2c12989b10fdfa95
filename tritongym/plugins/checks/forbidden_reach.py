"""Which module an attribute chain of an installed package reaches: `torch.os` is `os`, `numpy.os` too.

A package's namespace holds every module its code imported (`torch/__init__.py` runs `import os`), so
`torch.os.system("...")` starts a shell through a path that the `forbidden` check's rules, matched against the path
as written, would call part of torch.  The check matches its rules against every module such a chain reaches under
another name as well (`reached`), naming the module it reached.

Which attribute of which module is which module is read from a clean interpreter, not from the judge's own (whose
modules hold the judge, and whatever it imported) nor from anything a candidate wrote: a child process imports the
packages a candidate computes with (torch, triton, numpy) and the standard library, then reads each module's namespace
as a dict (`vars`: no attribute hook, no descriptor, nothing called) and reports every attribute that holds a module.
It runs no candidate code, only the imports every worker makes anyway, with the worker's interpreter and flags
(`-s`), in a fresh empty folder so that no file lying in the judge's folder is imported in their place.  The table is
the same for every candidate, so it is built once per judge process (a few seconds, most of them importing torch) and
kept in memory only: a table on disk would be one more file a candidate could try to change for the next one.

What the table cannot see: attributes a package creates on first access (a module `__getattr__`, torch's lazy
submodules).  Those are the package's own submodules under their own names, which the rules match as written.  Where
the table cannot be built (torch missing from the judge's interpreter, the child crashing), `failure` says why and the
check says the candidate could not be fully judged rather than pass it on the rules alone.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

TRUSTED_PACKAGES = ("torch", "triton", "numpy")
"""The packages a candidate computes with, imported in the child before the standard library."""
NOISY = frozenset("antigravity this __hello__ __phello__ idlelib tkinter turtle turtledemo".split())
"""Standard-library modules left out of the child's imports: importing them opens a browser, prints, or starts a
GUI toolkit.  A candidate reaching one is refused by the rules as written or finds nothing the table would add."""
TIMEOUT_S = 300
"""Importing torch and triton on a loaded machine can take tens of seconds; beyond this something is wrong."""

_WALK = r"""
import contextlib, io, json, os, sys, types, warnings
sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
warnings.simplefilter("ignore")
names = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for name in names:
        try:
            __import__(name)
        except BaseException:
            pass
edges = {}
seen = set()
todo = [m for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)]
while todo:
    module = todo.pop()
    if id(module) in seen:
        continue
    seen.add(id(module))
    space = module.__dict__
    own = space.get("__name__")
    if not isinstance(own, str):
        continue
    for attribute, value in list(space.items()):
        if isinstance(attribute, str) and isinstance(value, types.ModuleType):
            todo.append(value)
            name = value.__dict__.get("__name__")
            if isinstance(name, str):
                edges.setdefault(own, {})[attribute] = name
with open("table.json", "w") as out:
    json.dump(edges, out)
"""

_lock = threading.Lock()
_table: dict[str, dict[str, str]] | None = None
_failure: str | None = None


def table() -> dict[str, dict[str, str]]:
    """module name -> {attribute -> name of the module it holds}, for every module the clean interpreter has; built
    on first use (`_build`), then kept.  Empty where it could not be built (`failure` says why)."""
    global _table, _failure
    with _lock:
        if _table is None:
            try:
                _table = _build()
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                _table, _failure = {}, f"{type(exc).__name__}: {exc}"
                log.warning("the table of modules reached through packages could not be built: %s", _failure)
        return _table


def failure() -> str | None:
    """Why the table is empty, or None where it was built."""
    table()
    return _failure


def _build() -> dict[str, dict[str, str]]:
    names = [*TRUSTED_PACKAGES, *sorted(sys.stdlib_module_names - NOISY)]
    with tempfile.TemporaryDirectory(prefix="tritongym-modules-") as folder:
        subprocess.run(
            [sys.executable, "-s", "-c", _WALK, json.dumps(names)],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=True,
        )
        edges = json.loads((Path(folder) / "table.json").read_text())
    if not all(isinstance(v, dict) for v in edges.values()) or not set(TRUSTED_PACKAGES) & edges.keys():
        raise ValueError("the child's table names none of torch, triton, numpy")
    return edges


def reached(path: str) -> list[tuple[str, str]]:
    """(the chain as written, the module it is) for each module `path` reaches under another name than its chain:
    `torch.os.path.join` -> [("torch.os", "os"), ("torch.os.path", "posixpath")].  Attributes are followed from the
    module the chain has reached, so `torch.os.path` is looked up as `os`'s `path`."""
    edges = table()
    parts = path.split(".")
    module = parts[0] if parts[0] in edges else None
    found = []
    for n, part in enumerate(parts[1:], 2):
        target = edges.get(module, {}).get(part) if module is not None else None
        if target is None:
            break
        written = ".".join(parts[:n])
        if target != written:
            found.append((written, target))
        module = target
    return found
