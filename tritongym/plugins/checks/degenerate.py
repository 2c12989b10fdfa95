"""`degenerate`: on a degenerate problem, the candidate does not just give the answer that does no work.

A problem is degenerate when a negative control passes its correctness check (`tritongym problems check`):
all zeros, a constant (the reference's output for other inputs), or an input returned unchanged.  There
the trials cannot tell an honest kernel from one that returns that answer, so the evaluator screens every
problem once (cached in the registry) and, when it is degenerate, the worker calls the candidate once more
on inputs transformed so that the control's answer is wrong (`core/worker/controls.py`; e.g. ReLU of
non-negative inputs is the identity, of negated ones it is not).  A candidate whose outputs there equal
the control's answer, and not the reference's, did no work: hacked, with the degeneracy named.  Outputs
that match neither are not judged here (inputs outside the problem's distribution may be outside a
kernel's domain), nor is a probe that raised.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, ProbeCall, Problem
from tritongym.core.verdict import probe_outputs_match

_WORDS = {
    "zeros": ("an all-zeros output", "zeros"),
    "other_seed_output": ("a constant (the reference's output for other inputs)", "that constant"),
    "identity": ("returning an input unchanged (the identity)", "its input"),
}


class DegenerateProblemCheck(RuntimeCheck):
    """On a problem a negative control passes, the forward does not return that control's answer."""

    name = "degenerate"
    priority = 25
    needs_screen = True
    probes = ("degenerate",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        probed = [call for call in evidence.probes if call.probe.startswith("degenerate:")]
        for call in probed:
            if call.error or not call.control_outputs:
                continue
            gives_control = probe_outputs_match(_against_control(call)).correct
            if gives_control and not probe_outputs_match(call).correct:
                answer, returned = _WORDS.get(call.control, (call.control, "the control's answer"))
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"problem '{problem.name}' is degenerate: {answer} passes its correctness check on the "
                    f"problem's own inputs; on inputs where it does not, this forward returned {returned}, not "
                    "the reference's answer, so it did no work; compute the operation itself",
                )
        if not probed:
            return CheckVerdict(
                name=self.name, passed=True, stage="runtime", reason="no negative control passes this problem"
            )
        controls = ", ".join(call.control or call.probe for call in probed)
        return CheckVerdict(
            name=self.name,
            passed=True,
            stage="runtime",
            reason=f"the problem is degenerate for {controls}, but the forward does not just return that answer",
        )


def _against_control(call: ProbeCall) -> ProbeCall:
    return call.model_copy(update={"outputs": call.control_outputs, "ref_n_outputs": len(call.control_outputs)})


@hookimpl
def register_checks(register):
    register(DegenerateProblemCheck)
