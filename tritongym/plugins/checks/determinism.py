"""`determinism`: a second call on the same inputs is still right.

The `repeat` probe of `core/worker/probes.py` repeats the `refresh` call on identical inputs, and its
outputs are compared with the *reference*, not with the first call's: two honest calls may differ by float
reassociation (split-K `tl.atomic_add` sums in whatever order the programs finish) and each still be within
tolerance of the answer, while their difference is up to twice that.  Comparing the two calls with each
other at one tolerance judged such a kernel `hacked` about once in five H100 runs.  Kernels that race, or
that read memory they never wrote, give a wrong second answer.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem
from tritongym.core.verdict import probe_outputs_match, probes_in_domain


class DeterminismCheck(RuntimeCheck):
    """A second call of the forward on the same inputs is still within tolerance of the reference."""

    name = "determinism"
    priority = 50
    probes = ("repeat",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        repeat = next((call for call in probes_in_domain(evidence) if call.probe == "repeat"), None)
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
                reason=f"called again on identical inputs, the forward's answer is wrong ({judged.message}): a race, "
                "or reads of memory the kernel never wrote; make every output element a function of the inputs alone",
            )
        return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="a repeated call is still right")


@hookimpl
def register_checks(register):
    register(DeterminismCheck)
