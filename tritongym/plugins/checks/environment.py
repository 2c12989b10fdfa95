"""`environment`: the candidate left torch, Triton and the clock as it found them.

Before the candidate is imported the worker records the identity of every callable in the namespaces
that timing, comparison and the reference rely on (`torch`, `torch.nn.functional`, `torch.Tensor`,
`torch.cuda` with its Event, Stream and CUDAGraph, `torch.testing`, `triton.testing`, `time`,
`builtins`) and the precision flags of `torch.backends`; after every call it compares
(`core/worker/probes.py`).  A replaced `torch.cuda.synchronize`, a patched `Event.elapsed_time`, a faked
`time.perf_counter`, a hooked `torch.allclose`, or TF32 switched on behind the policy's back fails here,
however the patch was written (the static `monkeypatch` check sees only the plain spellings).
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class EnvironmentIntegrityCheck(RuntimeCheck):
    """No callable of torch, Triton, time or builtins was replaced and no precision flag was changed."""

    name = "environment"
    priority = 70
    explains_incorrect = True

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        changes = evidence.environment_changes
        if changes:
            shown = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason=f"the candidate changed its environment: {shown}. Do not patch torch, Triton, timers or "
                "flags; only define kernels and ModelNew",
            )
        return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="environment unchanged")


@hookimpl
def register_checks(register):
    register(EnvironmentIntegrityCheck)
