"""Named, re-runnable migrations of registry.db (the pattern of simonw/llm's migrations.py).

Each function runs once; its name is recorded in `_tritongym_migrations`, so running `migrate` again is
a no-op and a database created by an older tritongym is brought forward step by step.  Append new
migrations at the end; never edit one that has shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from tritongym.core.errors import RegistryError
from tritongym.core.registry.sqlite import sqlite_utils  # first: sqlite-utils without pandas

MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = []
MIGRATIONS_TABLE = "_tritongym_migrations"


def migration(fn: Callable[[sqlite_utils.Database], None]):
    MIGRATIONS.append(fn)
    return fn


def _recorded(db: sqlite_utils.Database) -> list[str]:
    if MIGRATIONS_TABLE not in db.table_names():
        return []
    return [row[0] for row in db.execute(f"SELECT name FROM [{MIGRATIONS_TABLE}] ORDER BY rowid")]


def unknown_migrations(db: sqlite_utils.Database) -> list[str]:
    """Migrations the database records that this tritongym does not define: a newer tritongym wrote it."""
    known = {fn.__name__ for fn in MIGRATIONS}
    return [name for name in _recorded(db) if name not in known]


def pending_migrations(db: sqlite_utils.Database) -> list[str]:
    """Migrations this tritongym defines that the database has not recorded (all of them for a blank one)."""
    recorded = set(_recorded(db))
    return [fn.__name__ for fn in MIGRATIONS if fn.__name__ not in recorded]


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Apply every migration not yet recorded; returns the names applied now.

    Each migration runs in its own IMMEDIATE transaction and re-reads the record inside it, so two
    processes opening a new registry at once apply each step exactly once.  A database recording a
    migration this version does not know (a newer tritongym wrote it) is refused before any write.
    """
    newer = unknown_migrations(db)
    if newer:
        raise RegistryError(
            f"written by a newer tritongym (it records migrations this version does not know: {', '.join(newer)}); "
            "upgrade tritongym to use it"
        )
    if not pending_migrations(db):
        return []  # read, not written: an up-to-date registry opens while another process holds its write lock
    db.execute(f"CREATE TABLE IF NOT EXISTS [{MIGRATIONS_TABLE}] (name TEXT PRIMARY KEY, applied_at TEXT)")
    applied = []
    for fn in MIGRATIONS:
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute(f"SELECT 1 FROM [{MIGRATIONS_TABLE}] WHERE name = ?", [fn.__name__]).fetchone():
                db.execute("COMMIT")
                continue
            fn(db)
            db[MIGRATIONS_TABLE].insert(
                {"name": fn.__name__, "applied_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        applied.append(fn.__name__)
    return applied


def damage(db: sqlite_utils.Database) -> str | None:
    """What is missing from a migrated database, in words (None when its schema is whole).

    `migrate` trusts the migrations table, so a registry whose tables were dropped, or whose write-ahead
    log was overwritten (a blank schema behind a surviving table list), would pass it and then fail at the
    first query.  The reference is the schema a blank database gets from the same migrations."""
    expected = _blank_schema()
    actual = {t.name: set(t.columns_dict) for t in db.tables}
    actual.update({v: set() for v in db.view_names()})
    missing = sorted(name for name in expected if name not in actual)
    if missing:
        return "missing " + ", ".join(missing)
    short = {name: sorted(cols - actual[name]) for name, cols in expected.items() if cols - actual[name]}
    if short:
        return "; ".join(f"{name} lacks {', '.join(cols)}" for name, cols in sorted(short.items()))
    return None


_BLANK: dict[str, set[str]] = {}


def _blank_schema() -> dict[str, set[str]]:
    """Table -> columns (views -> empty) of a blank database after every migration, computed once."""
    if not _BLANK:
        blank = sqlite_utils.Database(memory=True)
        migrate(blank)
        _BLANK.update({t.name: set(t.columns_dict) for t in blank.tables})
        _BLANK.update({v: set() for v in blank.view_names()})
        blank.close()
    return _BLANK


@migration
def m001_problems_and_kernels(db: sqlite_utils.Database) -> None:
    # problems: one row per (reference source, sizes); `key` is the hash evaluations point at, `name` is
    # what people type. kernels: one row per normalised source, the first spelling seen kept as `source`.
    db["problems"].create(
        {
            "key": str,
            "name": str,
            "size": str,
            "sizes": str,
            "category": str,
            "description": str,
            "origin": str,
            "source": str,
            "created_at": str,
        },
        pk="key",
    )
    db["problems"].create_index(["name"])
    db["kernels"].create({"id": str, "source": str, "origin": str, "created_at": str}, pk="id")


@migration
def m002_evaluations(db: sqlite_utils.Database) -> None:
    # One verdict per kernel x problem x backend x device class x protocol x config variant: the cache key
    # that lets training and test-time scaling skip any kernel already judged. `config_key` is empty for a
    # kernel as written and names a launch configuration (tile sizes, warps, stages) for tuned variants.
    db["evaluations"].create(
        {
            "id": int,
            "problem_key": str,
            "problem_name": str,
            "kernel_id": str,
            "backend": str,
            "device": str,
            "device_class": str,
            "size": str,
            "protocol": str,
            "config_key": str,
            "status": str,
            "correct": int,
            "hacked": int,
            "runtime_ms": float,
            "ref_runtime_ms": float,
            "speedup": float,
            "pr": float,
            "reward": float,
            "message": str,
            "result": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("problem_key", "problems", "key"), ("kernel_id", "kernels", "id")],
        defaults={"config_key": ""},
    )
    db["evaluations"].create_index(
        ["problem_key", "kernel_id", "backend", "device_class", "protocol", "config_key"], unique=True
    )
    db["evaluations"].create_index(["problem_name", "device_class", "status"])


@migration
def m003_reference_timings(db: sqlite_utils.Database) -> None:
    # Reference runtimes per problem x device class x precision policy, so a problem's reference is timed
    # once per device rather than once per candidate (the paired in-worker timing still runs).
    db["reference_timings"].create(
        {
            "problem_key": str,
            "device_class": str,
            "precision": str,
            "runtime_ms": float,
            "iqr_ms": float,
            "samples": int,
            "fingerprint": str,
            "created_at": str,
        },
        pk=("problem_key", "device_class", "precision"),
    )


@migration
def m004_runs_and_turns(db: sqlite_utils.Database) -> None:
    # Every rollout turn of training, test-time scaling or a batch evaluation, linked to its evaluation,
    # so a kernel found in one run seeds another.
    db["runs"].create(
        {"id": int, "kind": str, "name": str, "config": str, "started_at": str, "finished_at": str},
        pk="id",
    )
    db["turns"].create(
        {
            "id": int,
            "run_id": int,
            "sample": int,
            "turn": int,
            "problem_key": str,
            "kernel_id": str,
            "evaluation_id": int,
            "reward": float,
            "prompt": str,
            "response": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id"), ("evaluation_id", "evaluations", "id")],
    )
    db["turns"].create_index(["run_id", "sample", "turn"])


@migration
def m005_best_kernels_view(db: sqlite_utils.Database) -> None:
    # The fastest honest kernel per problem x size x device class; without timings (CPU backend), the
    # earliest correct one.
    db.create_view(
        "best_kernels",
        """
        SELECT * FROM (
            SELECT e.*, ROW_NUMBER() OVER (
                PARTITION BY e.problem_name, e.size, e.device_class
                ORDER BY e.runtime_ms IS NULL, e.runtime_ms, e.id
            ) AS rank
            FROM evaluations e
            WHERE e.status = 'ok' AND e.correct = 1 AND e.hacked = 0
        ) WHERE rank = 1
        """,
    )


@migration
def m006_timing_facts(db: sqlite_utils.Database) -> None:
    # The full TimingStats of a cached reference timing (mode, L2 policy, samples) beside its median, and
    # the measured copy bandwidth per device class: the roofline every candidate is held to.
    db["reference_timings"].add_column("stats", str)
    db["device_bandwidth"].create(
        {"device_class": str, "copy_gbps": float, "fingerprint": str, "measured_at": str}, pk="device_class"
    )


@migration
def m007_reward_components(db: sqlite_utils.Database) -> None:
    # The whole reward beside its total, as JSON {total, components, weights, absent, penalty}: estimators
    # and reports need the components (and which were absent, and why), not only the sum. Rows stored
    # before this migration keep "{}" until they are stored again.
    db["evaluations"].add_column("reward_components", str, not_null_default="{}")
    db["turns"].add_column("reward_components", str, not_null_default="{}")


@migration
def m008_training_turns(db: sqlite_utils.Database) -> None:
    # Rollout turns of training and test-time runs carry what the learner did with them: the step, the
    # status (including `no_code`, a turn with nothing to evaluate and so no evaluation row), the
    # advantage and whether the turn kept its gradient, so a run can be audited turn by turn.
    for column, kind in (
        ("problem_name", str),
        ("step", int),
        ("status", str),
        ("message", str),
        ("advantage", float),
        ("kept", int),
    ):
        db["turns"].add_column(column, kind)
    db["turns"].create_index(["problem_name", "status"])


@migration
def m009_evaluation_precision_and_samples(db: sqlite_utils.Database) -> None:
    # The precision policy (ieee or tf32) each verdict was reached under, and how many timed samples the
    # candidate's median runtime came from, as columns `tritongym best` can filter on. The protocol key
    # hashes the precision but cannot be read back, so old rows are backfilled from what they say: the
    # timing report (GPU evaluations), else the config of a run whose turn links the evaluation, else
    # another evaluation under the same protocol (one protocol key means one precision). What none of
    # these tells stays NULL: unknown, never guessed.
    db["evaluations"].add_column("precision", str)
    db["evaluations"].add_column("timing_samples", int)
    db.execute(
        """
        UPDATE evaluations SET
            precision = CASE WHEN json_valid(result) THEN json_extract(result, '$.timing.precision') END,
            timing_samples = CASE WHEN json_valid(result) THEN json_extract(result, '$.timing.candidate.samples') END
        """
    )
    db.execute(
        """
        UPDATE evaluations SET precision = (
            SELECT coalesce(json_extract(r.config, '$.precision'), json_extract(r.config, '$.eval.precision'))
            FROM turns t JOIN runs r ON r.id = t.run_id
            WHERE t.evaluation_id = evaluations.id AND json_valid(r.config) AND json_type(r.config) = 'object'
              AND coalesce(json_extract(r.config, '$.precision'), json_extract(r.config, '$.eval.precision'))
                  IN ('ieee', 'tf32')
            LIMIT 1
        ) WHERE precision IS NULL
        """
    )
    db.execute(
        """
        UPDATE evaluations SET precision = (
            SELECT e.precision FROM evaluations e
            WHERE e.protocol = evaluations.protocol AND e.precision IS NOT NULL LIMIT 1
        ) WHERE precision IS NULL
        """
    )
    db["evaluations"].create_index(["kernel_id"], if_not_exists=True)
    db["evaluations"].create_index(["protocol", "precision"], if_not_exists=True)
    db["turns"].create_index(["kernel_id"], if_not_exists=True)


@migration
def m010_compile_reference(db: sqlite_utils.Database) -> None:
    # A second baseline: the reference under torch.compile. Evaluations get its runtime and
    # the speedup against it beside the eager ones (NULL where it was not timed: unknown, never guessed);
    # cached reference timings get a `variant` ("eager" or "compile") in their key. SQLite cannot change a
    # primary key in place, so the table is rebuilt; every existing row is an eager timing.
    db["evaluations"].add_column("compile_ref_runtime_ms", float)
    db["evaluations"].add_column("compile_speedup", float)
    db.execute("ALTER TABLE reference_timings RENAME TO reference_timings_m009")
    db["reference_timings"].create(
        {
            "problem_key": str,
            "device_class": str,
            "precision": str,
            "variant": str,
            "runtime_ms": float,
            "iqr_ms": float,
            "samples": int,
            "fingerprint": str,
            "created_at": str,
            "stats": str,
        },
        pk=("problem_key", "device_class", "precision", "variant"),
        not_null={"variant"},
        defaults={"variant": "eager"},
    )
    db.execute(
        """
        INSERT INTO reference_timings
            (problem_key, device_class, precision, variant, runtime_ms, iqr_ms, samples, fingerprint, created_at, stats)
        SELECT problem_key, device_class, precision, 'eager', runtime_ms, iqr_ms, samples, fingerprint, created_at,
               stats
        FROM reference_timings_m009
        """
    )
    db.execute("DROP TABLE reference_timings_m009")


@migration
def m011_autotune_choices(db: sqlite_utils.Database) -> None:
    # The config each autotuned kernel of the candidate ran with: a JSON list of AutotuneChoice
    # ({kernel, config, configs, declared, how, autotune_s, when}), `[]` when the candidate autotunes
    # nothing. Rows stored before this migration keep NULL: not recorded, never guessed (the stored result
    # JSON has no such field either).
    db["evaluations"].add_column("autotune", str)


@migration
def m012_tuning_records(db: sqlite_utils.Database) -> None:
    # `tritongym tune`: one row per launch configuration measured for a source kernel. The variant
    # (the source with the configuration baked in) is an ordinary kernel with its own evaluation, so `best`
    # finds it like any other; this table says which source and configuration it came from, which strategy
    # proposed it and what it measured. Unique per source, variant, backend, device class and protocol: a
    # tuning run twice, or resumed, finds its rows and starts no worker. Rows of the same problem and source
    # under another device class or size seed a new tuning (transfer).
    db["tuning_records"].create(
        {
            "id": int,
            "problem_key": str,
            "problem_name": str,
            "source_kernel_id": str,
            "kernel_id": str,
            "config": str,
            "strategy": str,
            "backend": str,
            "device_class": str,
            "size": str,
            "protocol": str,
            "status": str,
            "runtime_ms": float,
            "runtime_iqr_ms": float,
            "evaluation_id": int,
            "message": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[
            ("problem_key", "problems", "key"),
            ("source_kernel_id", "kernels", "id"),
            ("evaluation_id", "evaluations", "id"),
        ],
    )
    db["tuning_records"].create_index(
        ["problem_key", "source_kernel_id", "backend", "device_class", "protocol", "kernel_id"], unique=True
    )
    db["tuning_records"].create_index(["problem_name", "source_kernel_id"])
    db["tuning_records"].create_index(["kernel_id"])


@migration
def m013_problem_screens(db: sqlite_utils.Database) -> None:
    # The negative controls of `problems check`, computed once per problem, device class and
    # tolerances and kept here: an evaluation on a problem degenerate for a control (zeros, a constant, the
    # identity pass its correctness check) probes the candidate on inputs that break the control. `screen`
    # is the ScreenResult as JSON (passing controls, the breaking input transform of each); `screen_key`
    # holds the screen's version and a digest of the tolerances. A screen whose reference failed is never
    # stored.
    db["problem_screens"].create(
        {
            "problem_key": str,
            "device_class": str,
            "screen_key": str,
            "problem_name": str,
            "degenerate": int,
            "passing_controls": str,
            "screen": str,
            "created_at": str,
        },
        pk=("problem_key", "device_class", "screen_key"),
    )


@migration
def m014_judge_verdicts(db: sqlite_utils.Database) -> None:
    # The verdicts of model-judged checks (`llm-judge`): one per check x kernel x problem x judge
    # model x prompt template, so a kernel judged once is not sent to the same model with the same prompt
    # again, whichever run, protocol or `--no-cache` evaluation judges it next (the evaluations table is keyed
    # by protocol; a judge's verdict does not depend on it). `passed` is NULL where the answer said neither
    # pass nor fail; the raw `answer` is kept, so the check's policy decides at each use. It touches no
    # other table and needs no other migration; kernels are referenced by id only, since a verdict is
    # reached before the evaluation that stores the kernel row.
    db["judge_verdicts"].create(
        {
            "check_name": str,
            "kernel_id": str,
            "problem_key": str,
            "judge_model": str,
            "template_hash": str,
            "passed": int,
            "reason": str,
            "answer": str,
            "created_at": str,
        },
        pk=("check_name", "kernel_id", "problem_key", "judge_model", "template_hash"),
        not_null={"check_name", "kernel_id", "problem_key", "judge_model", "template_hash"},
    )
    db["judge_verdicts"].create_index(["kernel_id"])


@migration
def m015_service_tasks(db: sqlite_utils.Database) -> None:
    # `tritongym serve`: every candidate the service accepted, written before it answers, so a
    # restart (a crash, a kill, a deploy) resumes what was queued or running instead of losing it. `problem`
    # and `candidate` hold the JSON the evaluation needs (a KernelGYM request brings its own reference code);
    # `state` is queued, running, done (`result` holds the verdict, `evaluation_id` its row) or failed
    # (`error` says why no verdict could be reached). `attempts` counts starts: a task that was running
    # whenever the service died is given up after a few. `seq` orders the queue across restarts.
    # Independent of m013/m014: it creates its own table and reads none.
    db["service_tasks"].create(
        {
            "id": str,
            "seq": int,
            "api": str,
            "state": str,
            "problem_name": str,
            "problem_key": str,
            "problem": str,
            "kernel_id": str,
            "candidate": str,
            "request": str,
            "attempts": int,
            "submitted_at": str,
            "started_at": str,
            "finished_at": str,
            "evaluation_id": int,
            "result": str,
            "error": str,
        },
        pk="id",
    )
    db["service_tasks"].create_index(["seq"], unique=True)
    db["service_tasks"].create_index(["state", "seq"])


@migration
def m016_reference_memory(db: sqlite_utils.Database) -> None:
    # Issue 27 item 1: the reference side's peak GPU memory, measured by the keeper when it built the problem's
    # reference (outputs, gold, probes), once per problem and device class: what the pool reserves before the
    # next build of the problem, in any later run, instead of an estimate from one forward weighed on the meta
    # device. Independent of the other tables.
    db["reference_memory"].create(
        {"problem_key": str, "device_class": str, "peak_mb": float, "measured_at": str},
        pk=("problem_key", "device_class"),
    )


@migration
def m017_field_convention_speedup(db: sqlite_utils.Database) -> None:
    # Speedups the field can compare with: beside `speedup` (against the reference in its own precision
    # class, TF32 matmuls under the default policy), the reference time under the field's convention (fp32 eager,
    # torch's TF32 defaults, as KernelBench's published baselines: core/measure/field_convention.py), the speedup
    # against it, and how it was reached ('timed', or 'same_as_own' where the two conventions are one). Rows
    # stored before keep NULL: unknown, never guessed. The field's reference timings themselves are cached in
    # `reference_timings` under variant 'field' and need no schema change.
    for column, kind in (("field_ref_runtime_ms", float), ("speedup_field", float), ("field_convention", str)):
        db["evaluations"].add_column(column, kind)


@migration
def m018_reference_host_memory(db: sqlite_utils.Database) -> None:
    # Issue 40 item 3: the host memory the keeper parks for a problem's record, beside its GPU peak. Without it a
    # fresh pool asked the keeper to weigh the reference on the meta device before every problem's first build
    # (`SIZE`, for the parked estimate), and a fresh keeper's first meta forward imports torch._dynamo: 3.3 s of a
    # cold `tritongym eval` on an H200 for a problem the registry already knew. Rows stored before keep NULL.
    db["reference_memory"].add_column("host_mb", float)
