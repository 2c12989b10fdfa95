"""A registry that fails at write time never costs the user a verdict (issue 27, item 7).

Each failure is real: a registry file this user cannot write, a damaged page of a real database, a write
lock held by another connection, a migration record left by a newer tritongym.  Running as root (CI), a
0444 file is still writable, so the read-only cases run the CLI inside a new user namespace (`unshare
--user`), where root's override of file permissions does not reach files outside it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import RELU_KERNEL
from typer.testing import CliRunner

from tritongym.cli.app import app
from tritongym.core.errors import RegistryError
from tritongym.core.registry import Registry
from tritongym.core.registry import sqlite as registry_sqlite
from tritongym.core.registry.migrations import MIGRATIONS_TABLE
from tritongym.core.sandbox import sandbox

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def fresh(path: Path) -> Path:
    Registry(path).close()  # closing the last connection checkpoints the WAL into the file
    return path


def rows(path: Path, table: str = "evaluations") -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def _unprivileged_prefix() -> list[str] | None:
    """The command prefix that makes a 0444 file unwritable for the CLI: none for a normal user; for root,
    a new user namespace, where it is unprivileged towards every file outside; None when neither works."""
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    probe = subprocess.run([unshare, "--user", "true"], capture_output=True)
    return [unshare, "--user"] if probe.returncode == 0 else None


def cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    prefix = _unprivileged_prefix()
    if prefix is None:
        pytest.skip("running as root without user namespaces: nothing here can make a file read-only for root")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "HOME": str(tmp_path),
        "TRITONGYM_SQLITE_WARNING": "0",
    }
    command = [*prefix, sys.executable, "-m", "tritongym", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_a_read_only_registry_keeps_the_verdict_and_exits_3(tmp_path, write):
    db = fresh(tmp_path / "r.db")
    db.chmod(0o444)
    cand = write("relu_kernel.py", RELU_KERNEL)
    done = cli(["eval", str(cand), "-p", "relu", "--registry", str(db), "--trials", "2", "--json"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "ok" and data["kernel_id"] and data["stored"] is False and data["exit_code"] == 3
    assert f"registry {db} is read-only" in data["error"] and "writable" in data["error"]
    assert "Traceback" not in done.stderr
    assert rows(db) == 0


def test_registry_stats_reads_a_read_only_registry(tmp_path, write):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = Registry(folder / "r.db")
    db.start_run("eval", "one", {})
    db.close()
    (folder / "r.db").chmod(0o444)
    in_writable_folder = cli(["registry", "stats", "--registry", str(folder / "r.db"), "--json"], tmp_path)
    assert in_writable_folder.returncode == 0, in_writable_folder.stdout + in_writable_folder.stderr
    assert json.loads(in_writable_folder.stdout)["runs"] == 1
    for leftover in folder.glob("r.db-*"):
        leftover.unlink()
    folder.chmod(0o555)  # no -wal or -shm can be made beside it either
    try:
        in_read_only_folder = cli(["registry", "stats", "--registry", str(folder / "r.db"), "--json"], tmp_path)
        none_there = cli(["registry", "stats", "--registry", str(folder / "none.db"), "--json"], tmp_path)
    finally:
        folder.chmod(0o755)
    assert in_read_only_folder.returncode == 0, in_read_only_folder.stdout + in_read_only_folder.stderr
    assert json.loads(in_read_only_folder.stdout)["runs"] == 1
    # nothing stored there: exit 1 ("nothing stored for best"), nothing created, no traceback
    assert none_there.returncode == 1 and "Traceback" not in none_there.stderr
    assert f"no registry at {folder / 'none.db'}" in json.loads(none_there.stdout)["error"]


def _corrupt_table(path: Path, table: str) -> None:
    """Overwrite the root page of `table` with garbage, as a failing disk or a stray write would."""
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", [table]).fetchone()[0]
    conn.close()
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xa5" * page_size)


def test_a_damaged_page_keeps_the_verdict_and_exits_3(tmp_path, write):
    db = fresh(tmp_path / "r.db")
    _corrupt_table(db, "kernels")  # the open and the lookups read other pages; storing the kernel reads this
    cand = write("relu_kernel.py", RELU_KERNEL)
    result = invoke("eval", str(cand), "-p", "relu", "--registry", str(db), "--trials", "2", "--json")
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "ok" and data["stored"] is False and data["error_type"] == "RegistryNotStored"
    assert f"registry {db} is damaged" in data["error"] and ".recover" in data["error"]

    human = invoke("eval", str(cand), "-p", "relu", "--registry", str(db), "--trials", "2")
    assert human.exit_code == 3
    assert "ok  relu  kernel" in human.stdout and "reward" in human.stdout
    assert "Not stored: registry" in human.stderr and "is damaged" in human.stderr


def test_a_lock_held_past_the_wait_keeps_the_verdicts_of_eval_and_run(tmp_path, write, monkeypatch):
    """A write transaction another process holds past the wait: the verdict still reaches the user, marked not
    stored, and the lock costs one wait per command, not one per row (the writes after the first failed one are
    skipped: `failures.writes`).  Each wait that ran out is counted where SQLite's error is explained."""
    from tritongym.core.registry import failures

    db = fresh(tmp_path / "r.db")
    monkeypatch.setenv("TRITONGYM_REGISTRY_TIMEOUT", "0.5")
    waits: list[str] = []
    explain = failures.explain

    def counted(path, exc, timeout_s):
        waits.append(str(exc))
        return explain(path, exc, timeout_s)

    monkeypatch.setattr(failures, "explain", counted)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process's write transaction, open past the wait
    try:
        cand = write("relu_kernel.py", RELU_KERNEL)
        human = invoke("eval", str(cand), "-p", "relu", "--registry", str(db), "--trials", "2")
        assert human.exit_code == 3, human.output
        assert "ok  relu  kernel" in human.stdout
        assert f"Not stored: registry {db} stayed locked by another process for 0.5 s" in human.stderr
        assert "TRITONGYM_REGISTRY_TIMEOUT" in human.stderr
        assert waits == ["database is locked"]  # one wait, not one per write

        waits.clear()
        ran = invoke("run", "--only", "relu", "--registry", str(db), "--trials", "2", "--json")
        assert ran.exit_code == 3, ran.output
        data = json.loads(ran.stdout)
        assert data["total"] == 1 and data["results"][0]["status"] == "ok" and data["stored"] is False
        assert "stayed locked" in data["error"]
        assert waits == ["database is locked"]  # the run's rows and the evaluation's: one wait in all
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert rows(db) == 0 and rows(db, "runs") == 0
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_write_failures_outside_an_evaluation_are_registry_errors(tmp_path, monkeypatch):
    """Writes of training, tuning and the service (no verdict to keep) fail with the same one-line error
    and exit code 3 as an open, not with a raw sqlite3 traceback."""
    db = fresh(tmp_path / "r.db")
    reg = Registry(db, timeout_s=0.2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(RegistryError, match=r"stayed locked by another process for 0\.2 s") as caught:
            reg.start_run("eval", "x", {})
        assert caught.value.exit_code == 3
        assert reg.stats()["runs"] == 0  # reads go on while another process writes (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert reg.start_run("eval", "x", {}) == 1  # the lock gone, the same registry writes again
    reg.close()


def _from_a_newer_tritongym(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"INSERT INTO [{MIGRATIONS_TABLE}] VALUES ('m099_from_the_future', '2030-01-01T00:00:00+00:00')")
    conn.execute("ALTER TABLE turns DROP COLUMN advantage")  # what a newer schema may well have changed
    conn.commit()
    conn.close()


def test_a_registry_from_a_newer_tritongym_is_refused_untouched(tmp_path, write):
    db = fresh(tmp_path / "r.db")
    _from_a_newer_tritongym(db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with pytest.raises(RegistryError) as caught:
        Registry(db)
    message = str(caught.value)
    assert "written by a newer tritongym" in message and "m099_from_the_future" in message
    assert "damaged" not in message and "Upgrade tritongym" in message
    result = invoke("eval", str(write("c.py", RELU_KERNEL)), "-p", "relu", "--registry", str(db), "--json")
    assert result.exit_code == 3 and "newer tritongym" in json.loads(result.stdout)["error"]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("command", [["registry", "stats"], ["best", "relu"]])
def test_a_registry_in_a_missing_folder_names_the_path_and_the_fix(tmp_path, command):
    db = tmp_path / "no" / "such" / "registry.db"
    result = invoke(*command, "--registry", str(db), "--json")
    assert result.exit_code == 3
    error = json.loads(result.stdout)["error"]
    assert f"cannot open registry {db}: its folder {db.parent} does not exist" in error
    assert f"mkdir -p {db.parent}" in error and "--registry" in error
    assert not (tmp_path / "no").exists()  # a mistyped path never starts a second history


def test_the_wal_reset_sqlite_is_named_once_with_the_fix(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="tritongym.registry")
    monkeypatch.delenv("TRITONGYM_SQLITE_WARNING", raising=False)
    for version, warns in (("3.51.3", False), ("3.53.0", False), ("3.6.23", False), ("3.51.2", True)):
        monkeypatch.setattr(registry_sqlite, "_warned", False)
        monkeypatch.setattr(sqlite3, "sqlite_version", version)
        caplog.clear()
        Registry(tmp_path / "r.db").close()
        Registry(tmp_path / "r.db").close()
        warnings = [r.getMessage() for r in caplog.records if r.name == "tritongym.registry"]
        assert len(warnings) == (1 if warns else 0), (version, warnings)
    assert "SQLite 3.51.2" in warnings[0] and "3.51.3 or later" in warnings[0]
    monkeypatch.setattr(registry_sqlite, "_warned", False)
    monkeypatch.setenv("TRITONGYM_SQLITE_WARNING", "0")
    caplog.clear()
    Registry(tmp_path / "r.db").close()
    assert not caplog.records


def test_a_killed_eval_leaves_no_sandbox_directory(tmp_path, write, monkeypatch):
    """`kill -9` skips the sandbox's `finally`; its directory carries the dead process's id, and the next
    process to start a sandbox removes it (a live process's directory stays)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    cand = write("relu_kernel.py", RELU_KERNEL)
    env = {
        **os.environ,
        "TMPDIR": str(temp),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "TRITONGYM_SQLITE_WARNING": "0",
    }
    args = ["eval", str(cand), "-p", "relu", "--registry", str(tmp_path / "r.db"), "--trials", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "tritongym", *args], env=env, cwd=tmp_path)
    deadline = time.monotonic() + 120
    try:
        while not list(temp.glob(f"tritongym-{proc.pid}-*")) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    left = list(temp.glob(f"tritongym-{proc.pid}-*"))
    assert left, "the eval started no sandbox within 120 s"
    mine = temp / f"tritongym-{os.getpid()}-alive0"
    mine.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(sandbox, "_swept", False)
    made = Path(sandbox._sandbox_dir())  # what run_in_sandbox does first
    assert not any(p.exists() for p in left) and mine.exists()
    assert made.parent == temp and made.name.startswith(f"tritongym-{os.getpid()}-")
