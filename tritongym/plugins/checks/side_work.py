"""`side_work`: all of the forward's work is done, in stream order, when it returns.

Work that continues after `forward` returns (in a thread, a child process, or on a CUDA stream the
current one does not wait for) is invisible to a timer on the current stream.  The worker copies each
output the moment the forward returns (the copy is ordered on the current stream) and compares the copy
with the output once everything has finished, and it lists Python threads and child processes alive
after each call that were not there before the import (`core/worker/probes.py`).  On a GPU the
worker stalls every stream other than the caller's for ~50 ms before the forward's first launch there
(`core/worker/launches.py`), so unjoined stream work is usually still pending when the copy is taken;
and since every stream of a context may share one hardware queue (`device_connections = 1`), where the copy
waits behind that stall too, a Triton launch onto any stream other than the caller's is a finding by itself
(the autotuner's own benchmarking excepted).

Its priority (15) puts it before the ghost and mode probes: unfinished work corrupts their outputs too,
and this is the finding that names the cause.
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem


class SideWorkCheck(RuntimeCheck):
    """No thread, process or unjoined stream of the candidate is still working when forward returns."""

    name = "side_work"
    priority = 15
    explains_incorrect = True

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        if evidence.side_work:
            first = evidence.side_work[0]
            more = f" (and {len(evidence.side_work) - 1} more findings)" if len(evidence.side_work) > 1 else ""
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason=f"{first}{more}: work done after forward returns escapes timing; launch every kernel on the "
                "current stream from the calling thread and start no threads or processes",
            )
        return CheckVerdict(name=self.name, passed=True, stage="runtime", reason="no work outlived the forward")


@hookimpl
def register_checks(register):
    register(SideWorkCheck)
