"""registry.db: every problem, kernel and evaluation tritongym has seen, through sqlite-utils.

All writes go through `Registry._transaction()`, one transaction per stored evaluation, with WAL on: a
kill at any moment leaves the previous rows intact, and readers never block the writer.  Lookups come
before any worker starts, so an identical kernel (by normalised-source hash) on the same problem,
backend, device class and protocol is answered from here.

A failure the environment causes (a read-only file, another process's lock past the wait, a damaged page,
a full disk) is a `RegistryError` naming the fix, at open, read or write alike (`failures.py`); a caller
holding a verdict asks with `writes_may_fail()` that a refused write be recorded, not raised, so the
verdict still reaches its user.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from tritongym.core.errors import RegistryError, TritonGymError
from tritongym.core.models import Candidate, EvaluationResult, Problem, RewardBreakdown
from tritongym.core.registry.failures import explain, guard_reads, unwritable, writes
from tritongym.core.registry.judge_verdicts import JudgeVerdicts
from tritongym.core.registry.migrations import damage, migrate, pending_migrations, unknown_migrations
from tritongym.core.registry.paths import DEFAULT_REGISTRY, default_registry_path
from tritongym.core.registry.sqlite import (
    sqlite_utils,  # first: sqlite-utils without pandas
    warn_if_affected,
)
from tritongym.core.registry.tasks import ServiceTasks
from tritongym.core.registry.tuning import TuningRecords


def _timeout(timeout_s: float | None) -> float:
    """Seconds a write waits for another process's lock: the argument, else TRITONGYM_REGISTRY_TIMEOUT, else 30."""
    if timeout_s is not None:
        return float(timeout_s)
    text = os.environ.get("TRITONGYM_REGISTRY_TIMEOUT")
    if not text:
        return 30.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise RegistryError(f"TRITONGYM_REGISTRY_TIMEOUT takes seconds (a number, 0 or more), not {text!r}")
    return value


def _check_folder(path: Path) -> None:
    """A registry path in a folder that does not exist is refused, naming the path and the fix, rather than
    creating the folder: a mistyped --registry would otherwise start a second, empty history unnoticed."""
    folder = path.parent
    if path.is_dir():
        raise RegistryError(
            f"registry path {path} is a folder; name a file in it, e.g. --registry {path / DEFAULT_REGISTRY}"
        )
    if not folder.is_dir():
        raise RegistryError(
            f"cannot open registry {path}: its folder {folder} does not exist. Create it (mkdir -p {folder}) or fix "
            "the path given by --registry or TRITONGYM_REGISTRY"
        )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _reward_columns(reward: RewardBreakdown) -> dict:
    """The total for SQL queries and the whole breakdown (components, weights, absent, penalty) as JSON."""
    return {"reward": reward.total, "reward_components": reward.model_dump_json()}


PRECISIONS = ("ieee", "tf32")
"""The precision policies an evaluation can be judged under (`EvalConfig.precision`)."""

_ORDER = {
    "runtime": "e.runtime_ms IS NULL, e.runtime_ms, e.speedup IS NULL, e.speedup DESC, e.id",
    "speedup": "e.speedup IS NULL, e.speedup DESC, e.runtime_ms IS NULL, e.runtime_ms, e.id",
    "compile_speedup": "e.compile_speedup IS NULL, e.compile_speedup DESC, e.runtime_ms IS NULL, e.runtime_ms, e.id",
}


_ONE_PER = {"problem": "e.problem_name", "kernel": "e.kernel_id"}


def _order(by: str) -> str:
    if by not in _ORDER:
        raise ValueError(f"order by {', '.join(repr(k) for k in _ORDER)}, not {by!r}")
    return _ORDER[by]


def _names(value: str | Iterable | None) -> list | None:
    if value is None:
        return None
    return [value] if isinstance(value, (str, int)) else list(value)


