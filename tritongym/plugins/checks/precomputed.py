"""`precomputed`: no output existed before the candidate's own Triton kernels ran.

Torch (or numpy, or a grid lambda or an autotune hook) computes the answer and an own Triton kernel copies it
into the output: the ghost replay passes (skip the copy and the output is wrong), every correctness test
passes, and the torch work may even hide where the source does not show it.  The `precomputed` probe
(`core/worker/probes.py`) calls the forward once on inputs no other call saw and samples, before each
launch of an own kernel, every floating argument the size of an output that none of the candidate's kernels
wrote (inputs and weights excepted); the trusted side finds any that already held an output's values (the
call's `findings`).
Such Triton adds no arithmetic to the output: hacked under every policy (a lazy kernel, whose Triton does
part of the work, is `torch_compute`'s to weigh).  A reference that does no arithmetic at all (a copy, a
permutation) is exempt: moving data is then the work.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class PrecomputedCheck(RuntimeCheck):
    """No tensor held an output's values before the candidate's own kernels ran (Triton only copying)."""

    name = "precomputed"
    priority = 33
    probes = ("precomputed",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        call = evidence.probe("precomputed")
        if call is None:
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="not probed on this backend")
        if sum(evidence.reference_torch_work.values()) <= 0:
            return CheckVerdict(
                name=self.name, passed=True, stage="runtime", reason="the reference only moves data: so may Triton"
            )
        if call.findings:
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason=f"{call.findings[0]}: the answer was computed outside your Triton kernels (by torch, "
                "numpy, or code in a grid callable or an autotune hook) and they only moved it; compute the "
                "outputs in your Triton kernels",
            )
        return CheckVerdict(
            name=self.name, passed=True, stage="runtime", reason="no output existed before the own kernels ran"
        )


@hookimpl
def register_checks(register):
    register(PrecomputedCheck)
