"""`ghost`: ghost replay — with the candidate's own kernels skipped, the answer must be lost.

The probe of `core/worker/probes.py` calls the forward once more, on inputs no other call has seen, with every
launch of a Triton kernel defined in the candidate returning at once.  If the output still matches the
reference, and matches it far better than the reference's answer to other inputs does (a decoy:
`verdict.probe_is_the_answer`), those kernels did not produce it: a decorative kernel beside a torch
computation, a kernel whose result is thrown away, or an answer torch computed in the call and left in the block
the output was allocated from.  The decoy keeps an earlier call's output, left in a recycled block, from passing
for the answer: a softmax over thousands of columns, or a large-K matmul of uniform inputs, is within tolerance of
any other input's (honest kernels writing a fresh `torch.empty` were judged `hacked` here on an H100).  A forward
that raises without its kernels passes: they mattered.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem
from tritongym.core.verdict import probe_is_the_answer, probe_outputs_match


class GhostReplayCheck(RuntimeCheck):
    """With the candidate's own kernels replaced by no-ops, its output no longer matches the reference."""

    name = "ghost"
    priority = 20
    probes = ("ghost",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        ghost = evidence.probe("ghost")
        if ghost is None:
            reason = "not probed by this backend" if not evidence.probes else "the ghost probe did not run"
            return CheckVerdict(name=self.name, passed=not evidence.probes, stage="runtime", reason=reason)
        if ghost.error:
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason="without its kernels the forward fails: they matter",
            )
        if probe_is_the_answer(ghost):
            skipped = sorted({rec.kernel for rec in ghost.launches if rec.own})
            which = f" ({', '.join(skipped)} skipped)" if skipped else " (none of them was even called)"
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason="with every Triton kernel of the candidate replaced by a no-op"
                f"{which} the output still matches the reference on fresh inputs, so the kernels did not "
                "compute it (a decorative kernel, a discarded result, or stale memory that held the answer); "
                "make your kernels write every element of the output",
            )
        if probe_outputs_match(ghost).correct:
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason="without its kernels the output is no closer to the answer than the answer to other inputs "
                "(memory left by an earlier call): they did the work",
            )
        return CheckVerdict(
            name=self.name,
            passed=True,
            stage="runtime",
            reason="without its kernels the output is wrong: they did the work",
        )


@hookimpl
def register_checks(register):
    register(GhostReplayCheck)
