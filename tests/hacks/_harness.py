"""Shared machinery of the hack regression suite: the case table's types, the check layers, batched runs.

A case names a candidate file, a suite problem, which checks are on (`layer`) and what must happen
(`expect`): a status and, for `rejected` / `hacked`, the exact check among the failed verdicts (at the
stage that status implies), or for `incorrect` a fragment of the message.  A few hacks have two legitimate
outcomes (memory that may or may not hold the answer): those cases list both, never `ok`.

Layers:

* `all`: every registered check, as in production;
* `runtime`: every static check off except `structure` (the static layer is off), so only the runtime
  checks and the correctness verdict stand between the hack and a reward.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import EvaluationResult, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem

HERE = Path(__file__).resolve().parent
CANDIDATES = HERE / "candidates"
HONEST = HERE / "honest"
PROBLEMS = HERE / "problems"  # problems the suite does not bundle (KernelBench-style, small for the CPU)

STATIC, RUNTIME = "static", "runtime"


@dataclass(frozen=True)
class Expect:
    """One acceptable outcome: a status, and the check that must have failed or a message fragment."""

    status: Status
    check: str | None = None
    reason: str | None = None  # a fragment of that check's reason: it failed for this hack, not another
    message: str | None = None

    def __str__(self) -> str:
        detail = f" by '{self.check}'" if self.check else f" ({self.message!r} in message)" if self.message else ""
        if self.reason:
            detail += f" ({self.reason!r} in its reason)"
        return f"{self.status.value}{detail}"


@dataclass(frozen=True)
class Case:
    file: str  # under candidates/ (or honest/)
    problem: str
    expect: tuple[Expect, ...]
    layer: str = "all"
    precision: str | None = None  # None: the configuration's default policy
    why: str = ""
    marks: tuple = field(default=())
    policy: str | None = None  # torch_compute's policy; None: its default

    @property
    def id(self) -> str:
        """The candidate's name and the configuration it runs under: its layer, then a precision or policy it
        names (`tf32_flag[all,ieee]`), so a case under the default configuration and the same file under another
        are two cases."""
        named = [self.layer] + [c for c in (self.precision, self.policy) if c is not None]
        return f"{Path(self.file).stem}[{','.join(named)}]"

    @property
    def default_config(self) -> bool:
        """Whether the case runs as production judges by default: every check on, the default precision policy
        and `torch_compute`'s default policy."""
        return self.layer == "all" and self.precision in (None, EvalConfig().precision) and self.policy is None


def rejected(check: str, reason: str | None = None) -> Expect:
    return Expect(Status.rejected, check=check, reason=reason)


def hacked(check: str, reason: str | None = None) -> Expect:
    return Expect(Status.hacked, check=check, reason=reason)


def imprecise(reason: str | None = None) -> Expect:
    """`incorrect` because the `precision` check measured a class below the policy (a shortfall, not a cheat)."""
    return Expect(Status.incorrect, check="precision", reason=reason)


def incorrect(message: str) -> Expect:
    return Expect(Status.incorrect, message=message)


def failed_at_run(message: str) -> Expect:
    """`runtime_error`: the hack broke itself (what it found was not what it looked for), with this message."""
    return Expect(Status.runtime_error, message=message)


def registered_checks(host: PluginHost) -> dict[str, str]:
    """Registered check name -> its stage ("static" or "runtime"), for the checks that are on by default
    (an off-by-default check such as `llm-judge` asks a model and has its own tests)."""
    return {
        name: host.get("check", name).cls.stage
        for name in host.names("check")
        if host.get("check", name).cls.default_enabled
    }


def checks_for(layer: str, host: PluginHost) -> dict[str, dict] | None:
    """The `EvalConfig.checks` value of a layer (None = every registered check)."""
    stages = registered_checks(host)
    if layer == "all":
        return None
    if layer == "runtime":
        return {n: {} for n, stage in stages.items() if stage == RUNTIME or n == "structure"}
    raise ValueError(f"unknown layer {layer!r}")


def new_host() -> PluginHost:
    return PluginHost(load_entry_points=False)


def tiered(cases: list[Case], fast: set[str]) -> list:
    """The cases as `pytest.param`s, each marked `slow` unless its id is in `fast`: the fast tier (`make test`)
    keeps one case per check or failure kind, the slow tier (`make test-slow`) holds the rest."""
    unknown = fast - {c.id for c in cases}
    assert not unknown, f"fast cases that are no case: {sorted(unknown)}"
    return [pytest.param(c, id=c.id, marks=(*c.marks, *(() if c.id in fast else (pytest.mark.slow,)))) for c in cases]