def _honest_where(
    problems, device_class, size, backend, precision, run_id, min_measurements, keys=None
) -> tuple[str, list]:
    """The WHERE clause (over `evaluations e`) of an honest evaluation matching the best-kernel filters.

    A problem is its content (`Problem.key`), whatever name it was stored under: a name matches every evaluation
    of a problem that was ever stored under that name, and `keys` (the content keys of files or suite problems
    the caller named) match by content.  `eval --problem probs.jsonl#mysoftmax` and `best softmax` are one
    problem when their references are the same."""
    where = ["e.status = 'ok'", "e.correct = 1", "e.hacked = 0"]
    params: list = []
    names = _names(problems)
    if names is not None:
        marks, key_marks = ", ".join("?" * len(names)), ", ".join("?" * len(keys or []))
        where.append(
            f"(e.problem_name IN ({marks}) OR e.problem_key IN (SELECT key FROM problems WHERE name IN ({marks})) "
            f"OR e.problem_key IN (SELECT problem_key FROM evaluations WHERE problem_name IN ({marks}))"
            + (f" OR e.problem_key IN ({key_marks}))" if keys else ")")
        )
        params += names * 3 + list(keys or [])
    for column, value in (
        ("device_class", device_class),
        ("size", size),
        ("backend", backend),
        ("precision", precision),
    ):
        if value:
            where.append(f"e.{column} = ?")
            params.append(value)
    runs = _names(run_id)
    if runs is not None:
        where.append(
            f"EXISTS (SELECT 1 FROM turns t WHERE t.run_id IN ({', '.join('?' * len(runs))}) "
            "AND t.kernel_id = e.kernel_id AND (t.problem_name = e.problem_name OR t.problem_key = e.problem_key))"
        )
        params += [int(r) for r in runs]
    if min_measurements is not None:
        if int(min_measurements) < 0:
            raise ValueError(f"min_measurements must be 0 or more, not {min_measurements}")
        if int(min_measurements) > 0:
            where.append("e.timing_samples >= ?")
            params.append(int(min_measurements))
    return " AND ".join(where), params


def _precision_in(config: str | None) -> str | None:
    """The precision policy a run's stored config names (an EvalConfig, or a RunConfig's [eval]), if any."""
    try:
        data = json.loads(config) if config else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    value = data.get("precision")
    if value not in PRECISIONS and isinstance(data.get("eval"), dict):
        value = data["eval"].get("precision")
    return value if value in PRECISIONS else None


