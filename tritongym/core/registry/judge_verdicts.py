"""The `judge_verdicts` table (migration m014): verdicts a model-judged check (`llm-judge`) reached.

A mixin of `Registry`, like `tuning.py`, so the rows go through the same connection and transactions as
everything else.  `Registry` is thereby a `JudgeMemo` (`core/interfaces.py`): the Evaluator hands it to
every check through `CheckContext`, and a check plugin uses it without importing the registry.
"""

from __future__ import annotations

from tritongym.core.models import JudgeVerdict
from tritongym.core.registry.failures import writes

_KEY = ("check_name", "kernel_id", "problem_key", "judge_model", "template_hash")


def _verdict(row: dict) -> JudgeVerdict:
    return JudgeVerdict(
        check=row["check_name"],
        kernel_id=row["kernel_id"],
        problem_key=row["problem_key"],
        judge_model=row["judge_model"],
        template_hash=row["template_hash"],
        passed=None if row["passed"] is None else bool(row["passed"]),
        reason=row["reason"] or "",
        answer=row["answer"] or "",
        created_at=row["created_at"] or "",
    )


class JudgeVerdicts:
    """`Registry` methods over `judge_verdicts` (the class expects `self.db` and `self._transaction`)."""

    def judge_verdict(
        self, check: str, kernel_id: str, problem_key: str, judge_model: str, template_hash: str
    ) -> JudgeVerdict | None:
        where = " AND ".join(f"{c} = ?" for c in _KEY)
        key = [check, kernel_id, problem_key, judge_model, template_hash]
        rows = list(self.db.query(f"SELECT * FROM judge_verdicts WHERE {where}", key))
        return _verdict(rows[0]) if rows else None

    @writes()
    def store_judge_verdict(self, verdict: JudgeVerdict) -> None:
        """Insert one verdict, or replace the one stored under the same key."""
        row = {
            "check_name": verdict.check,
            "kernel_id": verdict.kernel_id,
            "problem_key": verdict.problem_key,
            "judge_model": verdict.judge_model,
            "template_hash": verdict.template_hash,
            "passed": None if verdict.passed is None else int(verdict.passed),
            "reason": verdict.reason,
            "answer": verdict.answer,
            "created_at": verdict.created_at,
        }
        with self._transaction():
            self.db["judge_verdicts"].upsert(row, pk=_KEY)

    def judge_verdicts_of(self, kernel_id: str) -> list[JudgeVerdict]:
        """Every stored judge verdict on one kernel (any check, problem or judge), oldest first."""
        query = "SELECT * FROM judge_verdicts WHERE kernel_id = ? ORDER BY created_at, rowid"
        return [_verdict(row) for row in self.db.query(query, [kernel_id])]
