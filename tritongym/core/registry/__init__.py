"""registry.db: every problem, kernel and evaluation tritongym has seen (ARCHITECTURE.md §5).

`store.Registry` reads and writes it through sqlite-utils; `migrations` keeps its schema; `browse` holds
the canned Datasette queries.  May import: the kernel only.

`from tritongym.core.registry import Registry` is the public path.  It is imported on first use (PEP 562):
`tritongym registry browse --help` reads `browse`'s defaults, and must not pay for sqlite-utils to do so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritongym.core.errors import RegistryError

if TYPE_CHECKING:
    from tritongym.core.registry.store import Registry

__all__ = ["Registry", "RegistryError"]


def __getattr__(name: str):
    if name == "Registry":
        from tritongym.core.registry.store import Registry

        return Registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
