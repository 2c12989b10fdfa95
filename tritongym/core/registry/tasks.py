"""The `service_tasks` table (migration m015): what `tritongym serve` accepted and what became of it.

A mixin of `Registry`, so a task and the evaluation it produces are written through the same kind of
connection and transactions.  The service is the only writer of its registry: it inserts a task before it
answers the request that brought it, marks it running when a lane takes it, and done (with the verdict)
or failed (with the reason) when the lane is through.  What was queued or running when the process died
is read back by `unfinished_tasks` at the next start.  Rows are plain dicts here; the service turns them
into its own models.
"""

from __future__ import annotations

from datetime import datetime, timezone

from tritongym.core.registry.failures import writes

UNFINISHED = ("queued", "running")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class ServiceTasks:
    """`Registry` methods over `service_tasks` (the class expects `self.db` and `self._transaction`)."""

    @writes()
    def add_tasks(self, rows: list[dict]) -> list[dict]:
        """Insert new tasks, queued, in one transaction and in the order given; returns them as stored
        (with `seq`, `state` and `submitted_at` filled in)."""
        stored = []
        with self._transaction():
            top = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM service_tasks").fetchone()[0]
            for offset, row in enumerate(rows, 1):
                full = {
                    "state": "queued",
                    "attempts": 0,
                    "submitted_at": _now(),
                    **row,
                    "seq": top + offset,
                }
                self.db["service_tasks"].insert(full)
                stored.append(full)
        return stored

    def service_task(self, task_id: str) -> dict | None:
        rows = list(self.db.query("SELECT * FROM service_tasks WHERE id = ?", [task_id]))
        return rows[0] if rows else None

    def service_tasks(self, task_ids: list[str]) -> dict[str, dict]:
        """Several tasks by id (those that exist)."""
        if not task_ids:
            return {}
        marks = ", ".join("?" * len(task_ids))
        return {r["id"]: r for r in self.db.query(f"SELECT * FROM service_tasks WHERE id IN ({marks})", task_ids)}

    def unfinished_tasks(self) -> list[dict]:
        """Tasks queued or running (running ones were interrupted: the process that ran them is gone), oldest first."""
        marks = ", ".join("?" * len(UNFINISHED))
        return list(self.db.query(f"SELECT * FROM service_tasks WHERE state IN ({marks}) ORDER BY seq", UNFINISHED))

    @writes()
    def start_task(self, task_id: str) -> int:
        """Mark a task running; returns how many times it has been started, this one included."""
        with self._transaction():
            self.db.execute(
                "UPDATE service_tasks SET state = 'running', started_at = ?, attempts = attempts + 1 WHERE id = ?",
                [_now(), task_id],
            )
            return int(self.db.execute("SELECT attempts FROM service_tasks WHERE id = ?", [task_id]).fetchone()[0])

    @writes()
    def finish_task(
        self, task_id: str, state: str, result: str | None = None, evaluation_id: int | None = None, error: str = ""
    ) -> str:
        """Record a task's end: `done` with its verdict (JSON) or `failed` with the reason; returns the time."""
        if state not in ("done", "failed"):
            raise ValueError(f"a task finishes done or failed, not {state!r}")
        finished = _now()
        with self._transaction():
            self.db["service_tasks"].update(
                task_id,
                {
                    "state": state,
                    "finished_at": finished,
                    "result": result,
                    "evaluation_id": evaluation_id,
                    "error": error or None,
                },
            )
        return finished

    @writes()
    def forget_task(self, task_id: str) -> None:
        """Delete a finished task so its id can be submitted again (KernelGYM's `force_refresh`)."""
        with self._transaction():
            self.db.execute("DELETE FROM service_tasks WHERE id = ? AND state IN ('done', 'failed')", [task_id])

    def task_counts(self) -> dict[str, int]:
        """How many tasks are in each state."""
        return {state: n for state, n in self.db.execute("SELECT state, COUNT(*) FROM service_tasks GROUP BY state")}
