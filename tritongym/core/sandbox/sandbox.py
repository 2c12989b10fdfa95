"""Run a `WorkerTask` in a fresh, locked-down worker process and bring back its `Evidence`.

The candidate is hostile until proven otherwise, so it never runs in the process that owns the registry:

* a new process (its own session, so the whole group can be killed) running `tritongym.core.worker.task_runner`;
* a hard wall-clock timeout, after which the group is SIGKILLed and the result is `timeout`;
* resource limits set by the worker on itself before it reads any candidate code (address space, CPU
  time, file size, no core dumps); see `tritongym.core.worker.stages.apply_limits`;
* a private temporary working directory, removed afterwards, that is also HOME and TMPDIR; it is named after
  the process that made it and recorded (`owned.py`), so one whose process was killed (`kill -9` skips every
  `finally`) is removed by the next tritongym process that starts a sandbox;
* the worker dies with the process that started it (`worker/lifeline.py`), and is recorded with that process's
  pid and start, so a clean-up elsewhere kills it only once that process is dead;
* a stripped environment: only what Python and Triton need, never the registry path or credentials;
* the result travels on the worker's original stdout as one line tagged with a per-task nonce the
  candidate never sees; the candidate's own stdout/stderr go to a capped log file whose tail is kept.

Anything else (no result line, a signal of its own, garbage) is the candidate's `crashed`, never the caller's
error.  A worker killed by a signal its limits did not send (SIGKILL, SIGTERM, SIGINT, SIGHUP: another process,
the OOM killer) is not the candidate's doing: it runs once more, and a second such death is an infrastructure
failure (stage `setup`: the backend's error, never stored as the candidate's verdict).

With `zygote=True` the worker is forked from a fork server that has imported torch and Triton once
(`task_zygote.py`) instead of started as a fresh interpreter: the same process, limits, folder, environment,
streams and timeout, without a fresh interpreter's ~2.4 s of imports.  Where no zygote can fork it, a fresh
interpreter runs the task.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import ValidationError

from tritongym.core.models import ErrorInfo, Evidence
from tritongym.core.sandbox import owned, task_zygote
from tritongym.core.sandbox.fork_server import worker_env
from tritongym.core.worker.stages import exit_text, killed_from_outside
from tritongym.core.worker_task import SandboxLimits, WorkerTask

RESULT_TAG = "TRITONGYM-RESULT"


_DIR = re.compile(r"tritongym-(\d+)-[a-z0-9_-]+")
_swept = False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def sweep_orphans(root: str | None = None) -> list[str]:
    """Remove the working directories of sandboxes whose tritongym process is gone (killed before its
    `finally` ran); returns those removed.  Only this user's, only names this module makes."""
    removed = []
    try:
        entries = list(os.scandir(root or tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        match = _DIR.fullmatch(entry.name)
        try:
            if not match or not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if not _alive(int(match[1])):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def sweep_once() -> None:
    """Before this process's first sandbox (or GPU pool): remove what dead tritongym processes of this user left
    (`owned.sweep`, then `sweep_orphans` for a folder made in the instant before its record); once per process."""
    global _swept
    if not _swept:
        _swept = True
        owned.sweep()
        sweep_orphans()


def _sandbox_dir() -> str:
    sweep_once()
    return owned.make_folder("sandbox")


def log_tail(path: str | Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _crash(kind: str, message: str, log: str, elapsed: float) -> Evidence:
    return Evidence(stage="run", error=ErrorInfo(kind=kind, message=message), stdout_tail=log, worker_s=elapsed)


def run_in_sandbox(
    task: WorkerTask, limits: SandboxLimits, extra_env: dict[str, str] | None = None, zygote: bool = False
) -> Evidence:
    """Run `task` in a new worker; always returns Evidence (errors included), never raises for the candidate.  A
    worker killed from outside runs once more; killed from outside again, it is an infrastructure failure.

    `zygote`: fork the worker from this process's fork server for `extra_env` (started on first use, or by
    `warm_zygote`) rather than start a fresh interpreter; for a caller whose `extra_env` is fixed."""
    evidence, foreign = _attempt(task, limits, extra_env, zygote)
    if not foreign:
        return evidence
    first = evidence.error.message if evidence.error else ""
    evidence, foreign = _attempt(task, limits, extra_env, zygote)
    if foreign:
        evidence.stage = "setup"  # the backend's error, never a verdict (`Evaluator._judge`)
        evidence.error = ErrorInfo(
            kind="InfrastructureFailure",
            message=f"{first}, and again on a retry, by nothing of its own limits (no time or memory limit was "
            "reached): another process or the system's OOM killer killed it; not a verdict on the candidate",
        )
    return evidence


def _zygote(extra_env: dict[str, str]) -> task_zygote.TaskZygote:
    """This process's fork server for workers in `extra_env`: the environment a worker is started with is its key."""
    return task_zygote.shared(
        tuple(sorted(worker_env("", extra_env).items())), lambda folder: worker_env(folder, extra_env)
    )


def warm_zygote(extra_env: dict[str, str] | None = None) -> None:
    """Start the fork server `run_in_sandbox(..., zygote=True)` uses for `extra_env`, without waiting for it."""
    _zygote(extra_env or {})


def _attempt(
    task: WorkerTask, limits: SandboxLimits, extra_env: dict[str, str] | None, zygote: bool = False
) -> tuple[Evidence, bool]:
    """One run in a fresh worker: the Evidence, and whether it was killed from outside (`killed_from_outside`)."""
    tmp = _sandbox_dir()
    nonce = secrets.token_hex(16)
    payload = task.model_copy(
        update={
            "nonce": nonce,
            "memory_mb": limits.memory_mb,
            "cpu_s": int(limits.timeout_s * 2 + 30),
            "file_mb": limits.file_mb,
        }
    ).model_dump_json()
    log_path = Path(tmp) / "worker.log"
    start = time.monotonic()
    try:
        request = {"cwd": tmp, "env": worker_env(tmp, extra_env or {}), "log": str(log_path)}
        proc = _zygote(extra_env or {}).fork(request) if zygote else None
        if proc is not None:
            start = time.monotonic()  # the zygote's own start, waited for once, is not the worker's time
        else:
            proc = subprocess.Popen(
                [sys.executable, "-s", "-m", "tritongym.core.worker", str(log_path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=tmp,
                env=request["env"],
                start_new_session=True,
                close_fds=True,
                pass_fds=(owned.lifeline_fd(),),
            )
        owned.started(proc.pid, "sandbox")
        try:
            out, _ = proc.communicate(payload.encode(), timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return _crash(
                "Timeout",
                f"the candidate did not finish within the time limit of {limits.timeout_s:g} s and was killed",
                log_tail(log_path),
                time.monotonic() - start,
            ), False
        finally:
            # children the candidate may have left behind die with the group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            owned.ended(proc.pid)
        elapsed = time.monotonic() - start
        log = log_tail(log_path)
        evidence = _parse_result(out, nonce, proc.returncode, log, elapsed, limits)
        # the worker itself, or the candidate's process inside it (the worker reports that one's death)
        foreign = evidence.error is not None and evidence.error.kind == "WorkerCrashed"
        return evidence, foreign and killed_from_outside(evidence.error.message)
    finally:
        owned.remove_folder(tmp)


def _parse_result(out: bytes, nonce: str, returncode: int, log: str, elapsed: float, limits: SandboxLimits) -> Evidence:
    prefix = f"{RESULT_TAG} {nonce} ".encode()
    for line in reversed(out.splitlines()):
        if line.startswith(prefix):
            try:
                evidence = Evidence.model_validate(json.loads(line[len(prefix) :]))
            except (ValueError, ValidationError) as exc:
                return _crash(
                    "WorkerCrashed", f"the worker's result was malformed ({exc.__class__.__name__})", log, elapsed
                )
            evidence.stdout_tail = log
            evidence.worker_s = elapsed
            return evidence
    why = exit_text("the worker", returncode)
    if returncode >= 0:
        if "MemoryError" in log or "can't allocate memory" in log:
            why += f" (memory limit of {limits.memory_mb} MiB exceeded)"
    return _crash("WorkerCrashed", why, log, elapsed)
