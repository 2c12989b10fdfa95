"""registry.db: migrations, WAL, store/lookup, the best-kernel view, runs and turns."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlite_utils

from tritongym.core.errors import RegistryError
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.models import Candidate, EvaluationResult, Problem, Status
from tritongym.core.registry import Registry
from tritongym.core.registry.migrations import MIGRATIONS, MIGRATIONS_TABLE, migrate

PROBLEM = Problem(
    name="toy", source="class Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"
)


def _result(kernel: Candidate, status=Status.ok, runtime_ms=None, problem=PROBLEM, device_class="cpu"):
    return EvaluationResult(
        problem_id=problem.name,
        problem_key=problem.key,
        kernel_id=kernel.kernel_id,
        backend="triton-cpu",
        device=device_class,
        device_class=device_class,
        size=problem.size,
        protocol="1-test",
        status=status,
        correct=status == Status.ok,
        runtime_ms=runtime_ms,
        fingerprint=local_fingerprint(),
    )


def test_migrates_a_blank_database_and_is_rerunnable(tmp_path):
    db = sqlite_utils.Database(tmp_path / "r.db")
    applied = migrate(db)
    assert applied == [m.__name__ for m in MIGRATIONS]
    assert migrate(db) == []
    assert {"problems", "kernels", "evaluations", "reference_timings", "runs", "turns"} <= set(db.table_names())
    assert "best_kernels" in db.view_names()


def test_migrates_forward_from_the_oldest_schema(tmp_path):
    db = sqlite_utils.Database(tmp_path / "old.db")
    db[MIGRATIONS_TABLE].create({"name": str, "applied_at": str}, pk="name")
    MIGRATIONS[0](db)
    db[MIGRATIONS_TABLE].insert({"name": MIGRATIONS[0].__name__, "applied_at": "then"})
    db["problems"].insert({"key": "k", "name": "kept", "source": "s"})
    assert migrate(db) == [m.__name__ for m in MIGRATIONS[1:]]
    assert db["problems"].get("k")["name"] == "kept"


def test_a_row_stored_while_phases_held_counts_flags_and_sizes_loads_with_each_in_its_home(registry):
    """Results stored before `phases` held seconds only (its counts, flags and MiB beside the seconds, under some
    names renamed since) still load from the registry, each entry where today's results keep it."""
    import json

    kernel = Candidate(source="k = 'old row'\n")
    eid = registry.store(_result(kernel), PROBLEM, kernel)
    stored = json.loads(registry.db["evaluations"].get(eid)["result"])
    for home in ("counts", "flags", "memory_mb"):
        stored.pop(home)  # fields an old row does not have
    stored["phases"] = {
        "reference": 0.5,
        "hand_out": 0.25,
        "hand_outs": 12.0,
        "yields": 3.0,
        "reference_cached": 1.0,
        "ran_alone": 0.0,
        "reference_peak_mb": 40.5,
        "keeper_reserved_mb_after_prep": 512.0,
    }
    registry.db["evaluations"].update(eid, {"result": json.dumps(stored)})
    hit = registry.lookup(PROBLEM.key, kernel.kernel_id, "triton-cpu", "cpu", "1-test")
    assert hit.phases == {"reference": 0.5, "fill_handouts": 0.25}
    assert hit.counts == {"handout_requests": 12, "yields": 3}
    assert hit.flags == {"reference_cached": True, "ran_alone": False}
    assert hit.memory_mb == {"reference_peak_mb": 40.5, "keeper_reserved_mb_after_prep": 512.0}


def test_phases_hold_seconds_only():
    """A count, a flag or a size written into `phases` is refused where the evidence or the result is built, naming
    the home it belongs in, so a batch's summed phases never add MiB to seconds."""
    from pydantic import ValidationError

    from tritongym.core.models import Evidence

    for wrong in ("reference_host_mb", "keeper_allocated_mb_after_timing", "yields", "timing_error"):
        with pytest.raises(ValidationError, match=wrong):
            Evidence(phases={"reference": 1.0, wrong: 2.0})
    assert Evidence(phases={"reference": 1.0}, counts={"yields": 2}).phases == {"reference": 1.0}


def test_wal_mode_and_integrity(registry):
    assert registry.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert registry.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_store_and_lookup_roundtrip(registry):
    kernel = Candidate(source="x = 1  # first spelling\n")
    eid = registry.store(_result(kernel), PROBLEM, kernel)
    hit = registry.lookup(PROBLEM.key, kernel.kernel_id, "triton-cpu", "cpu", "1-test")
    assert hit is not None and hit.cached and hit.evaluation_id == eid and hit.status == Status.ok
    assert registry.lookup(PROBLEM.key, kernel.kernel_id, "triton-cpu", "NVIDIA H100", "1-test") is None
    assert registry.lookup(PROBLEM.key, kernel.kernel_id, "triton-cpu", "cpu", "2-other") is None
    # storing the same key again refreshes the row instead of duplicating it
    assert registry.store(_result(kernel, Status.incorrect), PROBLEM, kernel) == eid
    assert registry.db["evaluations"].count == 1
    assert registry.db["kernels"].get(kernel.kernel_id)["source"] == kernel.source


