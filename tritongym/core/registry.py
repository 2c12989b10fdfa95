"""registry.db: every problem, kernel and evaluation tritongym has seen, through sqlite-utils.

All writes go through `Registry._transaction()`, one transaction per stored evaluation, with WAL on: a
kill at any moment leaves the previous rows intact, and readers never block the writer.  Lookups come
before any worker starts, so an identical kernel (by normalised-source hash) on the same problem,
backend, device class and protocol is answered from here.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils

from tritongym.core.errors import RegistryError
from tritongym.core.migrations import migrate
from tritongym.core.models import Candidate, EvaluationResult, Problem, RewardBreakdown

DEFAULT_REGISTRY = "registry.db"


def default_registry_path() -> Path:
    """`TRITONGYM_REGISTRY`, else registry.db in the working directory."""
    return Path(os.environ.get("TRITONGYM_REGISTRY") or DEFAULT_REGISTRY)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _reward_columns(reward: RewardBreakdown) -> dict:
    """The total for SQL queries and the whole breakdown (components, weights, absent, penalty) as JSON."""
    return {"reward": reward.total, "reward_components": reward.model_dump_json()}


class Registry:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_registry_path()
        try:
            conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA busy_timeout = 30000")
            if str(self.path) != ":memory:":
                self.db.enable_wal()
            migrate(self.db)
        except sqlite3.DatabaseError as exc:
            raise RegistryError(f"cannot open registry {self.path}: {exc}") from None

    @contextmanager
    def _transaction(self):
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
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

    def store(self, result: EvaluationResult, problem: Problem, candidate: Candidate, config_key: str = "") -> int:
        """Insert or refresh one evaluation (with its problem and kernel) in a single transaction."""
        now = _now()
        with self._transaction():
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
                "pr": result.pr,
                **_reward_columns(result.reward),
                "message": result.message,
                "created_at": now,
                "result": result.model_dump_json(exclude={"cached", "evaluation_id"}),
            }
            key = [row[k] for k in ("problem_key", "kernel_id", "backend", "device_class", "protocol")]
            existing = self._find("id", [*key, config_key])
            if existing:
                evaluation_id = existing["id"]
                self.db["evaluations"].update(evaluation_id, row)
            else:
                evaluation_id = self.db["evaluations"].insert(row).last_pk
        return int(evaluation_id)

    def store_reward(self, result: EvaluationResult) -> None:
        """Record a stored evaluation's new reward (a cached verdict re-scored under other rewards), in the
        columns and in the stored result alike."""
        if result.evaluation_id is None:
            raise RegistryError("store_reward needs a result read from the registry (it has no evaluation_id)")
        with self._transaction():
            self.db["evaluations"].update(
                result.evaluation_id,
                {
                    **_reward_columns(result.reward),
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

    def best(self, problem_name: str, device_class: str | None = None, size: str | None = None) -> dict | None:
        """The fastest honest kernel for a problem (earliest correct one where nothing was timed)."""
        where, params = ["problem_name = ?"], [problem_name]
        if device_class:
            where.append("device_class = ?")
            params.append(device_class)
        if size:
            where.append("size = ?")
            params.append(size)
        rows = list(
            self.db.query(
                f"SELECT b.*, k.source AS source FROM best_kernels b JOIN kernels k ON k.id = b.kernel_id "
                f"WHERE {' AND '.join(where)} ORDER BY b.runtime_ms IS NULL, b.runtime_ms, b.id LIMIT 1",
                params,
            )
        )
        return rows[0] if rows else None

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
            "by_status": by_status,
            "by_backend": by_backend,
        }

    # --- reference timings and device facts ----------------------------------------------------------

    def reference_timing(self, problem_key: str, device_class: str, precision: str) -> dict | None:
        """The cached reference TimingStats (as a dict) for this problem, device class and precision policy."""
        rows = list(
            self.db.query(
                "SELECT stats FROM reference_timings WHERE problem_key = ? AND device_class = ? AND precision = ?",
                [problem_key, device_class, precision],
            )
        )
        return json.loads(rows[0]["stats"]) if rows and rows[0]["stats"] else None

    def store_reference_timing(
        self, problem_key: str, device_class: str, precision: str, stats: dict, fingerprint: str
    ) -> None:
        with self._transaction():
            self.db["reference_timings"].upsert(
                {
                    "problem_key": problem_key,
                    "device_class": device_class,
                    "precision": precision,
                    "runtime_ms": stats["median_ms"],
                    "iqr_ms": stats["iqr_ms"],
                    "samples": stats["samples"],
                    "stats": json.dumps(stats),
                    "fingerprint": fingerprint,
                    "created_at": _now(),
                },
                pk=("problem_key", "device_class", "precision"),
            )

    def forget_reference_timing(self, problem_key: str, device_class: str, precision: str) -> None:
        """Drop a cached reference that no longer agrees with paired timings; the next task re-times it."""
        with self._transaction():
            self.db.execute(
                "DELETE FROM reference_timings WHERE problem_key = ? AND device_class = ? AND precision = ?",
                [problem_key, device_class, precision],
            )

    def bandwidth(self, device_class: str) -> float | None:
        rows = list(self.db.query("SELECT copy_gbps FROM device_bandwidth WHERE device_class = ?", [device_class]))
        return rows[0]["copy_gbps"] if rows else None

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
            return int(self.db["turns"].insert(row).last_pk)

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

    def finish_run(self, run_id: int) -> None:
        with self._transaction():
            self.db["runs"].update(run_id, {"finished_at": _now()})

    def close(self) -> None:
        self.db.close()
