"""`problems check`: negative controls that find degenerate problems.

A problem is degenerate when an answer that does no work passes its correctness check: all zeros, the
reference output for *another* seed's inputs (a constant), or the identity (an input returned as the
output, where an input has the output's shape and dtype).  Each control runs through the same worker
and the same `judge_trials` as a real candidate; a passing control flags the problem.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tritongym.core.errors import BackendUnavailable
from tritongym.core.interfaces import Backend
from tritongym.core.models import Problem
from tritongym.core.verdict import judge_trials
from tritongym.core.worker_task import SandboxLimits, Tolerance, WorkerTask


class ScreenResult(BaseModel):
    problem_id: str
    ok: bool
    degenerate: bool = False
    passing_controls: list[str] = Field(default_factory=list)
    controls: dict[str, str] = Field(default_factory=dict, description="control -> why it failed (or passed)")
    error: str | None = None


def screen_problem(
    problem: Problem,
    backend: Backend,
    device: str,
    limits: SandboxLimits,
    tolerances: dict[str, Tolerance],
    seeds: list[int],
) -> ScreenResult:
    task = WorkerTask(
        mode="screen",
        problem_name=problem.name,
        problem_source=problem.source,
        sizes=problem.sizes,
        device=device,
        seeds=seeds,
        tolerances=tolerances,
    )
    evidence = backend.measure(task, limits)
    if evidence.error is not None and evidence.stage == "setup":
        raise BackendUnavailable(
            f"backend '{backend.name}' could not set up its worker: {evidence.error.kind}: {evidence.error.message}"
        )
    if evidence.error is not None:
        return ScreenResult(
            problem_id=problem.name,
            ok=False,
            error=f"the reference failed: {evidence.error.kind}: {evidence.error.message}",
        )
    controls, passing = {}, []
    for name, trials in evidence.controls.items():
        judgement = judge_trials(trials)
        controls[name] = (f"{name} PASSES: " if judgement.correct else f"{name} fails: ") + judgement.message
        if judgement.correct:
            passing.append(name)
    return ScreenResult(
        problem_id=problem.name, ok=not passing, degenerate=bool(passing), passing_controls=passing, controls=controls
    )