def test_best_prefers_fastest_honest_kernel(registry):
    slow, fast, wrong = (Candidate(source=f"x = {i}\n") for i in range(3))
    registry.store(_result(slow, runtime_ms=2.0, device_class="gpu-a"), PROBLEM, slow)
    registry.store(_result(fast, runtime_ms=1.0, device_class="gpu-a"), PROBLEM, fast)
    registry.store(_result(wrong, Status.hacked, runtime_ms=0.1, device_class="gpu-a"), PROBLEM, wrong)
    best = registry.best("toy", device_class="gpu-a")
    assert best["kernel_id"] == fast.kernel_id and best["source"] == fast.source
    assert registry.best("toy", device_class="cpu") is None
    assert registry.best("nope") is None


def test_best_without_timing_is_the_earliest_correct_kernel(registry):
    first, second = Candidate(source="a = 1\n"), Candidate(source="b = 2\n")
    registry.store(_result(first), PROBLEM, first)
    registry.store(_result(second), PROBLEM, second)
    assert registry.best("toy")["kernel_id"] == first.kernel_id


def test_runs_turns_and_stats(registry):
    kernel = Candidate(source="x = 1\n")
    result = _result(kernel)
    result.evaluation_id = registry.store(result, PROBLEM, kernel)
    run_id = registry.start_run("eval", "test", {"trials": 1})
    registry.add_turn(run_id, result, sample=0, turn=1)
    registry.finish_run(run_id)
    stats = registry.stats()
    assert stats["evaluations"] == 1 and stats["runs"] == 1 and stats["turns"] == 1
    assert stats["by_status"] == {"ok": 1} and stats["problems_solved"] == 1
    assert registry.db["runs"].get(run_id)["finished_at"]


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    Registry(path).close()

    def write(i: int) -> int:
        reg = Registry(path)
        kernel = Candidate(source=f"k = {i}\n")
        eid = reg.store(_result(kernel), PROBLEM, kernel)
        reg.close()
        return eid

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(write, range(40)))
    assert len(set(ids)) == 40
    assert Registry(path).db["evaluations"].count == 40


def test_unreadable_registry_is_a_clear_error(tmp_path):
    bad = tmp_path / "not-a-db.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(RegistryError, match="not-a-db.db"):
        Registry(bad)


WRITER = """
import sys
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.models import Candidate, EvaluationResult, Problem, Status
from tritongym.core.registry import Registry

problem = Problem(name="toy", source="x = 1\\n")
reg = Registry(sys.argv[1])
for i in range(100000):
    kernel = Candidate(source=f"k = {i}\\n")
    reg.store(EvaluationResult(problem_id="toy", problem_key=problem.key, kernel_id=kernel.kernel_id,
                               backend="triton-cpu", device="cpu", device_class="cpu", size="cpu",
                               status=Status.ok, correct=True, fingerprint=local_fingerprint()), problem, kernel)
    if i == 20:
        print("writing", flush=True)
"""


def test_a_writer_killed_mid_flight_leaves_a_consistent_registry(tmp_path):
    """SIGKILL a process that is storing evaluations as fast as it can: every committed row is whole."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "killed.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"  # 21 rows stored, and 99979 to go: it is mid-flight now
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    reg = Registry(path)
    assert reg.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n = reg.db["evaluations"].count
    assert n > 20
    # every evaluation has its kernel: rows were committed together or not at all
    orphans = reg.db.execute(
        "SELECT count(*) FROM evaluations e LEFT JOIN kernels k ON k.id = e.kernel_id WHERE k.id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    assert all(EvaluationResult.model_validate_json(r["result"]) for r in reg.db["evaluations"].rows)


def test_a_damaged_registry_fails_at_open_not_at_the_first_lookup(tmp_path):
    path = tmp_path / "damaged.db"
    reg = Registry(path)
    kernel = Candidate(source="k = 1\n")
    reg.store(_result(kernel), PROBLEM, kernel)
    reg.close()
    with sqlite3.connect(path) as conn:  # another program drops a table behind tritongym's back
        conn.execute("DROP TABLE evaluations")
    with pytest.raises(RegistryError, match=r"damaged\.db is damaged \(missing evaluations\).*Move the file aside"):
        Registry(path)
    with sqlite3.connect(path) as conn:  # what was left is left alone: no migration re-created the table
        assert conn.execute("SELECT count(*) FROM kernels").fetchone() == (1,)
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'evaluations'").fetchone()


def test_a_registry_missing_a_column_is_damaged_too(tmp_path):
    path = tmp_path / "short.db"
    Registry(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE turns DROP COLUMN advantage")
    with pytest.raises(RegistryError, match="turns lacks advantage"):
        Registry(path)
