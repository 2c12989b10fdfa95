"""Which registry an API call works on: `RegistryArg`, `open_registry`, and `stored_registry` for the commands that
only read one (`best`, `registry stats`, `kernel`, `report`).

Apart from `evaluation.py` so that a reading command loads nothing of the judge: `registry stats` imported the
evaluation API and the evaluator (0.85 s, a third of `import torch`) to count rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Union

from tritongym.core.errors import NoRegistry
from tritongym.core.registry.paths import default_registry_path

if TYPE_CHECKING:
    from tritongym.core.registry import Registry

# the store (sqlite-utils, and numpy through it) loads with the first registry opened, not with this module: a
# warm `eval` hands its candidate over knowing only the registry's path (`registry_path`)
RegistryArg = Union["Registry", str, Path, bool, None]
"""A Registry, a path, None for the default (TRITONGYM_REGISTRY or ./registry.db), or False for none."""


def _is_registry(registry: RegistryArg) -> bool:
    """Whether `registry` is an opened Registry; never imports the store to find out (none was opened without it)."""
    import sys

    store = sys.modules.get("tritongym.core.registry.store")
    return store is not None and isinstance(registry, store.Registry)


def open_registry(registry: RegistryArg) -> Registry | None:
    if registry is False:
        return None
    if _is_registry(registry):
        return registry  # type: ignore[return-value]
    from tritongym.core.registry import Registry

    return Registry(None if registry in (None, True) else registry)  # type: ignore[arg-type]


def registry_path(registry: RegistryArg) -> Path | None:
    """The file `open_registry(registry)` would open, without opening it; None for no registry (False)."""
    if registry is False:
        return None
    if _is_registry(registry):
        return registry.path  # type: ignore[union-attr]
    return _path(registry)


def _path(registry: RegistryArg) -> Path:
    return default_registry_path() if registry in (None, True, False) else Path(registry)  # type: ignore[arg-type]


def existing_registry(registry: RegistryArg) -> Registry | None:
    """The registry when there is one at that path; None (nothing created) when there is none."""
    if _is_registry(registry):
        return registry  # type: ignore[return-value]
    from tritongym.core.registry import Registry

    return Registry(_path(registry)) if _path(registry).exists() else None


def stored_registry(registry: RegistryArg, reading: bool = False) -> Registry:
    """The registry a reading command reads: one that exists.  A path with no file is `NoRegistry` (exit 1), never
    a new empty registry.db left in a folder where somebody only asked what was stored."""
    if _is_registry(registry):
        return registry  # type: ignore[return-value]
    from tritongym.core.registry.store import Registry, _check_folder

    path = _path(registry)
    if not path.exists():
        _check_folder(path)  # a folder that does not exist is a mistyped path (exit 3, the fix named), not "nothing"
        raise NoRegistry(
            f"no registry at {path.absolute()}: nothing has been stored there yet; `tritongym eval` or "
            "`tritongym run` store their verdicts in it, or name another with --registry (or TRITONGYM_REGISTRY)"
        )
    return Registry(path, reading=reading)
