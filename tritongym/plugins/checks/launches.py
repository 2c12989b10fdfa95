"""`launches`: the candidate's own Triton kernels really ran, in every trial and in every mode.

A kernel that is defined but never launched (a decoy, or one on a dead branch) leaves the work to torch.
The worker records every Triton launch during the candidate's forward, attributed by the file the kernel
was defined in.  Besides the trials (`no_grad`, `train()` mode) the forward is probed under grad mode and
in `eval()` mode (`core/worker/probes.py`), because a candidate can take its Triton path only where it expects
to be measured and fall back to torch elsewhere.  A trial or mode probe without a launch of the
candidate's own kernels fails this check.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, LaunchRecord, Problem

_FIX = "launch your own @triton.jit kernels for the whole computation, in every mode, on every call"


def _own(launches: list[LaunchRecord]) -> bool:
    return any(rec.own and rec.count > 0 for rec in launches)


class LaunchProvenanceCheck(RuntimeCheck):
    """Every trial, and the forward under grad and eval() modes, launched a Triton kernel of the candidate."""

    name = "launches"
    priority = 10
    probes = ("modes",)

    def _fail(self, reason: str) -> CheckVerdict:
        return CheckVerdict(name=self.name, passed=False, stage="runtime", reason=f"{reason}; {_FIX}")

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        for t, trial in enumerate(evidence.trials):
            if not _own(trial.launches):
                others = ", ".join(rec.kernel for rec in trial.launches) or "none"
                return self._fail(
                    f"{trial.label(t)} launched none of the candidate's own Triton kernels "
                    f"(other kernels launched: {others}); the output came from somewhere else"
                )
        for call in evidence.probes:
            if not call.probe.startswith("mode:"):
                continue
            mode = call.probe.removeprefix("mode:").replace("+", ", ")
            if call.error:
                return self._fail(f"under {mode} the forward raised {call.error}")
            if not _own(call.launches):
                return self._fail(
                    f"under {mode} the forward launched none of the candidate's own Triton kernels: its kernels "
                    "only run in the mode it expects to be measured in"
                )
        kernels = sorted({rec.kernel for trial in evidence.trials for rec in trial.launches if rec.own})
        modes = sum(call.probe.startswith("mode:") for call in evidence.probes)
        return CheckVerdict(
            name=self.name,
            passed=True,
            stage="runtime",
            reason=f"launched {', '.join(kernels)} in every trial" + (f" and in {modes} mode probes" if modes else ""),
        )


@hookimpl
def register_checks(register):
    register(LaunchProvenanceCheck)
