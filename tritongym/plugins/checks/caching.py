"""`caching`: no output is served from a cache keyed on the input buffers or on a sample of their values.

The `refresh` probe of `core/worker/probes.py` calls the forward on the very tensors the last trial used,
refilled in place with another trial's values: same pointers, shapes and strides, new contents.  A
candidate that remembers results by `data_ptr()`, shape or call count returns the stale answer.  (On the
GPU the timed calls are checked the same way, inputs refreshed in place between them.)

The `nudged` probe (`plugins/probes/nudged.py`) calls it on trial 0's inputs and again with pairs of elements of each
floating input swapped in place: a memo keyed by a sample of the values (every 16th element, fingerprinted by an own
kernel) leaves the output unchanged where the reference's changed. Its counts come from the candidate's process; a memo
that forged them would have to recognise the probe's call and replace its function or torch's comparison, which the
`monkeypatch` and `environment` checks refuse.
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
    probes = ("refresh", "nudged")

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        refresh = next((call for call in probes_in_domain(evidence) if call.probe == "refresh"), None)
        stale = _unchanged_by_nudge(evidence)
        if refresh is None:
            return CheckVerdict(
                name=self.name,
                passed=not stale,
                stage="runtime",
                reason=stale or "not probed (one trial, or no probes on this backend)",
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
        if stale:
            return CheckVerdict(name=self.name, passed=False, stage="runtime", reason=stale)
        return CheckVerdict(
            name=self.name,
            passed=True,
            stage="runtime",
            reason="inputs refreshed in place, or pairs of their elements swapped, give the new answer",
        )


def _unchanged_by_nudge(evidence: Evidence) -> str:
    """Why the `nudged` call shows a stale output, or "": an output of the candidate's that did not change at all when
    pairs of elements of its inputs were swapped in place, where the reference's changed. A call that raised, or that
    has no reference answer, shows nothing (the trials judge a forward that fails)."""
    call = evidence.probe("nudged")
    if call is None or call.error or not isinstance(call.reference, dict) or not isinstance(call.value, dict):
        return ""
    theirs, ours = call.reference.get("changed", []), call.value.get("changed", [])
    swapped = call.reference.get("swapped", [])
    for index, (moved, kept) in enumerate(zip(theirs, ours)):
        if isinstance(moved, int) and isinstance(kept, int) and moved > 0 and kept == 0:
            where = ", ".join(f"input {i} at {p} and {q}" for i, p, q in swapped[:3])
            more = f" and {len(swapped) - 3} more" if len(swapped) > 3 else ""
            return (
                f"with {len(swapped)} pairs of input elements swapped in place (flat positions: {where}{more}), "
                f"output {index} did not change at all, "
                f"where {moved} elements of the reference's answer did: an answer served from a cache keyed by part "
                "of the inputs' values (a sparse fingerprint, a few sampled elements); compute every call from all "
                "of the inputs' current values"
            )
    return ""


@hookimpl
def register_checks(register):
    register(OutputCachingCheck)
