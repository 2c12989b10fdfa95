"""User-facing errors.

Everything a user can fix (a missing problem, a bad config file, a broken plugin) raises a subclass of
`TritonGymError`; the CLI turns it into one line and an exit code.  Anything else is a bug in tritongym
and keeps its traceback.  A candidate kernel failing is *not* an error: it is an evaluation result.
"""

from __future__ import annotations


class TritonGymError(Exception):
    """Base class of errors the user can act on; `exit_code` is what the CLI exits with."""

    exit_code = 2


class ConfigError(TritonGymError):
    """A config file, option or plugin option failed validation."""


class ProblemNotFound(TritonGymError):
    """A problem name or path did not resolve to a problem."""


class ProblemFormatError(TritonGymError):
    """A problem source is not in KernelBench format (Model, get_inputs, get_init_inputs), or its reference failed.

    `phases` (seconds) and `memory_mb` (the keeper's memory, the reference's peak): what the evaluation measured
    before the reference failed, so a caller such as `benchmarks/kernelbench_sweep.py` can say what was held when it
    did."""

    def __init__(
        self, message: str = "", phases: dict[str, float] | None = None, memory_mb: dict[str, float] | None = None
    ) -> None:
        super().__init__(message)
        self.phases = dict(phases or {})
        self.memory_mb = dict(memory_mb or {})


class CheckUnavailable(TritonGymError):
    """A check could not run for reasons that are not the candidate's (its judge unreachable, a probe it reads
    missing).  Raised from `RuntimeCheck.judge`: the evaluation is then unjudged for that check, says so, and
    is never stored or cached; a verdict is never made of an infrastructure failure."""


class CandidateFileError(TritonGymError):
    """The candidate file could not be read (missing, not text, too large)."""


class NoKernelStored(TritonGymError):
    """The registry holds no honest, correct kernel for a problem where one is needed (`tritongym tune`)."""

    exit_code = 1


class PluginError(TritonGymError):
    """A plugin failed to load or registered something invalid; the message names the plugin."""


class UnknownPluginObject(TritonGymError):
    """A config or option named a backend/check/reward/... that no plugin registered."""


class BackendUnavailable(TritonGymError):
    """The chosen backend cannot run on this machine (e.g. `triton-cuda` without a GPU)."""

    exit_code = 3


class NoRegistry(TritonGymError):
    """A command that only reads the registry was pointed at a path with none (nothing stored there yet)."""

    exit_code = 1


class RegistryError(TritonGymError):
    """registry.db could not be opened, migrated, read or written."""

    exit_code = 3


class RegistryNotStored(RegistryError):
    """The work finished but the registry could not keep it (read-only, locked, damaged, full): `results` are
    the verdicts reached, which the CLI still prints (exit 3) rather than losing an evaluation to a write.
    `reason` is the RegistryError that stopped the first write."""

    def __init__(self, reason: RegistryError, results: list) -> None:
        super().__init__(f"not stored in the registry: {reason}")
        self.reason = reason
        self.results = results


class ServiceError(TritonGymError):
    """The evaluation service (`tritongym serve`) could not be reached or refused a request; `status_code` is
    the HTTP status it answered with (None when it did not answer).  A refusal of the request itself (4xx:
    a bad token, an unknown problem, a malformed candidate) is bad input (exit 2); a service that cannot be
    reached, stays full (429) or failed (5xx) is the environment (exit 3)."""

    exit_code = 3

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        if status_code is not None and 400 <= status_code < 500 and status_code != 429:
            self.exit_code = 2


class NoWarmPool(ServiceError):
    """`--pool require`: no `tritongym serve` running on this machine fits the evaluation (same backend, device
    class, size, protocol key, settings and registry), or the one that did could not judge it; the message says why
    for each one found.  Exit 3, as for a service that cannot be reached."""