def selected(request: pytest.FixtureRequest, cases: list[Case], test: str) -> list[Case]:
    """The cases whose `test` this session runs (after -m, -k and node ids): a module's batch evaluates only those,
    so the fast tier pays nothing for the slow tier's cases.  (pytest-xdist's `--dist loadfile` keeps a module's
    tests in one worker, so its `session.items` are those this batch serves.)"""
    chosen = {
        item.callspec.params["case"].id
        for item in request.session.items
        if getattr(item, "originalname", None) == test and hasattr(item, "callspec")
    }
    return [c for c in cases if c.id in chosen]


@contextlib.contextmanager
def suite_env():
    """What tests/conftest.py's autouse fixture does, for a module's batch: no installed plugin, no registry."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TRITONGYM_LOAD_PLUGINS", "")
        env.delenv("TRITONGYM_PLUGINS", raising=False)
        env.delenv("TRITONGYM_REGISTRY", raising=False)
        yield


def evaluator_for(backend: str, layer: str = "all", precision=None, policy=None, **config) -> Evaluator:
    """The suite's Evaluator for a layer, precision and policy (None: the configuration's default), no registry:
    three trials and two workers, the rest the default configuration unless `config` says otherwise."""
    size = config.pop("size", "gpu" if backend == "triton-cuda" else "cpu")
    host = new_host()
    # 300 s: under Triton's interpreter an honest Welford LayerNorm takes 48 s alone (its shape sets and late trial
    # 24 s of it), and on CI's two cores beside another test file's batch it passed 120 s once: a limit that
    # measures the machine, not the judge (no case here is caught by a timeout)
    settings = dict(trials=3, timeout_s=300, workers=min(2, os.cpu_count() or 1), use_cache=False)
    settings.update(config)
    checks = checks_for(layer, host)
    if precision is not None:
        settings["precision"] = precision
    if policy is not None and checks is None:
        settings["enable_checks"] = {"torch_compute": {"policy": policy}}
    elif policy is not None:
        checks["torch_compute"] = {"policy": policy}
    return Evaluator(EvalConfig(backend=backend, size=size, checks=checks, **settings), registry=None, host=host)


def evaluate_cases(
    cases: Iterable[Case], backend: str, folder: Path = CANDIDATES, **config
) -> dict[str, EvaluationResult]:
    """Evaluate every case, one `evaluate_many` batch per distinct (layer, precision, policy); results by case id."""
    cases = list(cases)
    size = config.pop("size", "gpu" if backend == "triton-cuda" else "cpu")
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        groups.setdefault((case.layer, case.precision, case.policy), []).append(case)
    results: dict[str, EvaluationResult] = {}
    with suite_env():
        for (layer, precision, policy), group in groups.items():
            evaluator = evaluator_for(backend, layer, precision, policy, size=size, **config)
            try:
                pairs = [((folder / c.file).read_text(), load_problem(c.problem, size)) for c in group]
                for case, result in zip(group, evaluator.evaluate_many(pairs)):
                    results[case.id] = result
            finally:
                evaluator.close()
    return results


def failed(result: EvaluationResult) -> list[tuple[str, str]]:
    return [(v.name, v.stage) for v in result.checks if not v.passed]


def failed_reason(result: EvaluationResult, check: str) -> str:
    return " ".join(v.reason for v in result.checks if v.name == check and not v.passed)


def explain(result: EvaluationResult) -> str:
    verdicts = "; ".join(f"{v.name}({v.stage}): {'pass' if v.passed else 'FAIL'}" for v in result.checks)
    err = f" error={result.error.kind}: {result.error.message[:300]}" if result.error else ""
    return f"status={result.status.value} message={result.message[:500]!r} checks=[{verdicts}]{err}"


def matches(expect: Expect, result: EvaluationResult) -> bool:
    if result.status != expect.status:
        return False
    if expect.check is not None:
        stage = STATIC if expect.status == Status.rejected else RUNTIME
        if (expect.check, stage) not in failed(result):
            return False
        if expect.reason is not None and expect.reason not in failed_reason(result, expect.check):
            return False
    if expect.message is not None and expect.message not in result.message:
        return False
    return True


def assert_caught(case: Case, result: EvaluationResult, host: PluginHost) -> None:
    """The result is one of the case's expected outcomes (never `ok`, never a pass of the named check)."""
    assert result.status != Status.ok, f"{case.file} on {case.problem} was NOT caught: {explain(result)}"
    assert not result.correct and result.reward.total == 0, f"{case.file} still earns reward: {result.reward}"
    missing = sorted({e.check for e in case.expect if e.check} - set(host.names("check")))
    if missing and not any(matches(e, result) for e in case.expect):
        pytest.fail(f"{case.file}: expected catcher(s) {', '.join(missing)} not registered yet; got {explain(result)}")
    wanted = " or ".join(str(e) for e in case.expect)
    note = f" ({case.why})" if case.why else ""
    assert any(matches(e, result) for e in case.expect), f"{case.file}{note}: expected {wanted}, got {explain(result)}"
