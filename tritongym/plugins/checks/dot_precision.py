"""`dot_precision`: no TF32 tensor-core product under the `ieee` precision policy (GPU).

Triton's `tl.dot` on fp32 inputs multiplies in TF32 unless told `input_precision="ieee"`, which is
faster and less exact than the reference (run with TF32 off under this policy): a precision downgrade
that earns speed the policy does not allow.  The worker reads the PTX of every kernel the candidate
compiled and lists those whose `mma`/`wgmma` instructions take `.tf32` operands.  Under the `tf32`
policy they are allowed.  On the CPU interpreter there is no PTX and the check passes.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class DotPrecisionCheck(RuntimeCheck):
    """Under the ieee policy, no compiled kernel of the candidate multiplies in TF32."""

    name = "dot_precision"
    priority = 80
    explains_incorrect = True

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        if evidence.tf32_kernels and self.policy.precision == "ieee":
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason=f"{', '.join(evidence.tf32_kernels)} multiply in TF32 on tensor cores, but the precision "
                'policy is ieee: pass input_precision="ieee" to tl.dot for fp32 inputs',
            )
        return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="no TF32 beyond the policy")


@hookimpl
def register_checks(register):
    register(DotPrecisionCheck)
