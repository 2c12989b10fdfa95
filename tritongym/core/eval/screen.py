"""`problems check`: negative controls that find degenerate problems.

A problem is degenerate when an answer that does no work passes its correctness check: all zeros, the
reference output for *another* seed's inputs (a constant), or the identity (an input returned as the
output, where an input has the output's shape and dtype).  Each control runs through the same worker
and the same `judge_trials` as a real candidate; a passing control flags the problem.

For each passing control the screen also names the first input transform (`worker/controls.py`) under
which that control fails for every seed (`breaking_inputs`).  An evaluation on a degenerate problem calls
the candidate once on inputs so transformed and the `degenerate` check finds a candidate that gives the
control's answer there (returned zeros, a constant, or its input) hacked.  The screen an evaluation needs
is computed once per problem, device class and tolerances (`cached_screens`): held for the process and
stored in the registry's `problem_screens`.

The screen also finds a reference that draws random numbers (`stochastic`, `worker/stochastic.py`): one random only
in train() mode is screened, and judged, in eval() mode; one random whatever its mode is refused (`refusal`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal

from pydantic import BaseModel, Field

from tritongym.core.errors import BackendUnavailable
from tritongym.core.interfaces import Backend
from tritongym.core.models import Problem
from tritongym.core.verdict import judge_trials
from tritongym.core.worker.controls import TRANSFORMS
from tritongym.core.worker_task import SandboxLimits, Tolerance, WorkerTask


class ScreenResult(BaseModel):
    problem_id: str
    ok: bool
    degenerate: bool = False
    passing_controls: list[str] = Field(default_factory=list)
    controls: dict[str, str] = Field(default_factory=dict, description="control -> why it failed (or passed)")
    breaking_inputs: dict[str, str] = Field(
        default_factory=dict, description="passing control -> the input transform under which it fails"
    )
    error: str | None = None
    stochastic: Literal["train_mode", "always"] | None = Field(
        default=None,
        description="the reference draws random numbers (`worker/stochastic.py`): 'train_mode' = only in train() "
        "mode (the problem is judged in eval() mode), 'always' = in eval() mode too (no candidate can be judged)",
    )
    stochastic_note: str = Field(default="", description="what differed between two calls on the same inputs")

    def refusal(self) -> str | None:
        """Why no candidate can be judged on this problem (a reference random whatever its mode), or None."""
        if self.stochastic != "always":
            return None
        return (
            f"the reference of problem '{self.problem_id}' draws random numbers in forward whatever its mode: "
            f"{self.stochastic_note}; there is no one answer to judge a candidate against. Draw the randomness in "
            "get_inputs (pass it to forward), or keep it in a module that eval() switches off (nn.Dropout)"
        )

    def degenerate_probes(self) -> dict[str, str]:
        """Control -> transform: the degeneracy probes an evaluation on this problem runs."""
        return {c: self.breaking_inputs[c] for c in self.passing_controls if c in self.breaking_inputs}


SCREEN_VERSION = "3"
"""Bumped when the controls or the transforms change, so screens stored before are computed again.  "2": the
reference's constant parameters are drawn away from their values (`worker/weights.py`); a screen always draws
(the task's default), whatever `draw_parameters` an evaluation runs with.  "3": a screen says whether the reference
draws random numbers (`stochastic`, `worker/stochastic.py`), and runs its controls in eval() mode when it does only
in train() mode."""

SCREEN_SEEDS = [0, 1, 2, 3, 4]
"""The seeds of the screen an evaluation uses: fixed, so the stored screen is the same wherever it ran."""


def screen_key(tolerances: dict[str, Tolerance]) -> str:
    """What a stored screen depends on besides the problem and the device class: the tolerances."""
    data = {k: v.model_dump() for k, v in sorted(tolerances.items())}
    return f"{SCREEN_VERSION}-" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


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
    random = {"stochastic": evidence.stochastic, "stochastic_note": evidence.stochastic_note}
    if evidence.stochastic == "always":  # no controls ran: there is no one answer to hold them against
        return ScreenResult(problem_id=problem.name, ok=False, **random)
    controls, passing, breaking = {}, [], {}
    for name, trials in evidence.controls.items():
        judgement = judge_trials(trials)
        controls[name] = (f"{name} PASSES: " if judgement.correct else f"{name} fails: ") + judgement.message
        if judgement.correct:
            passing.append(name)
            for transform, changed in evidence.control_breaks.get(name, {}).items():
                if len(changed) == len(trials) and not any(judge_trials([t]).correct for t in changed):
                    breaking[name] = transform
                    controls[name] += f"; it fails on {TRANSFORMS.get(transform, transform)}"
                    break
            else:
                controls[name] += "; no input transform tried makes it fail (the reference may be this control)"
    return ScreenResult(
        problem_id=problem.name,
        ok=not passing,
        degenerate=bool(passing),
        passing_controls=passing,
        controls=controls,
        breaking_inputs=breaking,
        **random,
    )


_HELD: dict[tuple, ScreenResult] = {}
_COMPUTING: dict[tuple, threading.Event] = {}
"""Screens being computed now, by the thread that claimed them: a concurrent caller (the service's lanes,
one evaluation each) waits for that one instead of computing the same screen again on the same GPU."""
_HELD_LOCK = threading.Lock()


def forget_held() -> None:
    """Drop the screens this process holds (a benchmark's columns that must each screen their problems afresh)."""
    with _HELD_LOCK:
        _HELD.clear()


def cached_screens(
    problems: list[Problem],
    backend: Backend,
    device: str,
    device_class: str,
    limits: SandboxLimits,
    tolerances: dict[str, Tolerance],
    registry=None,
    workers: int = 1,
    compute: bool = True,
) -> dict[str, ScreenResult]:
    """The screen of each problem (by key): held in this process, else from the registry, else computed
    (in parallel, `SCREEN_SEEDS`) and stored.  A screen whose reference failed is returned, never stored.
    Each screen is computed once however many threads ask for it at the same time.  `compute=False`: only the
    screens already known (held or stored); the others are left out."""
    key = screen_key(tolerances)

    def held_key(problem_key: str) -> tuple:
        return (problem_key, backend.name, device_class, key)

    found: dict[str, ScreenResult] = {}
    missing: dict[str, Problem] = {}
    for problem in problems:
        with _HELD_LOCK:
            hit = _HELD.get(held_key(problem.key))
        if hit is None and registry is not None:
            stored = registry.problem_screen(problem.key, device_class, key)
            if stored is not None:
                hit = ScreenResult.model_validate(stored)
                with _HELD_LOCK:
                    _HELD[held_key(problem.key)] = hit
        if hit is not None:
            found[problem.key] = hit
        else:
            missing.setdefault(problem.key, problem)

    while missing and compute:
        mine: dict[str, Problem] = {}
        theirs: list[threading.Event] = []
        with _HELD_LOCK:
            for problem_key, problem in missing.items():
                held = held_key(problem_key)
                if held in _HELD:
                    found[problem_key] = _HELD[held]
                elif held in _COMPUTING:
                    theirs.append(_COMPUTING[held])
                else:
                    _COMPUTING[held] = threading.Event()
                    mine[problem_key] = problem
        try:
            for problem_key, result in _compute(mine, backend, device, limits, tolerances, workers).items():
                found[problem_key] = result
                if result.error is None:
                    with _HELD_LOCK:
                        _HELD[held_key(problem_key)] = result
                    if registry is not None:
                        registry.store_problem_screen(mine[problem_key], device_class, key, result.model_dump())
        finally:
            with _HELD_LOCK:
                for problem_key in mine:
                    _COMPUTING.pop(held_key(problem_key)).set()
        for event in theirs:
            event.wait()
        # what another thread computed is held now; one whose reference failed is not: compute it here
        missing = {k: p for k, p in missing.items() if k not in found}
    return found


def _compute(
    problems: dict[str, Problem],
    backend: Backend,
    device: str,
    limits: SandboxLimits,
    tolerances: dict[str, Tolerance],
    workers: int,
) -> dict[str, ScreenResult]:
    """Screen these problems (by key), `workers` at a time."""
    if not problems:
        return {}
    if getattr(backend, "screens_need_workers", True):  # each in a worker of its own: they start now, side by side
        backend.warm_up(len(problems))
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(problems)))) as pool:
        computed = pool.map(
            lambda problem: screen_problem(problem, backend, device, limits, tolerances, SCREEN_SEEDS),
            problems.values(),
        )
        return dict(zip(problems, computed))


