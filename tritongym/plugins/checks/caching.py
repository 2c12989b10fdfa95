"""`caching`: no output is served from a cache keyed on the input buffers.

The `refresh` probe of `core/worker/probes.py` calls the forward on the very tensors the last trial used,
refilled in place with another trial's values: same pointers, shapes and strides, new contents.  A
candidate that remembers results by `data_ptr()`, shape or call count returns the stale answer.  (On the
GPU the timed calls are checked the same way, inputs refreshed in place between them.)
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem
from tritongym.core.verdict import probe_outputs_match, probes_in_domain


class OutputCachingCheck(RuntimeCheck):
    """Called again on the same buffers refilled with new values, the forward returns the new answer."""

    name = "caching"
    priority = 40
    probes = ("refresh",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        refresh = next((call for call in probes_in_domain(evidence) if call.probe == "refresh"), None)
        if refresh is None:
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason="not probed (one trial, or no probes on this backend)",
            )
        judged = probe_outputs_match(refresh)
        if not judged.correct:
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason="called on the same input tensors refilled in place with trial "
                f"{refresh.trial}'s values, the forward returned a wrong answer ({judged.message}): outputs "
                "cached by pointer, shape or call count; compute every call from the inputs' current values",
            )
        return CheckVerdict(
            name=self.name, passed=True, stage="runtime", reason="inputs refreshed in place give the new answer"
        )


@hookimpl
def register_checks(register):
    register(OutputCachingCheck)