class Registry(TuningRecords, JudgeVerdicts, ServiceTasks):
    def __init__(
        self, path: str | Path | None = None, *, reading: bool = False, timeout_s: float | None = None
    ) -> None:
        """Open (creating and migrating as needed) the registry at `path`.

        `reading`: the caller only reads (`registry stats`), so a registry this user cannot write (a read-only
        file or folder) is opened read-only instead of refused.  `timeout_s`: how long a write waits for
        another process's lock before it fails (default TRITONGYM_REGISTRY_TIMEOUT, else 30 s)."""
        self.path = Path(path) if path is not None else default_registry_path()
        self.timeout_s = _timeout(timeout_s)
        self.read_only = False
        self.write_failure: RegistryError | None = None
        self._writes_may_fail = False
        in_memory = str(self.path) == ":memory:"
        if not in_memory:
            _check_folder(self.path)
            warn_if_affected()
        try:
            self.db = self._open(in_memory)
        except sqlite3.DatabaseError as exc:
            if not (reading and unwritable(exc)):
                raise (
                    explain(self.path, exc, self.timeout_s) or RegistryError(f"cannot open registry {self.path}: {exc}")
                ) from None
            self.read_only = True
            self.db = self._open_read_only()

    def _connect(self, target: str, uri: bool = False) -> sqlite_utils.Database:
        conn = sqlite3.connect(target, timeout=self.timeout_s, isolation_level=None, check_same_thread=False, uri=uri)
        db = sqlite_utils.Database(conn)
        db.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
        return db

    def _open(self, in_memory: bool) -> sqlite_utils.Database:
        db = self._connect(str(self.path))
        try:
            self._refuse_newer(db)
            if not in_memory:
                db.enable_wal()
            migrate(db)
            damaged = damage(db)
        except BaseException:
            db.close()
            raise
        if damaged:
            db.close()
            raise RegistryError(
                f"registry {self.path} is damaged ({damaged}) although its migrations are recorded: another program "
                "dropped or overwrote part of it. Move the file aside (keep it to inspect with "
                "sqlite3) and tritongym starts a new registry there, or name another with --registry"
            )
        return db

    def _open_read_only(self) -> sqlite_utils.Database:
        """The registry opened for reading only.  SQLite reads a WAL database read-only when its -wal and -shm
        files exist or can be made; in a read-only folder where they cannot, the file is read as immutable
        (no writer can be at work there: a writer keeps both files beside the database)."""
        target = f"file:{quote(str(self.path.resolve()))}"
        db = None
        try:
            db = self._connect(target + "?mode=ro", uri=True)
            try:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError:
                db.close()
                db = None
                db = self._connect(target + "?immutable=1", uri=True)
            self._refuse_newer(db)
            pending = pending_migrations(db)
            if pending:
                raise RegistryError(
                    f"registry {self.path} is read-only and older than this tritongym: it lacks migrations "
                    f"{', '.join(pending)}, which need a write; make it writable once (any tritongym command then "
                    "migrates it), or read it with the tritongym that wrote it"
                )
        except BaseException as exc:
            if db is not None:
                db.close()
            if isinstance(exc, sqlite3.DatabaseError):
                error = explain(self.path, exc, self.timeout_s)
                raise (error or RegistryError(f"cannot open registry {self.path}: {exc}")) from None
            raise
        return db

    def _refuse_newer(self, db: sqlite_utils.Database) -> None:
        """A registry that records migrations this tritongym does not know was written by a newer one: its
        schema is not ours to extend or judge, so it is refused before any write (and never called damaged)."""
        newer = unknown_migrations(db)
        if newer:
            raise RegistryError(
                f"registry {self.path} was written by a newer tritongym (it records migrations this version does not "
                f"know: {', '.join(newer)}); it was left untouched. Upgrade tritongym (pip install -U tritongym) to "
                "use it, or name another registry with --registry"
            )

    @contextmanager
    def writes_may_fail(self):
        """Inside, a write the registry refuses (read-only, locked past the wait, damaged, disk full) is
        recorded in `write_failure` instead of raised, and the writes after it are skipped: a caller holding
        work worth more than the row (a verdict) finishes it and then reports what was not stored."""
        self.write_failure = None
        self._writes_may_fail = True
        try:
            yield self
        finally:
            self._writes_may_fail = False

    @contextmanager
    def _transaction(self):
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite rolled back itself (a full disk, a damaged page): the first error is the one to tell
            raise
        self.db.execute("COMMIT")

    # --- evaluations -----------------------------------------------------------------------------------

    _KEY_WHERE = (
        "problem_key = ? AND kernel_id = ? AND backend = ? AND device_class = ? AND protocol = ? AND config_key = ?"
    )

    def _find(self, columns: str, key: list) -> dict | None:
        """The evaluation row with this cache key (problem, kernel, backend, device class, protocol, config)."""
        rows = list(self.db.query(f"SELECT {columns} FROM evaluations WHERE {self._KEY_WHERE}", key))
        return rows[0] if rows else None

    def lookup(
        self, problem_key: str, kernel_id: str, backend: str, device_class: str, protocol: str, config_key: str = ""
    ) -> EvaluationResult | None:
        row = self._find("id, result", [problem_key, kernel_id, backend, device_class, protocol, config_key])
        if row is None:
            return None
        result = EvaluationResult.model_validate_json(row["result"])
        return result.model_copy(update={"cached": True, "evaluation_id": row["id"]})

    @writes()
    def store(
        self,
        result: EvaluationResult,
        problem: Problem,
        candidate: Candidate,
        config_key: str = "",
        precision: str | None = None,
    ) -> int:
        """Insert or refresh one evaluation (with its problem and kernel) in a single transaction.

        `precision` is the policy (ieee or tf32) the verdict was reached under; when the caller does not say,
        it is read from the result's timing report, else from another evaluation under the same protocol
        (whose key hashes the precision), else left unknown (NULL) until a run's turn links the evaluation
        to a config that names it (`add_turn`)."""
        now = _now()
        if precision is None and result.timing is not None and result.timing.precision in PRECISIONS:
            precision = result.timing.precision
        samples = result.timing.candidate.samples if result.timing and result.timing.candidate else None
        with self._transaction():
            if precision is None:
                known = self.db.execute(
                    "SELECT precision FROM evaluations WHERE protocol = ? AND precision IS NOT NULL LIMIT 1",
                    [result.protocol],
                ).fetchone()
                precision = known[0] if known else None
            self.db["problems"].insert(
                {
                    "key": problem.key,
                    "name": problem.name,
                    "size": problem.size,
                    "sizes": json.dumps(problem.sizes, sort_keys=True),
                    "category": problem.category,
                    "description": problem.description,
                    "origin": problem.origin,
                    "source": problem.source,
                    "created_at": now,
                },
                ignore=True,
            )
            self.db["kernels"].insert(
                {"id": result.kernel_id, "source": candidate.source, "origin": candidate.origin, "created_at": now},
                ignore=True,
            )
            row = {
                "problem_key": result.problem_key,
                "problem_name": result.problem_id,
                "kernel_id": result.kernel_id,
                "backend": result.backend,
                "device": result.device,
                "device_class": result.device_class,
                "size": result.size,
                "protocol": result.protocol,
                "config_key": config_key,
                "status": result.status.value,
                "correct": int(result.correct),
                "hacked": int(result.hacked),
                "runtime_ms": result.runtime_ms,
                "ref_runtime_ms": result.ref_runtime_ms,
                "speedup": result.speedup,
                "compile_ref_runtime_ms": result.compile_ref_runtime_ms,
                "compile_speedup": result.compile_speedup,
                "field_ref_runtime_ms": result.field_ref_runtime_ms,
                "speedup_field": result.speedup_field,
                "field_convention": result.field_convention,
                "pr": result.pr,
                **_reward_columns(result.reward),
                "message": result.message,
                "created_at": now,
                "result": result.model_dump_json(exclude={"cached", "evaluation_id"}),
                "timing_samples": samples,
                "autotune": json.dumps([c.model_dump() for c in result.autotune]),
            }
            if precision is not None:  # a refresh that cannot tell keeps what the row knew
                row["precision"] = precision
            key = [row[k] for k in ("problem_key", "kernel_id", "backend", "device_class", "protocol")]
            existing = self._find("id", [*key, config_key])
            if existing:
                evaluation_id = existing["id"]
                self.db["evaluations"].update(evaluation_id, row)
            else:
                evaluation_id = self.db["evaluations"].insert(row).last_pk
            if precision is not None:  # one protocol key, one precision: rows stored unknowing learn it
                self.db.execute(
                    "UPDATE evaluations SET precision = ? WHERE protocol = ? AND precision IS NULL",
                    [precision, result.protocol],
                )
        return int(evaluation_id)

    @writes()
    def refresh(self, result: EvaluationResult) -> None:
        """Record what a stored evaluation learnt since: its reward re-scored under other rewards, or its
        speedup against a torch.compile reference timed later; in the columns and the stored result alike.
        The verdict itself (status, checks, runtime) is never rewritten here."""
        if result.evaluation_id is None:
            raise RegistryError("refresh needs a result read from the registry (it has no evaluation_id)")
        with self._transaction():
            self.db["evaluations"].update(
                result.evaluation_id,
                {
                    **_reward_columns(result.reward),
                    "compile_ref_runtime_ms": result.compile_ref_runtime_ms,
                    "compile_speedup": result.compile_speedup,
                    "result": result.model_dump_json(exclude={"cached", "evaluation_id"}),
                },
            )

    def reward_of(self, evaluation_id: int) -> RewardBreakdown | None:
        """The reward breakdown stored with an evaluation; None for no such row or one stored before the
        breakdown was recorded."""
        rows = list(self.db.query("SELECT reward_components FROM evaluations WHERE id = ?", [evaluation_id]))
        raw = rows[0]["reward_components"] if rows else None
        return RewardBreakdown.model_validate_json(raw) if raw and raw != "{}" else None

    # --- queries ---------------------------------------------------------------------------------------

    def best(
        self,
        problem_name: str | Iterable[str] | None,
        device_class: str | None = None,
        size: str | None = None,
        **filters,
    ) -> dict | None:
        """The fastest honest kernel for a problem (or the fastest over a set of problems), or None.

        Takes the filters of `ranked` (backend, precision, run_id, min_measurements, by); the row is the
        evaluation's columns plus the kernel's `source`."""
        rows = self.ranked(problem_name, device_class, size, limit=1, **filters)
        return rows[0] if rows else None

    def ranked(
        self,
        problem_name: str | Iterable[str] | None = None,
        device_class: str | None = None,
        size: str | None = None,
        *,
        backend: str | None = None,
        precision: str | None = None,
        run_id: int | Iterable[int] | None = None,
        min_measurements: int | None = None,
        by: str = "runtime",
        one_per: str | None = None,
        limit: int | None = None,
        problem_keys: Iterable[str] | None = None,
    ) -> list[dict]:
        """Every honest evaluation (status ok, correct, not hacked) matching the filters, best first.

        `problem_name`: one name or a set (None: every problem). `precision`: the policy the verdict was
        reached under (evaluations whose precision is unknown never match). `run_id`: kernels that turns
        of this run (or these runs) produced for the problem, wherever they were evaluated since.
        `min_measurements`: the candidate's median runtime came from at least this many timed samples
        (`timing.candidate.samples`; untimed evaluations have none and never match). `by`: `runtime`
        (lowest runtime_ms first, then highest speedup) or `speedup` (highest speedup first); untimed
        evaluations come after timed ones, earliest first.  `one_per`: "problem" or "kernel" keeps only the
        best evaluation of each problem (a leaderboard) or of each kernel (distinct kernels).  `problem_keys`: the
        content keys of the problems named, matched beside their names (`_honest_where`)."""
        where, params = _honest_where(
            problem_name, device_class, size, backend, precision, run_id, min_measurements, problem_keys
        )
        rows = f"SELECT e.*, k.source AS source FROM evaluations e JOIN kernels k ON k.id = e.kernel_id WHERE {where}"
        if one_per is not None:
            if one_per not in _ONE_PER:
                raise ValueError(f"one_per 'problem' or 'kernel', not {one_per!r}")
            rows = (
                f"SELECT * FROM (SELECT e.*, k.source AS source, ROW_NUMBER() OVER (PARTITION BY "
                f"{_ONE_PER[one_per]} ORDER BY {_order(by)}) AS rank FROM evaluations e JOIN kernels k "
                f"ON k.id = e.kernel_id WHERE {where}) e WHERE rank = 1"
            )
        sql = f"{rows} ORDER BY {_order(by)}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return list(self.db.query(sql, params))

    def leaderboard(self, problem_names: str | Iterable[str] | None = None, *args, **filters) -> list[dict]:
        """The best honest kernel per problem under the filters of `ranked`: one row per problem, by name."""
        rows = self.ranked(problem_names, *args, one_per="problem", **filters)
        return sorted(rows, key=lambda row: row["problem_name"])

    def runs_of(self, kernel_id: str, problem_name: str | None = None) -> list[int]:
        """The runs whose turns produced this kernel (for this problem, if named), in order."""
        sql, params = "SELECT DISTINCT run_id FROM turns WHERE kernel_id = ?", [kernel_id]
        if problem_name is not None:
            sql += " AND (problem_name = ? OR problem_key IN (SELECT key FROM problems WHERE name = ?))"
            params += [problem_name, problem_name]
        return [r[0] for r in self.db.execute(sql + " ORDER BY run_id", params).fetchall()]

    def resolve_kernel_id(self, prefix: str) -> str | None:
        """The full id of the kernel whose id is or starts with `prefix` (tables show 8-12 characters);
        None when no kernel matches; a TritonGymError when several do."""
        if self.db.execute("SELECT 1 FROM kernels WHERE id = ?", [prefix]).fetchone():
            return prefix
        ids = [
            r[0]
            for r in self.db.execute(
                "SELECT id FROM kernels WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6", [len(prefix), prefix]
            )
        ]
        if len(ids) > 1:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            raise TritonGymError(f"kernel id prefix '{prefix}' is ambiguous ({shown}); give more characters")
        return ids[0] if ids else None

    def kernel_history(self, kernel_id: str) -> dict | None:
        """Where a kernel came from: its source, every evaluation of it and every turn that produced it
        (with its run's kind and name), oldest first; None for a kernel the registry has not seen.
        `kernel_id` may be a unique prefix."""
        full = self.resolve_kernel_id(kernel_id)
        if full is None:
            return None
        kernel = self.db["kernels"].get(full)
        evaluations = list(
            self.db.query(
                "SELECT id, problem_name, problem_key, backend, device, device_class, size, protocol, config_key, "
                "precision, status, correct, hacked, runtime_ms, ref_runtime_ms, speedup, compile_ref_runtime_ms, "
                "compile_speedup, field_ref_runtime_ms, speedup_field, field_convention, pr, reward, "
                "timing_samples, message, created_at FROM evaluations WHERE kernel_id = ? ORDER BY id",
                [full],
            )
        )
        turns = list(
            self.db.query(
                "SELECT t.id, t.run_id, r.kind AS run_kind, r.name AS run_name, t.step, t.turn, t.sample, "
                "coalesce(t.problem_name, p.name) AS problem_name, t.evaluation_id, t.status, t.reward, "
                "t.advantage, t.kept, t.created_at FROM turns t LEFT JOIN runs r ON r.id = t.run_id "
                "LEFT JOIN problems p ON p.key = t.problem_key WHERE t.kernel_id = ? ORDER BY t.id",
                [full],
            )
        )
        return {"kernel": dict(kernel), "evaluations": evaluations, "turns": turns}

    def problem_names(self) -> set[str]:
        """The name of every problem the registry has seen (what `best` and `tune` can look up)."""
        return {r["name"] for r in self.db.query("SELECT DISTINCT name FROM problems")}

    def stats(self) -> dict:
        by_status = {
            r["status"]: r["n"]
            for r in self.db.query("SELECT status, count(*) AS n FROM evaluations GROUP BY status ORDER BY status")
        }
        by_backend = {
            f"{r['backend']} @ {r['device_class']}": r["n"]
            for r in self.db.query(
                "SELECT backend, device_class, count(*) AS n FROM evaluations GROUP BY backend, device_class"
            )
        }
        solved = self.db.execute("SELECT count(DISTINCT problem_name) FROM evaluations WHERE status = 'ok'").fetchone()[
            0
        ]
        return {
            "path": str(self.path),
            "problems": self.db["problems"].count,
            "kernels": self.db["kernels"].count,
            "evaluations": self.db["evaluations"].count,
            "problems_solved": solved,
            "runs": self.db["runs"].count,
            "turns": self.db["turns"].count,
            "tuning_records": self.db["tuning_records"].count,
            "by_status": by_status,
            "by_backend": by_backend,
        }

    # --- reference timings and device facts ----------------------------------------------------------

    def reference_timing(
        self, problem_key: str, device_class: str, precision: str, variant: str = "eager"
    ) -> dict | None:
        """The cached reference TimingStats (as a dict) for this problem, device class and precision policy;
        `variant` "eager" is the reference as written, "compile" the reference under torch.compile, "field" the
        reference under the field's convention (core/measure/field_convention.py), stored only where it differs."""
        rows = list(
            self.db.query(
                "SELECT stats FROM reference_timings WHERE problem_key = ? AND device_class = ? AND precision = ? "
                "AND variant = ?",
                [problem_key, device_class, precision, variant],
            )
        )
        return json.loads(rows[0]["stats"]) if rows and rows[0]["stats"] else None

    @writes()
    def store_reference_timing(
        self, problem_key: str, device_class: str, precision: str, stats: dict, fingerprint: str, variant: str = "eager"
    ) -> None:
        with self._transaction():
            self.db["reference_timings"].upsert(
                {
                    "problem_key": problem_key,
                    "device_class": device_class,
                    "precision": precision,
                    "variant": variant,
                    "runtime_ms": stats["median_ms"],
                    "iqr_ms": stats["iqr_ms"],
                    "samples": stats["samples"],
                    "stats": json.dumps(stats),
                    "fingerprint": fingerprint,
                    "created_at": _now(),
                },
                pk=("problem_key", "device_class", "precision", "variant"),
            )

    @writes()
    def forget_reference_timing(
        self, problem_key: str, device_class: str, precision: str, variant: str = "eager"
    ) -> None:
        """Drop a cached reference that no longer agrees with paired timings; the next task re-times it."""
        with self._transaction():
            self.db.execute(
                "DELETE FROM reference_timings WHERE problem_key = ? AND device_class = ? AND precision = ? "
                "AND variant = ?",
                [problem_key, device_class, precision, variant],
            )

    # --- the reference side's GPU memory -----------------------------------------------------------------

    def reference_memory(self, problem_key: str, device_class: str) -> tuple[float | None, float | None]:
        """(GPU peak, host MiB parked) of the reference side that its keeper measured for this problem on this
        device class; None where not measured (the host's was not kept before the registry's migration 18)."""
        rows = list(
            self.db.query(
                "SELECT peak_mb, host_mb FROM reference_memory WHERE problem_key = ? AND device_class = ?",
                [problem_key, device_class],
            )
        )
        if not rows:
            return None, None
        host = rows[0]["host_mb"]
        return float(rows[0]["peak_mb"]), None if host is None else float(host)

    @writes()
    def store_reference_memory(
        self, problem_key: str, device_class: str, peak_mb: float, host_mb: float | None = None
    ) -> None:
        with self._transaction():
            row = {"problem_key": problem_key, "device_class": device_class, "peak_mb": peak_mb, "host_mb": host_mb}
            self.db["reference_memory"].upsert({**row, "measured_at": _now()}, pk=("problem_key", "device_class"))

    # --- problem screens (negative controls) ----------------------------------------------------------

    def problem_screen(self, problem_key: str, device_class: str, screen_key: str) -> dict | None:
        """The stored screen (a ScreenResult as a dict) of this problem, device class and screen key."""
        rows = list(
            self.db.query(
                "SELECT screen FROM problem_screens WHERE problem_key = ? AND device_class = ? AND screen_key = ?",
                [problem_key, device_class, screen_key],
            )
        )
        return json.loads(rows[0]["screen"]) if rows else None

    @writes()
    def store_problem_screen(self, problem: Problem, device_class: str, screen_key: str, screen: dict) -> None:
        with self._transaction():
            self.db["problem_screens"].upsert(
                {
                    "problem_key": problem.key,
                    "device_class": device_class,
                    "screen_key": screen_key,
                    "problem_name": problem.name,
                    "degenerate": int(bool(screen.get("degenerate"))),
                    "passing_controls": json.dumps(screen.get("passing_controls", [])),
                    "screen": json.dumps(screen),
                    "created_at": _now(),
                },
                pk=("problem_key", "device_class", "screen_key"),
            )

    def bandwidth(self, device_class: str) -> float | None:
        rows = list(self.db.query("SELECT copy_gbps FROM device_bandwidth WHERE device_class = ?", [device_class]))
        return rows[0]["copy_gbps"] if rows else None

    @writes()
    def store_bandwidth(self, device_class: str, copy_gbps: float, fingerprint: str) -> None:
        with self._transaction():
            self.db["device_bandwidth"].upsert(
                {
                    "device_class": device_class,
                    "copy_gbps": copy_gbps,
                    "fingerprint": fingerprint,
                    "measured_at": _now(),
                },
                pk="device_class",
            )

    # --- runs and turns --------------------------------------------------------------------------------

    @writes()
    def start_run(self, kind: str, name: str, config: dict) -> int:
        with self._transaction():
            return int(
                self.db["runs"]
                .insert(
                    {
                        "kind": kind,
                        "name": name,
                        "config": json.dumps(config),
                        "started_at": _now(),
                        "finished_at": None,
                    }
                )
                .last_pk
            )

    @writes()
    def add_turn(
        self,
        run_id: int,
        result: EvaluationResult | None,
        sample: int = 0,
        turn: int = 1,
        prompt: str = "",
        response: str = "",
        *,
        problem: Problem | None = None,
        step: int | None = None,
        status: str | None = None,
        message: str | None = None,
        reward: RewardBreakdown | None = None,
        advantage: float | None = None,
        kept: bool | None = None,
    ) -> int:
        """Store one turn of a run.  A turn whose response held no code has no `result`: pass the `problem`
        and a `status`/`message` saying so (its reward is then `reward`, or 0)."""
        if result is None and problem is None:
            raise ValueError("a turn without an evaluation result needs the problem it was for")
        reward = reward if reward is not None else (result.reward if result is not None else RewardBreakdown())
        row = {
            "run_id": run_id,
            "sample": sample,
            "turn": turn,
            "problem_key": result.problem_key if result is not None else problem.key,
            "problem_name": result.problem_id if result is not None else problem.name,
            "kernel_id": result.kernel_id if result is not None else None,
            "evaluation_id": result.evaluation_id if result is not None else None,
            **_reward_columns(reward),
            "prompt": prompt,
            "response": response,
            "step": step,
            "status": status if status is not None else (result.status.value if result is not None else None),
            "message": message if message is not None else (result.message if result is not None else ""),
            "advantage": advantage,
            "kept": None if kept is None else int(kept),
            "created_at": _now(),
        }
        with self._transaction():
            turn_id = int(self.db["turns"].insert(row).last_pk)
            if row["evaluation_id"] is not None:
                self._learn_precision(run_id, row["evaluation_id"])
            return turn_id

    def _learn_precision(self, run_id: int, evaluation_id: int) -> None:
        """An evaluation of unknown precision linked to a run whose config names one takes it, and so do the
        other unknown evaluations under the same protocol (inside the caller's transaction)."""
        found = self.db.execute(
            "SELECT e.protocol, r.config FROM evaluations e, runs r "
            "WHERE e.id = ? AND r.id = ? AND e.precision IS NULL",
            [evaluation_id, run_id],
        ).fetchone()
        precision = _precision_in(found[1]) if found else None
        if precision is not None:
            self.db.execute(
                "UPDATE evaluations SET precision = ? WHERE precision IS NULL AND (id = ? OR protocol = ?)",
                [precision, evaluation_id, found[0]],
            )

    @writes()
    def update_turn(self, turn_id: int, **values) -> None:
        """Fill in what is known only after the whole batch (the advantage, whether the turn was kept)."""
        allowed = {"advantage", "kept"}
        if set(values) - allowed:
            raise ValueError(f"only {sorted(allowed)} of a stored turn can change, not {sorted(set(values) - allowed)}")
        if "kept" in values and values["kept"] is not None:
            values["kept"] = int(values["kept"])
        with self._transaction():
            self.db["turns"].update(turn_id, values)

    def turns(self, run_id: int) -> list[dict]:
        """Every stored turn of a run, in the order they were stored."""
        return list(self.db["turns"].rows_where("run_id = ?", [run_id], order_by="id"))

    @writes()
    def finish_run(self, run_id: int) -> None:
        with self._transaction():
            self.db["runs"].update(run_id, {"finished_at": _now()})

    def close(self) -> None:
        self.db.close()


guard_reads(Registry)
