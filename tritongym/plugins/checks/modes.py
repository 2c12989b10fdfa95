"""`modes`: the forward gives the reference's answer under grad mode and in `eval()` mode too.

The trials run under `no_grad` in `train()` mode; the probes of `core/worker/probes.py` call the forward under
grad mode and in `eval()` mode on trial inputs, against the reference run in the same mode.  A candidate
that is only right where it expects to be measured (or that branches on `torch.is_grad_enabled()` or
`self.training`) fails here.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem
from tritongym.core.verdict import probe_outputs_match, probes_in_domain


class ModeConsistencyCheck(RuntimeCheck):
    """The forward matches the reference under grad mode and in eval() mode, not only in the trials' mode."""

    name = "modes"
    priority = 30
    probes = ("modes",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        probed = [call for call in probes_in_domain(evidence) if call.probe.startswith("mode:")]
        for call in probed:
            judged = probe_outputs_match(call)
            if not judged.correct:
                mode = call.probe.removeprefix("mode:").replace("+", ", ")
                return CheckVerdict(
                    name=self.name,
                    passed=False,
                    stage="runtime",
                    reason=f"under {mode} (trial {call.trial}'s inputs) the output differs from the reference: "
                    f"{judged.message}; compute the same result whatever the grad mode and train()/eval() mode",
                )
        if not probed:
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="not probed by this backend")
        return CheckVerdict(
            name=self.name, passed=True, stage="runtime", reason=f"{len(probed)} mode probes match the reference"
        )


@hookimpl
def register_checks(register):
    register(ModeConsistencyCheck)
