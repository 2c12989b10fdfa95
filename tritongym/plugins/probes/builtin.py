"""The built-in probes, registered through `register_probes` as a third party registers its own.

Their calls are hard-wired in the worker (`core/worker/probes.py`, which says what each one calls and why), since
they share the trial inputs, the launch recorder's switches and the trusted comparison of whole outputs; what runs
is decided here as for any probe: a probe runs only while an enabled check lists its name in `RuntimeCheck.probes`
(the KernelBench sweep with `ghost` skipped still paid for a ghost call and its reference's forward before).
"""

from __future__ import annotations

from tritongym import hookimpl
from tritongym.core.interfaces import Probe


class ModesProbe(Probe):
    """The forward under grad mode and in eval() mode on trial inputs (`mode:grad+train`, `mode:no_grad+eval`,
    `mode:grad+eval`), each against the reference called alike."""

    name = "modes"
    builtin = True


class RefreshProbe(Probe):
    """The forward on the last trial's very input buffers, refilled in place with trial 0's values."""

    name = "refresh"
    builtin = True


class RepeatProbe(Probe):
    """The `refresh` call made again on the same buffers, compared with the reference."""

    name = "repeat"
    builtin = True


class GhostProbe(Probe):
    """The forward on inputs no other call saw, every launch of the candidate's own Triton kernels skipped."""

    name = "ghost"
    builtin = True


class PrecomputedProbe(Probe):
    """The forward on this task's own fresh inputs, sampling before each own launch what its arguments already
    held (`PriorAnswerWatch`); the trusted side's findings are the call's `findings`."""

    name = "precomputed"
    builtin = True


class DegenerateProbe(Probe):
    """On a problem a negative control passes, the forward on inputs transformed so that the control's answer is
    wrong (`degenerate:<control>`), against the reference's answer and the control's."""

    name = "degenerate"
    builtin = True


@hookimpl
def register_probes(register):
    for probe in (ModesProbe, RefreshProbe, RepeatProbe, GhostProbe, PrecomputedProbe, DegenerateProbe):
        register(probe)
