"""Where this user's `tritongym serve`s announce themselves as warm pools, and whether any does: apart from
`warm_pool.py` (pydantic, the records' terms, the HTTP client) so that `tritongym eval` can ask before its own imports.

`eval` asks twice: before starting the GPU pool's fork server early (no point when a warm pool will take the
candidate: the fork server imports torch beside the command, and is closed unused at its exit), and before making
an evaluator just to compare terms with the announced pools (none announced: straight to evaluating here).  A
file here is only a hint; `warm_pool.records` reads, validates and checks each."""

from __future__ import annotations

import os
from pathlib import Path

RUNTIME_DIR_ENV = "TRITONGYM_RUNTIME_DIR"


def pool_dir() -> Path:
    """Where this user's services announce themselves."""
    if os.environ.get(RUNTIME_DIR_ENV):
        return Path(os.environ[RUNTIME_DIR_ENV])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "tritongym"
    return Path.home() / ".cache" / "tritongym" / "pools"


def announced() -> bool:
    """Whether any service has announced itself here (live or stale: `warm_pool.records` tells them apart)."""
    try:
        return any(pool_dir().glob("serve-*.json"))
    except OSError:
        return False
