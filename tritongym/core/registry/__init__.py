"""registry.db: every problem, kernel and evaluation tritongym has seen (DESIGN.md §5).

`store.Registry` reads and writes it through sqlite-utils; `migrations` keeps its schema; `browse` holds
the canned Datasette queries.  May import: the kernel only.

`from tritongym.core.registry import Registry` is the public path.
"""

from tritongym.core.registry import sqlite as _sqlite  # noqa: F401  (first: sqlite-utils without pandas)
from tritongym.core.registry.store import Registry, RegistryError

__all__ = ["Registry", "RegistryError"]
