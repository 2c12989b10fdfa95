"""How the worker's stages fail: the exception a stage raises, how an error reads to the model, the limits.

Shared by the task runner, the candidate's child process and the GPU worker; imports only the kernel and
the standard library, so every worker module may import it (it sits below them all).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sys
import traceback
from pathlib import Path
from types import ModuleType

from tritongym.core.models import ErrorInfo, Evidence
from tritongym.core.worker_task import WorkerTask

_HARNESS_DIR = str(Path(__file__).resolve().parents[2]) + os.sep  # the tritongym package: none of its frames


class StageError(Exception):
    def __init__(self, stage: str, info: ErrorInfo) -> None:
        super().__init__(info.message)
        self.stage, self.info = stage, info


def apply_limits(task: WorkerTask) -> None:
    import resource
    import signal

    def cap(which: int, value: int) -> None:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_FSIZE, task.file_mb << 20)
    if task.cpu_s:
        cap(resource.RLIMIT_CPU, task.cpu_s)
    if task.memory_mb:
        cap(resource.RLIMIT_AS, task.memory_mb << 20)
    # an over-long write fails with EFBIG instead of killing the worker without a result
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def error_info(exc: BaseException, filename: str | None = None) -> ErrorInfo:
    """The exception as a model should see it: type, message, the traceback from the candidate's frames."""
    line = None
    if isinstance(exc, SyntaxError) and (filename is None or exc.filename == filename):
        line = exc.lineno
    tb_entries = traceback.extract_tb(exc.__traceback__)
    if filename is not None:
        own = [i for i, fr in enumerate(tb_entries) if fr.filename == filename]
        if own:
            line = line or tb_entries[own[-1]].lineno
            tb_entries = tb_entries[own[0] :]
    # our own harness frames (launch recording) mean nothing to whoever fixes the kernel
    tb_entries = [fr for fr in tb_entries if not fr.filename.startswith(_HARNESS_DIR)]
    text = "".join(traceback.format_list(tb_entries)) + "".join(traceback.format_exception_only(type(exc), exc))
    message = str(exc).strip() or type(exc).__name__
    return ErrorInfo(kind=type(exc).__name__, message=message[:2000], traceback=text[-6000:], line=line)


@contextlib.contextmanager
def failures_recorded(evidence: Evidence):
    """Whatever the stage raises (a candidate can raise SystemExit or anything else) becomes the evidence's
    error; the worker always goes on to report."""
    try:
        yield
    except StageError as exc:
        evidence.stage, evidence.error = exc.stage, exc.info
    except MemoryError as exc:
        evidence.error = ErrorInfo(kind="MemoryLimit", message=f"memory limit exceeded: {exc}")
    except BaseException as exc:  # noqa: BLE001
        evidence.error = error_info(exc)


def load_module(name: str, path: str, source: str) -> ModuleType:
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py path always has a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_SIGNAL_HINTS = {
    "SIGSEGV": " (segmentation fault)",
    "SIGXCPU": " (CPU time limit exceeded)",
    "SIGKILL": " (killed, e.g. out of memory)",
}


# signals no limit of a worker sends: another process's, or the OOM killer's (SIGXCPU, SIGSEGV, SIGABRT are its own)
FOREIGN_SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP")


def killed_from_outside(message: str) -> bool:
    """Whether `exit_text` said a process (the worker, or the candidate's process inside it) was killed by a
    signal from outside (`FOREIGN_SIGNALS`): the sandbox runs such a task again instead of judging it."""
    return any(f" was killed by {name}" in message for name in FOREIGN_SIGNALS)


def exit_text(who: str, returncode: int) -> str:
    """How a process that sent no result ended, in words (`returncode` as subprocess gives it)."""
    if returncode < 0:
        sig = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        return f"{who} was killed by {sig}{_SIGNAL_HINTS.get(sig, '')}"
    return f"{who} exited with code {returncode} before reporting a result"


def enter_pool_process(log_path: str) -> None:
    """What a GPU pool's worker or keeper does first in `serve`: hold the lifeline (it dies with the pool's process:
    started by it, or forked by its zygote, whose lifeline thread a fork does not copy), write its output to its log,
    and take the sandbox's limits (no address-space limit: CUDA's virtual reservations need it; RSS is watched)."""
    from tritongym.core.worker import lifeline
    from tritongym.core.worker_task import WorkerTask

    lifeline.hold()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    apply_limits(WorkerTask(problem_name="", problem_source="", file_mb=int(os.environ.get("TRITONGYM_FILE_MB", "64"))))
