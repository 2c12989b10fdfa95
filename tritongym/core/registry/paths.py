"""Where the registry lives when nobody says: apart from `store.py` so that knowing a path costs no sqlite-utils.

A warm `tritongym eval` only needs the registry's path to find a `tritongym serve` that stores into the same file;
importing the store for it pulled in sqlite-utils and, through it, numpy (0.35-0.4 s of the hand-over on the lent
H200's image)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_REGISTRY = "registry.db"


def default_registry_path() -> Path:
    """`TRITONGYM_REGISTRY`, else registry.db in the working directory."""
    return Path(os.environ.get("TRITONGYM_REGISTRY") or DEFAULT_REGISTRY)
