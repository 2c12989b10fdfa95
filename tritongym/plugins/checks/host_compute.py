"""`host_compute`: the forward does not read the tensors' data out to the host to compute with it there.

numpy and plain Python on the host never reach torch's dispatcher: `torch_compute` sees none of that work, and a
Triton kernel that only finishes it (divides by row sums numpy made, copies numpy's matmul) passes `precomputed`
and `ghost` too.  Found red-teaming on `triton-cpu`: a softmax whose exponentials and sums came from numpy, and a
matmul done by `numpy.matmul` before a Triton GELU, were `ok` under every policy.  The `host_reads` probe
(`plugins/probes/host_reads.py`) calls the forward once more and counts the elements the candidate's own code
turned into numpy arrays, lists or Python numbers.

Fails (`hacked`) when that is at least `MIN_ELEMENTS` elements and at least `INPUT_SHARE` of the inputs' elements:
an honest forward reads a few scalars at most (a maximum for its grid, a length), and computing on the data means
reading all of it.  The probe calls the forward on a clone of the first trial's inputs, where it already passed:
a forward that raises there fails too (else raising on that one call would hide any host work).  A probe that did
not run, or whose module did not import, is `CheckUnavailable`.

The count comes from the candidate's process.  Forging it means replacing the probe's wrappers or torch's methods
before the call, which the `monkeypatch`, `forbidden` and `environment` checks refuse; a method captured before the
wrappers existed is seen by the probe's profile function, and a forward that takes that function away fails here.
A candidate that computes on the host only when it is not probed must tell the probe's call from a trial's, which
it sees only through the same refused means.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.errors import CheckUnavailable
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem

MIN_ELEMENTS = 64
"""Fewer elements read to the host are never refused: scalars for a grid, a short list of lengths."""
INPUT_SHARE = 1 / 16
"""...nor fewer than this share of the inputs' elements (a long offsets list beside a large input)."""


class HostComputeCheck(RuntimeCheck):
    """The forward computes on the device: it does not read its inputs' data into numpy or Python to work there."""

    name = "host_compute"
    priority = 45
    probes = ("host_reads",)

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        call = evidence.probe("host_reads")
        if call is None:
            raise CheckUnavailable("probe 'host_reads' did not run")
        if call.error.startswith("could not import probe"):
            raise CheckUnavailable(call.error)
        if call.error:  # the first trial's inputs again: an honest forward does not raise where it passed before
            return CheckVerdict(
                name=self.name,
                passed=False,
                reason=f"the forward raised when called again on the first trial's inputs ({call.error[:200]}), "
                "where its trials passed: the host reads it makes cannot be counted",
            )
        value = call.value if isinstance(call.value, dict) else {}
        try:
            elements, inputs = int(value.get("elements", 0)), int(value.get("input_elements", 0))
        except (TypeError, ValueError):
            raise CheckUnavailable("probe 'host_reads' answered no counts") from None
        calls = value.get("calls") if isinstance(value.get("calls"), dict) else {}
        if value.get("profile_removed"):  # the probe's profile function taken away mid-call: its count is blind
            return CheckVerdict(
                name=self.name,
                passed=False,
                reason="the forward removed the profile function the probe counts host reads with "
                "(sys.setprofile): what it read to the host cannot be counted; leave the interpreter's hooks alone",
            )
        if elements >= MIN_ELEMENTS and elements >= INPUT_SHARE * inputs:
            how = ", ".join(f"{str(name)[:40]} x{count}" for name, count in sorted(calls.items())[:6])
            return CheckVerdict(
                name=self.name,
                passed=False,
                reason=f"the forward read {elements} tensor elements out to the host ({how}; the inputs hold "
                f"{inputs}): numpy or Python work on the data escapes the GPU's timing and torch_compute's pricing; "
                "compute in Triton kernels and read back nothing but scalars",
            )
        return CheckVerdict(name=self.name, passed=True, reason=f"{elements} elements read to the host")


@hookimpl
def register_checks(register):
    register(HostComputeCheck)
