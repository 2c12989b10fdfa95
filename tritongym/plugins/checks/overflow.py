"""`overflow`: where the reference does not change when its inputs move by a constant, the candidate stays finite.

A softmax without its row-max subtraction is right on the judge's inputs (randn times a few) and returns NaN for
logits past 88, which real logits reach: the `shifted` probe (`plugins/probes/shifted.py`) calls the forward with
every floating input moved up by 100, and its trusted half says which outputs of the reference that leaves
unchanged and finite.  Only there, a candidate output with a NaN or an infinity is `incorrect` (a correctness
fault of the kernel's, not a hack).  Outputs the shift changes are not judged, nor is a probe that raised.

The candidate's counts come from its own process; a kernel that forged them would have to replace `torch.isfinite`
or the probe's function before the call, which the `monkeypatch` and `environment` checks refuse, and it would
only hide a fault of its own.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.errors import CheckUnavailable
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class OverflowCheck(RuntimeCheck):
    """Outputs the reference keeps under a shift of its inputs stay finite in the candidate too."""

    name = "overflow"
    priority = 35
    probes = ("shifted",)
    fails_as = "incorrect"

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        call = evidence.probe("shifted")
        if call is None or call.reference is None:
            why = "it did not run" if call is None else call.reference_error or "no reference answer"
            raise CheckUnavailable(f"probe 'shifted' has nothing to compare: {why}")
        invariant = [bool(v) for v in (call.reference or {}).get("invariant", [])]
        if not any(invariant):
            return CheckVerdict(name=self.name, passed=True, reason="no output is unchanged by a shift of the inputs")
        if call.error:
            return CheckVerdict(name=self.name, passed=True, reason="the forward on shifted inputs raised (not judged)")
        value = call.value if isinstance(call.value, dict) else {}
        nonfinite, numel = list(value.get("nonfinite", [])), list(value.get("numel", []))
        for index, keeps in enumerate(invariant):
            if not keeps or index >= len(nonfinite):
                continue
            bad, total = int(nonfinite[index]), int(numel[index]) if index < len(numel) else 0
            if bad > 0:
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    reason=f"with every floating input moved up by 100, output {index} has {bad} of {total} "
                    "elements NaN or infinite, where the reference's answer does not change and stays finite: an "
                    "exp or a square of unshifted inputs overflows; subtract the row's maximum (or mean) first, as "
                    "a numerically safe softmax or norm does",
                )
        return CheckVerdict(name=self.name, passed=True, reason="finite where a shift of the inputs changes nothing")


@hookimpl
def register_checks(register):
    register(OverflowCheck)
