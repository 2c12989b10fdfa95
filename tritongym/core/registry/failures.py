"""What an SQLite error on registry.db means for its user, and the fix, in words.

SQLite answers "attempt to write a readonly database" or "database is locked" without naming the file or
what to do; a user reading that after a long evaluation cannot act on it.  `explain` turns the errors the
environment causes (permissions, another process's lock, a damaged file, a full disk) into a
`RegistryError` that names the registry and the fix.  Any other SQLite error (a constraint, bad SQL) is a
bug in tritongym and is left alone, traceback and all.

`writes` marks the Registry methods that write, so that a caller which already holds work worth more than
the row (an evaluation's verdict) can ask, with `Registry.writes_may_fail()`, that a failed write be
recorded instead of raised: the verdict then reaches the user, marked not stored, instead of dying with it.
"""

from __future__ import annotations

import functools
import inspect
import sqlite3
from pathlib import Path

from tritongym.core.errors import RegistryError

# SQLite's primary result codes (https://sqlite.org/rescode.html) an environment can cause
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26
# the same, from the message, where Python (3.10) does not expose the code
_BY_MESSAGE = {
    "readonly database": _READONLY,
    "database is locked": _BUSY,
    "database table is locked": _LOCKED,
    "disk image is malformed": _CORRUPT,
    "file is not a database": _NOTADB,
    "database or disk is full": _FULL,
    "disk i/o error": _IOERR,
    "unable to open database file": _CANTOPEN,
}


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF
    text = str(exc).lower()
    return next((c for needle, c in _BY_MESSAGE.items() if needle in text), None)


def explain(path: Path | str, exc: sqlite3.Error, timeout_s: float) -> RegistryError | None:
    """The RegistryError a user can act on for this SQLite error, or None when the error is not the
    environment's (then it is tritongym's bug and keeps its traceback)."""
    code = _code(exc)
    other = "or name another registry with --registry (or TRITONGYM_REGISTRY)"
    if code in (_READONLY, _PERM):
        return RegistryError(
            f"registry {path} is read-only ({exc}): make the file, its -wal and -shm files and its folder writable "
            f"for this user, {other}"
        )
    if code in (_BUSY, _LOCKED):
        return RegistryError(
            f"registry {path} stayed locked by another process for {timeout_s:g} s ({exc}): another tritongym, or a "
            "sqlite3 shell or Datasette holding a write transaction, is writing it; let that finish (or close it), "
            f"raise the wait with TRITONGYM_REGISTRY_TIMEOUT=SECONDS, {other}"
        )
    if code in (_CORRUPT, _NOTADB):
        return RegistryError(
            f"registry {path} is damaged ({exc}): move the file aside with its -wal and -shm files (keep them: "
            f"`sqlite3 {path} .recover` may save its rows) and tritongym starts a new registry there, {other}"
        )
    if code == _FULL:
        return RegistryError(f"registry {path} cannot grow: the disk is full ({exc}); free space, {other}")
    if code == _IOERR:
        return RegistryError(f"registry {path} could not be read or written: disk I/O error ({exc}); {other}")
    if code == _CANTOPEN:
        return RegistryError(
            f"cannot open registry {path} ({exc}): check that its folder exists and this user may create files "
            f"there (SQLite adds {Path(path).name}-wal and -shm beside it), {other}"
        )
    return None


def writes(default=None):
    """Mark a Registry method that writes: an SQLite error the environment caused becomes a RegistryError
    naming the fix; inside `Registry.writes_may_fail()` it is recorded on the registry instead (and later
    writes are skipped, so a lock costs one wait, not one per row) and the method returns `default`."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            if self._writes_may_fail and self.write_failure is not None:
                return default
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                error = explain(self.path, exc, self.timeout_s)
                if error is None:
                    raise
                if not self._writes_may_fail:
                    raise error from exc
                self.write_failure = error
                return default

        wrapper.writes = True
        return wrapper

    return decorate


def reads(method):
    """A Registry method that only reads: an SQLite error the environment caused (a damaged page, a lock
    that outlasted the wait) becomes a RegistryError naming the fix, like an error at open."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            error = explain(self.path, exc, self.timeout_s)
            if error is None:
                raise
            raise error from exc

    return wrapper


def unwritable(exc: sqlite3.Error) -> bool:
    """The error says this user may not write the registry (its file or folder), not that it is broken."""
    return _code(exc) in (_READONLY, _PERM, _CANTOPEN)


def guard_reads(cls) -> None:
    """Wrap every public method of `cls` that is not marked `writes` with `reads`: one place, so a read
    method added later is covered too."""
    for name in dir(cls):
        if name.startswith("_") or name == "writes_may_fail":
            continue
        static = inspect.getattr_static(cls, name)
        if not inspect.isfunction(static) or getattr(static, "writes", False):
            continue
        setattr(cls, name, reads(static))
