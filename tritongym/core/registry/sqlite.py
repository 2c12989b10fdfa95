"""sqlite-utils, imported without pandas; and the SQLite library this Python links, checked once.

sqlite-utils imports pandas whenever it is installed (and it is in most ML environments: `datasets`,
hence TRL, pulls it in), only to map `pandas.Timestamp` values to TEXT columns.  The registry never
stores one, and pandas costs 0.1-0.2 s of every command that opens the registry (`tritongym best`, a
cached `eval`), a third of the 0.5 s a command may take to start.  So pandas is hidden for the moment
sqlite-utils is first imported; it imports normally afterwards, for whoever needs it.

SQLite 3.7.0 to 3.51.2 carry the WAL-reset bug (https://sqlite.org/wal.html#walresetbug, fixed in 3.51.3):
two connections writing or checkpointing one WAL at once can corrupt the database, and that is the
registry's pattern whenever two tritongym processes share it.  Python links whatever SQLite its build
found, so `warn_if_affected` says so once per process, with the fix, when the registry is opened.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys

if "sqlite_utils" not in sys.modules and "pandas" not in sys.modules:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` raises ImportError meanwhile
    try:
        import sqlite_utils
    finally:
        del sys.modules["pandas"]

import sqlite_utils  # noqa: E402  (the module cached above, or an import where pandas was already loaded)

__all__ = ["sqlite_utils", "warn_if_affected", "WAL_RESET_FIXED"]

WAL_RESET_FIXED = (3, 51, 3)
"""The first SQLite without the WAL-reset bug (3.52.0, withdrawn, had the fix as well)."""
_WAL_SINCE = (3, 7, 0)
_warned = False
log = logging.getLogger("tritongym.registry")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def warn_if_affected() -> bool:
    """Log, once per process, that the linked SQLite has the WAL-reset bug and how to get a fixed one;
    True when it did.  TRITONGYM_SQLITE_WARNING=0 silences it (for one who runs a single writer)."""
    global _warned
    version = sqlite3.sqlite_version
    if _warned or os.environ.get("TRITONGYM_SQLITE_WARNING") == "0":
        return False
    if not _WAL_SINCE <= _version(version) < WAL_RESET_FIXED:
        return False
    _warned = True
    log.warning(
        "Warning: this Python links SQLite %s, which has the WAL-reset bug (fixed in SQLite 3.51.3, "
        "https://sqlite.org/wal.html#walresetbug): two processes writing one registry at once (parallel `eval`s, "
        "`train` beside `run`) can, rarely, corrupt it. Use a Python linked against SQLite 3.51.3 or later, or run "
        "one writing command at a time per registry; TRITONGYM_SQLITE_WARNING=0 hides this.",
        version,
    )
    return True
