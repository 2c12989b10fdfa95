"""`determinism`: two calls on the same inputs agree (within the output dtype's tolerance).

The `repeat` probe of `core/eval/worker/probes.py` repeats the `refresh` call on identical inputs.  Honest kernels
agree with themselves up to rounding (atomics may reorder a sum); kernels that race, or that read memory
they never wrote, do not.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem
from tritongym.core.verdict import probe_outputs_match


class DeterminismCheck(RuntimeCheck):
    """Two calls of the forward on the same inputs give the same outputs, within tolerance."""

    name = "determinism"
    priority = 50

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        repeat = next((call for call in evidence.probes if call.probe == "repeat"), None)
        if repeat is None:
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason="not probed (one trial, or no probes on this backend)",
            )
        judged = probe_outputs_match(repeat)
        if not judged.correct:
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason=f"two calls on identical inputs disagree ({judged.message}): a race, or reads of memory "
                "the kernel never wrote; make every output element a function of the inputs alone",
            )
        return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="repeated call agrees")


@hookimpl
def register_checks(register):
    register(DeterminismCheck)
