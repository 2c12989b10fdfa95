"""`tritongym registry browse`: registry.db in Datasette, with canned queries.

Datasette (an optional extra: `pip install 'tritongym[browse]'`) serves the registry read-only (it opens a
database that is not immutable with `mode=ro`, so a training run can keep writing while it is browsed),
every table and view browsable, and three canned queries on the database page:

- `leaderboard`: the best honest kernel per problem, size and device class: the `best_kernels` view, the
  same answer as `tritongym best` (fastest by runtime; the earliest correct one where nothing was timed),
  with the number of honest kernels and of evaluations behind each row.
- `hack_gallery`: every kernel rejected by a static check or found hacked by a runtime one, one row per
  failed check verdict (the `checks` list of the stored `EvaluationResult` JSON in `evaluations.result`),
  ordered by check name and reason; a rejected or hacked evaluation without a failed verdict is listed
  with an empty check.
- `problem_history`: every evaluation of one problem (parameter `:problem`, the problem name), newest
  first, with the names of its failed checks.

The queries are plain SQL on the schema of `core/registry/migrations.py` and run the same through `sqlite3`.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from tritongym.core.errors import TritonGymError

INSTALL_HINT = "pip install 'tritongym[browse]'"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8001

_FAILED_CHECKS = (
    "(SELECT group_concat(json_extract(c.value, '$.name'), ', ') FROM json_each(e.result, '$.checks') AS c "
    "WHERE json_extract(c.value, '$.passed') = 0)"
)

LEADERBOARD_SQL = """
SELECT
  b.problem_name,
  b.size,
  b.device_class,
  b.backend,
  b.runtime_ms,
  b.ref_runtime_ms,
  b.speedup,
  b.compile_speedup,
  b.pr,
  b.reward,
  (SELECT count(*) FROM evaluations h
     WHERE h.problem_name = b.problem_name AND h.size = b.size AND h.device_class = b.device_class
       AND h.status = 'ok' AND h.correct = 1 AND h.hacked = 0) AS honest_kernels,
  (SELECT count(*) FROM evaluations a
     WHERE a.problem_name = b.problem_name AND a.size = b.size AND a.device_class = b.device_class) AS evaluations,
  b.kernel_id,
  b.id AS evaluation_id,
  b.created_at,
  k.source
FROM best_kernels b
JOIN kernels k ON k.id = b.kernel_id
ORDER BY b.problem_name, b.size, b.device_class
""".strip()

HACK_GALLERY_SQL = """
SELECT
  json_extract(c.value, '$.name') AS check_name,
  json_extract(c.value, '$.stage') AS stage,
  json_extract(c.value, '$.reason') AS reason,
  json_extract(c.value, '$.line') AS line,
  e.status,
  e.problem_name,
  e.device_class,
  e.backend,
  e.kernel_id,
  e.id AS evaluation_id,
  e.created_at,
  e.message,
  k.source
FROM evaluations e
LEFT JOIN json_each(e.result, '$.checks') AS c ON json_extract(c.value, '$.passed') = 0
LEFT JOIN kernels k ON k.id = e.kernel_id
WHERE e.status IN ('rejected', 'hacked') OR e.hacked = 1
ORDER BY check_name IS NULL, check_name, reason, e.created_at DESC, e.id DESC
""".strip()

PROBLEM_HISTORY_SQL = f"""
SELECT
  e.id AS evaluation_id,
  e.created_at,
  e.status,
  e.correct,
  e.hacked,
  e.backend,
  e.device_class,
  e.size,
  e.runtime_ms,
  e.ref_runtime_ms,
  e.speedup,
  e.compile_speedup,
  e.pr,
  e.reward,
  {_FAILED_CHECKS} AS failed_checks,
  e.message,
  e.kernel_id,
  e.protocol,
  e.config_key
FROM evaluations e
WHERE e.problem_name = :problem
ORDER BY e.created_at DESC, e.id DESC
""".strip()

CANNED_QUERIES: dict[str, dict] = {
    "leaderboard": {
        "title": "Leaderboard",
        "description": "The best honest kernel per problem, size and device class (the best_kernels view, as "
        "`tritongym best` answers): fastest by runtime, the earliest correct one where nothing was timed.",
        "sql": LEADERBOARD_SQL,
    },
    "hack_gallery": {
        "title": "Hack gallery",
        "description": "Kernels rejected by a static check or found hacked by a runtime one: one row per failed "
        "check verdict, by check name and reason.",
        "sql": HACK_GALLERY_SQL,
    },
    "problem_history": {
        "title": "Problem history",
        "description": "Every evaluation of one problem (its name, e.g. relu), newest first.",
        "sql": PROBLEM_HISTORY_SQL,
    },
}
"""Canned query name -> Datasette's query options (title, description, sql)."""


class BrowseUnavailable(TritonGymError):
    """Datasette is not installed, or the registry to browse does not exist."""

    exit_code = 3


def database_name(registry: str | Path) -> str:
    """The name Datasette gives a database file (its stem), under which the canned queries are filed."""
    return Path(registry).stem


def metadata(database: str = "registry") -> dict:
    """Datasette metadata: a title and the canned queries of database `database`."""
    return {
        "title": "tritongym registry",
        "description": "Every problem, kernel, evaluation, run and turn tritongym has seen.",
        "databases": {database: {"queries": {name: dict(query) for name, query in CANNED_QUERIES.items()}}},
    }


def require_datasette() -> str:
    """Datasette's version; `BrowseUnavailable` (exit code 3) with the install hint if it is not installed."""
    try:
        datasette_version = importlib.import_module("datasette.version")
    except ImportError:
        raise BrowseUnavailable(f"`tritongym registry browse` needs Datasette: {INSTALL_HINT}") from None
    return datasette_version.__version__


def browse_command(
    registry: str | Path,
    metadata_file: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
) -> list[str]:
    """The command line that serves `registry` in Datasette with the canned queries of `metadata_file`
    (written by `write_metadata`).  Raises `BrowseUnavailable` if Datasette is not installed."""
    require_datasette()
    command = [sys.executable, "-m", "datasette", "serve", str(registry), "--metadata", str(metadata_file)]
    command += ["--host", host, "--port", str(port)]
    if open_browser:
        command.append("--open")
    return command


def write_metadata(registry: str | Path, folder: str | Path) -> Path:
    """Write the metadata for `registry` to `folder`/metadata.json; returns its path."""
    path = Path(folder) / "metadata.json"
    path.write_text(json.dumps(metadata(database_name(registry)), indent=2), encoding="utf-8")
    return path
