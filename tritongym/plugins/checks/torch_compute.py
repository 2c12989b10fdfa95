"""`torch_compute`: at run time, torch did none of the reference's work inside the candidate's forward.

The runtime counterpart of the source policy `torch_ops`.  The worker traces the ATen ops each trial's
forward ran (`core/eval/worker/op_trace.py`; ops inside Triton's launch and autotune code are not counted) and the
reference's forward likewise.  An op counts when it falls in a family of the reference's ops
(`core/eval/op_families.py`: `mm` for a matmul problem, `gt` or `clamp` for a relu, `amax` for a softmax):
torch computing the answer, then a Triton kernel copying it into the output, passes the ghost replay
(the copy is the candidate's kernel) and every correctness test, but not this check.  Allocation, views,
copies and casts are never compute.

Policies, as for `torch_ops`: `strict` (default) fails; `practical` passes and lists what it saw (the
profiler's PR measure judges how much it matters); `off` passes.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.eval.op_families import aten_op, families_of
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class TorchComputeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: Literal["strict", "practical", "off"] = Field(
        default="strict",
        description="strict: fail when forward ran torch ops of the reference's families; practical: list "
        "them; off: ignore",
    )


class TorchComputeCheck(RuntimeCheck):
    """Forward ran no torch op (traced at the dispatcher) that does the reference's work."""

    name = "torch_compute"
    priority = 35
    Options: ClassVar[type[BaseModel]] = TorchComputeOptions

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        policy = self.options.policy
        if policy == "off" or not evidence.reference_torch_ops:  # no trace: nothing to compare with
            return CheckVerdict(name=self.name, passed=True, stage="runtime")
        reference: set[str] = set()
        for name in evidence.reference_torch_ops:
            op = aten_op(name)
            if op is not None:
                reference |= families_of(op)
        seen = []
        for name, count in sorted(evidence.torch_ops.items()):
            op = aten_op(name)
            if op is not None and families_of(op) & reference:
                seen.append(f"aten.{name} x{count}")
        if not seen:
            return CheckVerdict(name=self.name, passed=True, stage="runtime")
        listed = ", ".join(seen[:10])
        if policy == "practical":
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason=f"torch compute in forward, left to the PR measure (policy 'practical'): {listed}",
            )
        return CheckVerdict(
            name=self.name,
            passed=False,
            stage="runtime",
            reason=f"forward ran torch ops that do the reference's work ({listed}, over all trials; the "
            f"reference's families: {', '.join(sorted(reference))}): compute it in a Triton kernel; use torch "
            "only to allocate outputs and take views",
        )


@hookimpl
def register_checks(register):
    register(TorchComputeCheck)
