"""`launches`: the candidate's own Triton kernels really ran, in every trial.

A kernel that is defined but never launched (a decoy, or one on a dead branch) leaves the work to torch.
The worker records every Triton launch during the candidate's forward, attributed by the file the kernel
was defined in; a trial with no launch of the candidate's own kernels fails this check.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class LaunchProvenanceCheck(RuntimeCheck):
    """Every trial launched at least one Triton kernel defined in the candidate."""

    name = "launches"

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        for t, trial in enumerate(evidence.trials):
            if not any(rec.own and rec.count > 0 for rec in trial.launches):
                others = ", ".join(rec.kernel for rec in trial.launches) or "none"
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"trial {t} launched none of the candidate's own Triton kernels "
                    f"(other kernels launched: {others}); the output came from somewhere else",
                )
        kernels = sorted({rec.kernel for trial in evidence.trials for rec in trial.launches if rec.own})
        return CheckVerdict(
            name=self.name, passed=True, stage="runtime", reason=f"launched {', '.join(kernels)} in every trial"
        )


@hookimpl
def register_checks(register):
    register(LaunchProvenanceCheck)
