"""Honest idioms and hacks judged side by side in one `evaluate_many` batch under the default configuration, as an
RL batch mixes them: samples of one problem share the keeper's record, its seeds and the problem's screen, and every
sample shares the workers.  A verdict must not depend on what else is in the batch: each kernel's verdict in the
mixed batch is its verdict alone (one `evaluate` call on the same Evaluator) and its case's expected outcome.

The fast tier mixes five (two idioms, three hacks caught by three runtime checks, on two problems; about 20 s).
The slow tier mixes every default-configuration case of the hack and honest suites (108) in one batch, each held to
its case's expected outcome, the verdict its own test wants of it alone (about 2 minutes on two CPUs); judging each
alone again as well took 9.5 minutes on two shared CPUs, so that comparison is the fast tier's.
"""

from __future__ import annotations

import pytest

from tritongym.core.models import EvaluationResult, Status
from tritongym.core.problems import load_problem

from ._harness import CANDIDATES, HONEST, Case, assert_caught, evaluator_for, explain, new_host, suite_env
from .test_hacks import CPU_CASES, DEFAULT_ACCEPTS
from .test_honest import HONEST_CASES

pytestmark = pytest.mark.timeout(1800)

FAST_MIX = [  # (case id, honest?) in batch order: the samples of relu and of gelu interleaved
    ("relu_autotune[all]", True),
    ("passthrough_alias_gelu[all]", False),  # ghost
    ("grid_callable_torch[all]", False),  # precomputed, on relu's shared record
    ("gelu_heuristics[all]", True),
    ("pointer_cache[all]", False),  # caching, on relu's shared record
]


def default_cases() -> list[tuple[Case, bool]]:
    """Every case of the two suites that runs under the default configuration, as (case, honest?), hacks and idioms
    alternating so that samples of one problem meet samples of others."""
    hacks = [(c, False) for c in CPU_CASES + DEFAULT_ACCEPTS if c.default_config]
    honest = [(c, True) for c in HONEST_CASES if c.default_config]
    mixed = []
    for k in range(max(len(hacks), len(honest))):
        mixed += hacks[k : k + 1] + honest[k : k + 1]
    return mixed


def by_id(ids: list[tuple[str, bool]]) -> list[tuple[Case, bool]]:
    known = {(c.id, honest): c for c, honest in default_cases()}
    return [(known[(ident, honest)], honest) for ident, honest in ids]


def verdict(result: EvaluationResult, case: Case) -> tuple:
    """What judging decided: the status and, of the checks the case exists for, which failed (name, stage); not the
    numbers the draw changes, nor the other checks a hack keyed on addresses trips only when the allocator hands a
    probe's inputs an address it saw before (`pointer_cache` fails `modes` in one run and not the next, alone too)."""
    named = {e.check for e in case.expect if e.check is not None}
    return result.status, sorted((v.name, v.stage) for v in result.checks if not v.passed and v.name in named)


def assert_expected(case: Case, honest: bool, result: EvaluationResult, host) -> None:
    """The case's own test's assertion: an idiom (or a hack the default accepts) `ok` with no check failed, a hack
    one of its expected outcomes."""
    accepted = honest or case in DEFAULT_ACCEPTS
    if accepted:
        assert result.status == Status.ok, f"{case.file} on {case.problem}: {explain(result)}"
        assert not [v.name for v in result.checks if not v.passed], explain(result)
    else:
        assert_caught(case, result, host)


def judge_mixed_and_alone(cases: list[tuple[Case, bool]], alone: bool = True) -> tuple[list, list]:
    """The cases' results in one mixed batch, then (`alone`) each alone, on one Evaluator of the default
    configuration."""
    with suite_env():
        evaluator = evaluator_for("triton-cpu")
        try:
            folders = [HONEST if honest else CANDIDATES for _, honest in cases]
            pairs = [((f / c.file).read_text(), load_problem(c.problem, "cpu")) for f, (c, _) in zip(folders, cases)]
            mixed = evaluator.evaluate_many(pairs)
            by_itself = [evaluator.evaluate(source, problem) for source, problem in pairs] if alone else []
        finally:
            evaluator.close()
    return mixed, by_itself


def assert_same_verdicts(cases: list[tuple[Case, bool]], mixed: list, alone: list) -> None:
    host = new_host()
    assert len(mixed) == len(alone) == len(cases)
    differ = []
    for (case, honest), together, by_itself in zip(cases, mixed, alone):
        assert_expected(case, honest, together, host)
        assert_expected(case, honest, by_itself, host)
        # a case with two legitimate outcomes (memory that may or may not hold the answer) may take either each time
        if len(case.expect) <= 1 and verdict(together, case) != verdict(by_itself, case):
            differ.append(f"{case.id}: mixed {explain(together)}\n  alone {explain(by_itself)}")
    assert not differ, "verdicts in the mixed batch differ from alone:\n" + "\n".join(differ)


def test_a_mixed_batch_judges_each_kernel_as_it_is_judged_alone():
    cases = by_id(FAST_MIX)
    assert {c.problem for c, _ in cases} == {"relu", "gelu"} and sum(h for _, h in cases) == 2
    assert_same_verdicts(cases, *judge_mixed_and_alone(cases))


@pytest.mark.slow
def test_the_whole_suite_mixed_in_one_batch_judges_each_kernel_as_its_own_test_wants():
    cases = default_cases()
    assert len(cases) >= 100 and sum(h for _, h in cases) >= 40  # 65 hacks and 43 idioms when written
    mixed, _ = judge_mixed_and_alone(cases, alone=False)
    host = new_host()
    assert len(mixed) == len(cases)
    for (case, honest), result in zip(cases, mixed):
        assert_expected(case, honest, result, host)
