"""`torch_compute`: how much of the reference's work torch did inside the candidate's forward, measured.

The worker traces every ATen op each forward runs (`core/worker/op_trace.py`; grid callables and
autotune hooks included: they are the candidate's code) and weighs each compute op's work, multiply-adds for
contractions and elements touched for the rest; the reference's forward is weighed the same way.  The share is
the torch work of one main-shape forward over the reference's:

* below `lazy_share`: glue and parameter-sized work (a scale folded into a weight, BatchNorm statistics
  folded into a bias, a row count as `torch.prod(torch.tensor(x.shape[:-1]))`, `.contiguous()`): passes
  under every policy, named in the reason;
* at or above it: the reference's main work left to torch (a convolution or a softmax beside a fused Triton
  epilogue): a *lazy* kernel.  The verdict names the ops and their share, and on a GPU the PR, the share of
  GPU time the candidate's own kernels ran, which prices it in the reward (KernelGYM's practice).  It passes
  under `practical` (the default) and fails under `strict`.

`off` passes.  Where the source shows torch compute in host code (`core/scan/host_compute.py`), its lines
are given as advice: a pattern is never a verdict here.  Triton that only moves an answer torch computed is
not lazy but a hack: the `precomputed` check's, under every policy.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem
from tritongym.core.scan.ast_scan import scan
from tritongym.core.scan.host_compute import host_compute
from tritongym.core.source import parse_source


class TorchComputeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: Literal["strict", "practical", "off"] = Field(
        default="practical",
        description="practical: a lazy kernel passes, its torch work named and priced by PR; strict: it fails; "
        "off: not weighed",
    )
    lazy_share: float = Field(
        default=0.3,
        gt=0,
        le=1,
        description="share of the reference's work at which torch's work in the forward is the main work (lazy)",
    )


class TorchComputeCheck(RuntimeCheck):
    """Torch's share of the reference's work in the forward, weighed at run time: lazy fails only under strict."""

    name = "torch_compute"
    priority = 35
    Options: ClassVar[type[BaseModel]] = TorchComputeOptions

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        policy = self.options.policy
        reference = sum(evidence.reference_torch_work.values())
        if policy == "off":
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="not weighed (policy 'off')")
        if reference <= 0:
            return CheckVerdict(
                name=self.name, passed=True, stage="runtime", reason="the reference does no torch compute to weigh"
            )
        work = sorted(evidence.torch_work.items(), key=lambda kv: -kv[1])
        share = sum(w for _, w in work) / reference
        ops = ", ".join(f"aten.{op} {w / reference:.1%}" for op, w in work[:6] if w > 0)
        if share < self.options.lazy_share:
            said = f"glue: torch did {share:.2%} of the reference's work ({ops})" if ops else "no torch compute"
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason=said)
        pr = f"; its own kernels ran {evidence.pr:.1%} of the forward's GPU time (PR)" if evidence.pr else ""
        lazy = f"lazy: torch did {share:.0%} of the reference's work in the forward ({ops}){pr}{_advice(candidate)}"
        if policy == "practical":
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason=f"{lazy} (policy 'practical': passes, priced by the profiling reward)",
            )
        return CheckVerdict(
            name=self.name,
            passed=False,
            stage="runtime",
            reason=f"{lazy}; policy 'strict' wants the reference's main work in your Triton kernels: compute it "
            "there and use torch only to allocate outputs, take views and prepare weights",
        )


def _advice(candidate: Candidate) -> str:
    """Where the source computes with torch in host code, as advice (the measure above is the verdict)."""
    try:
        uses = host_compute(scan(parse_source(candidate.source)), "ModelNew")
    except (SyntaxError, ValueError):
        return ""
    if not uses:
        return ""
    return "; in the source: " + ", ".join(f"line {u.node.lineno} `{u.op}` in {u.function}" for u in uses[:8])


@hookimpl
def register_checks(register):
    register(TorchComputeCheck)