def screens_in_background(
    problems: list[Problem],
    backend: Backend,
    device: str,
    device_class: str,
    limits: SandboxLimits,
    tolerances: dict[str, Tolerance],
    registry,
    workers: int,
) -> tuple[dict[str, ScreenResult], dict[str, Future]]:
    """The screens already known (held or in the registry, read on this thread), and a future for each other problem's
    screen, computed `workers` at a time in threads of their own, with no registry: the caller stores them
    (`store_screen`) on its own thread.  An RL batch's candidates of a problem can then start as soon as their own
    problem is screened, not after the last problem's screen (on two H200s that wait was a batch's first 30-45 s)."""
    found = cached_screens(problems, backend, device, device_class, limits, tolerances, registry, compute=False)
    missing = {p.key: p for p in problems if p.key not in found}
    if not missing:
        return found, {}
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(missing))), thread_name_prefix="screen")
    futures = {
        key: pool.submit(cached_screens, [problem], backend, device, device_class, limits, tolerances)
        for key, problem in missing.items()
    }
    pool.shutdown(wait=False)  # the threads end with their screens
    return found, {key: _first(future) for key, future in futures.items()}


def _first(future: Future) -> Future:
    """A future of the one screen in a `cached_screens` answer."""
    out: Future = Future()

    def done(f: Future) -> None:
        error = f.exception()
        if error is not None:
            out.set_exception(error)
        else:
            out.set_result(next(iter(f.result().values())))

    future.add_done_callback(done)
    return out


def store_screen(registry, problem: Problem, device_class: str, tolerances: dict[str, Tolerance], result) -> None:
    """A screen computed in the background, stored (a screen whose reference failed never is)."""
    if registry is not None and result.error is None:
        registry.store_problem_screen(problem, device_class, screen_key(tolerances), result.model_dump())
