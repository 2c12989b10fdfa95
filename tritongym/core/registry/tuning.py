"""The `tuning_records` table (migration m012): what `tritongym tune` measured, per source kernel and configuration.

A mixin of `Registry`, so the rows are read and written through the same connection and transactions as
the evaluations they point at.  A record is keyed by its `TuningContext` (problem, source kernel, backend,
device class, protocol) and the variant kernel: storing it again refreshes it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from tritongym.core.registry.failures import writes
from tritongym.core.tuning import Config, TuningContext, TuningRecord

_CONTEXT = ("problem_key", "source_kernel_id", "backend", "device_class", "protocol")


def _record(row: dict) -> TuningRecord:
    return TuningRecord(
        config=json.loads(row["config"]),
        kernel_id=row["kernel_id"],
        strategy=row["strategy"],
        status=row["status"],
        runtime_ms=row["runtime_ms"],
        runtime_iqr_ms=row["runtime_iqr_ms"],
        evaluation_id=row["evaluation_id"],
        message=row["message"] or "",
        cached=True,
    )


class TuningRecords:
    """`Registry` methods over `tuning_records` (the class expects `self.db` and `self._transaction`)."""

    @writes()
    def store_tuning_record(self, context: TuningContext, record: TuningRecord) -> int:
        """Insert one measured configuration, or refresh the row the same context and variant already have."""
        row = {
            **context.model_dump(),
            "kernel_id": record.kernel_id,
            "config": json.dumps(record.config),  # in the order of the parameters in the source
            "strategy": record.strategy,
            "status": record.status,
            "runtime_ms": record.runtime_ms,
            "runtime_iqr_ms": record.runtime_iqr_ms,
            "evaluation_id": record.evaluation_id,
            "message": record.message,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        where = " AND ".join(f"{c} = ?" for c in (*_CONTEXT, "kernel_id"))
        key = [row[c] for c in (*_CONTEXT, "kernel_id")]
        with self._transaction():
            found = self.db.execute(f"SELECT id FROM tuning_records WHERE {where}", key).fetchone()
            if found:
                self.db["tuning_records"].update(found[0], row)
                return int(found[0])
            return int(self.db["tuning_records"].insert(row).last_pk)

    def tuning_records(self, context: TuningContext) -> list[TuningRecord]:
        """Every record of one context, in the order they were first stored."""
        where = " AND ".join(f"{c} = ?" for c in _CONTEXT)
        rows = self.db.query(
            f"SELECT * FROM tuning_records WHERE {where} ORDER BY id", [getattr(context, c) for c in _CONTEXT]
        )
        return [_record(row) for row in rows]

    def nearest_tuned_configs(self, context: TuningContext, limit: int) -> tuple[str, list[Config]]:
        """The best configurations measured for the same problem (by name) and source kernel in the nearest
        other context, and that context in words; ("", []) when there is none.

        Nearest: the same device class before another one, then the same size, backend and protocol.  Best:
        correct and honest, fastest first where timed, else in the order measured; the kernel as written
        (strategy 'source') is left out, since the new tuning measures it anyway."""
        rows = list(
            self.db.query(
                """
                SELECT problem_key, device_class, size, backend, protocol, config, runtime_ms, id
                FROM tuning_records
                WHERE problem_name = ? AND source_kernel_id = ? AND status = 'ok' AND strategy != 'source'
                  AND NOT (problem_key = ? AND backend = ? AND device_class = ? AND protocol = ?)
                """,
                [
                    context.problem_name,
                    context.source_kernel_id,
                    context.problem_key,
                    context.backend,
                    context.device_class,
                    context.protocol,
                ],
            )
        )
        if not rows or limit <= 0:
            return "", []

        def distance(row: dict) -> tuple:
            return (
                row["device_class"] != context.device_class,
                row["size"] != context.size,
                row["backend"] != context.backend,
                row["protocol"] != context.protocol,
            )

        nearest = min(rows, key=lambda r: (distance(r), r["id"]))
        same = [
            r for r in rows if all(r[c] == nearest[c] for c in ("problem_key", "device_class", "backend", "protocol"))
        ]
        same.sort(key=lambda r: (r["runtime_ms"] is None, r["runtime_ms"] or 0.0, r["id"]))
        where = f"{nearest['backend']} on {nearest['device_class']}, size {nearest['size']}"
        return where, [json.loads(r["config"]) for r in same[:limit]]

    def tuning_of(self, kernel_id: str, problem_name: str | None = None) -> dict | None:
        """Where a tuned variant came from: the first record with this kernel as a variant of another
        (`source_kernel_id`, `config`, `strategy`, backend, device class, size), or None for a kernel no
        tuning produced."""
        sql = (
            "SELECT source_kernel_id, config, strategy, backend, device_class, size, problem_name "
            "FROM tuning_records WHERE kernel_id = ? AND source_kernel_id != kernel_id"
        )
        params: list = [kernel_id]
        if problem_name is not None:
            sql += " AND problem_name = ?"
            params.append(problem_name)
        rows = list(self.db.query(sql + " ORDER BY id LIMIT 1", params))
        if not rows:
            return None
        return {**rows[0], "config": json.loads(rows[0]["config"])}
