"""sqlite-utils, imported without pandas.

sqlite-utils imports pandas whenever it is installed (and it is in most ML environments: `datasets`,
hence TRL, pulls it in), only to map `pandas.Timestamp` values to TEXT columns.  The registry never
stores one, and pandas costs 0.1-0.2 s of every command that opens the registry (`tritongym best`, a
cached `eval`), a third of the 0.5 s a command may take to start.  So pandas is hidden for the moment
sqlite-utils is first imported; it imports normally afterwards, for whoever needs it.
"""

from __future__ import annotations

import sys

if "sqlite_utils" not in sys.modules and "pandas" not in sys.modules:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` raises ImportError meanwhile
    try:
        import sqlite_utils
    finally:
        del sys.modules["pandas"]

import sqlite_utils  # noqa: E402  (the module cached above, or an import where pandas was already loaded)

__all__ = ["sqlite_utils"]
