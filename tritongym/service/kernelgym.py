"""KernelGYM's endpoints, as its server answers them: `GET /health`, `POST /evaluate`, `GET /status/{task_id}`,
`GET /results/{task_id}`.

A trainer written against KernelGYM's server (Dr. Kernel's reward client) points its `server_url` here and
keeps working; `tests/test_kernelgym_client.py` runs that client, unmodified, against `tritongym serve`.  The
fields are those of hkust-nlp/KernelGYM at commit 3a84417f (read from `shared/kernelgym/`):

- `kernelgym/server/api/models.py`: `EvaluationRequest` (what `/evaluate` takes; the fields not listed in
  `KernelGymRequest` are accepted and ignored), `EvaluationResponse` (what `/evaluate` and `/results` return),
  `TaskStatusResponse` (`/status`) and `SystemHealthResponse` (`/health`: `"status": "healthy"`, which
  Dr. Kernel's `main_kernel._check_kernel_server_health` requires before training starts);
- `kernelgym/server/api/server.py`: `/evaluate` answers once the evaluation has finished, with the result
  (the client then polls `/status` and reads `/results` all the same); a task id the server already holds a
  result for returns that result unless `force_refresh`; `/results` of a task with no result yet is 404;
- `kernelgym/workflow/kernelbench.py`: a kernel that does not compile or is wrong is a `completed` task with
  `speedup` 0.0 and `reference_runtime` -1.0; a kernel task that times out or whose worker dies is a `failed`
  task (`kernelgym/worker/gpu_worker.py` raises, the workflow's `_failed_result`); `status` is only ever
  `completed` or `failed` in an `EvaluationResponse` (`server._result_status`).

How tritongym fills them:

- `backend`: KernelGYM's names (`triton`, `cuda`) and `auto` all mean "judge this candidate on the service's
  own backend" (triton-cpu or triton-cuda); `metadata.backend` says which.  The candidate must define class
  `ModelNew` and the reference class `Model` (`entry_point` "Model"), as in KernelBench.
- `num_correct_trials` (1..20, KernelGYM's bounds) is the number of correctness trials; `timeout` (seconds)
  is the candidate's time limit, capped at the service's `--timeout` (under `--ray` the service's limit
  stays in force: Ray actors are set up with it).  `num_perf_trials` has no counterpart (tritongym times
  until its own stopping rule) and is reported back, not applied.  What was applied is under
  `metadata.tritongym.applied`, what was asked under `metadata.tritongym.requested`.  A different trial count
  is a different protocol: its verdicts are cached apart from the service's default ones.
- `decoy_kernel` is set for every hack a check caught (tritongym's checks go beyond KernelGYM's decoy test)
  and for a source the static policy rejected.
- A candidate killed at the time limit or whose sandbox died is a `failed` task (`error_code`
  TIMEOUT_ERROR or RUNTIME_ERROR), as KernelGYM reports it; a task no verdict could be reached for is
  `failed` with SYSTEM_ERROR.
- Requests that fail validation get HTTP 422 (KernelGYM: 400); its client treats both as a failed task.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tritongym.core.models import EvaluationResult, Status
from tritongym.service.protocol import TASK_ID_PATTERN, Health, TaskState, TaskView, utf8_text

KERNELGYM_BACKENDS = ("triton", "cuda", "auto")  # KernelGYM's `Backend` enum, and "auto"
MAX_CORRECT_TRIALS = 20  # KernelGYM's own bound on num_correct_trials


class KernelGymRequest(BaseModel):
    """KernelGYM's `EvaluationRequest`: the fields its RL client sends; other fields are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    task_id: str = Field(pattern=TASK_ID_PATTERN)
    reference_code: str = Field(min_length=1)
    kernel_code: str
    backend: str = "triton"
    entry_point: str = "Model"
    num_correct_trials: int | None = Field(default=None, ge=1, le=MAX_CORRECT_TRIALS)
    num_perf_trials: int | None = Field(default=None, ge=1, le=1000)
    timeout: float | None = Field(default=None, gt=0, le=3600, allow_inf_nan=False)
    priority: str = "normal"
    is_valid: bool | None = None
    verbose_errors: bool | None = True
    enable_profiling: bool | None = None
    detect_decoy_kernel: bool | None = None
    reference_backend: str | None = None
    use_reference_cache: bool = False
    uuid: str | None = None
    force_refresh: bool = False

    @model_validator(mode="after")
    def _utf8(self) -> KernelGymRequest:
        utf8_text(self)
        return self

    def problem_name(self) -> str | None:
        """KernelGYM names a reference by `uuid` (its reference-cache key); tritongym stores it under that name."""
        return f"kernelgym/{self.uuid}" if self.uuid else None

    def echoed(self) -> dict:
        """What is stored with the task and reported back: the request's settings, as sent."""
        return {
            "requested": self.model_dump(
                include={
                    "backend",
                    "num_correct_trials",
                    "num_perf_trials",
                    "timeout",
                    "priority",
                    "reference_backend",
                    "enable_profiling",
                    "detect_decoy_kernel",
                    "is_valid",
                },
                exclude_none=True,
            ),
            "verbose_errors": self.verbose_errors is not False,
        }


def refusal(request: KernelGymRequest) -> str | None:
    """Why this request cannot be judged here (HTTP 422), or None."""
    if request.backend.lower() not in KERNELGYM_BACKENDS:
        return (
            f"backend '{request.backend}' is not one of KernelGYM's ({', '.join(KERNELGYM_BACKENDS)}); every "
            "candidate is judged on the service's own backend, so send 'triton'"
        )
    if request.entry_point != "Model":
        return (
            f"entry_point '{request.entry_point}' is not served: the reference must define class Model and the "
            "candidate class ModelNew"
        )
    return None


# --- what a task looks like to KernelGYM's client --------------------------------------------------------

_FAILED = (Status.timeout, Status.crashed)  # KernelGYM's worker raises for these: the task fails
_ERROR_CODES = {
    Status.rejected: "VALIDATION_ERROR",
    Status.compile_error: "COMPILATION_ERROR",
    Status.runtime_error: "RUNTIME_ERROR",
    Status.incorrect: "CORRECTNESS_ERROR",
    Status.timeout: "TIMEOUT_ERROR",
    Status.crashed: "RUNTIME_ERROR",
}


def status_of(view: TaskView) -> str:
    """KernelGYM's TaskStatus value for a task."""
    if view.state == TaskState.queued:
        return "pending"
    if view.state == TaskState.running:
        return "processing"
    if view.state == TaskState.failed or (view.result is not None and view.result.status in _FAILED):
        return "failed"
    return "completed"


def status_response(view: TaskView) -> dict:
    """KernelGYM's `TaskStatusResponse`, and the `error_message` Dr. Kernel's client reads from it."""
    state = status_of(view)
    return {
        "task_id": view.id,
        "status": state,
        "progress": 100.0 if view.finished else 0.0,
        "estimated_completion": None,
        "queue_position": view.position,
        "assigned_device": view.result.device if view.result is not None else None,
        "error_message": _error_message(view, verbose=True) if state == "failed" else None,
    }


def _error_message(view: TaskView, verbose: bool) -> str | None:
    if view.state == TaskState.failed:
        return view.error or "the service could not evaluate this task"
    result = view.result
    if result is None or result.status == Status.ok:
        return None
    if verbose and result.error is not None and result.error.traceback:
        return f"{result.message}\n{result.error.traceback}"
    return result.message


def _coverage(result: EvaluationResult) -> dict:
    """KernelGYM's profiling coverage fields from the profile (GPU backends; zero where nothing was profiled)."""
    own = [p for p in result.profile if p.own]
    return {
        "num_custom_kernels": len(own),
        "num_total_kernels": len(result.profile),
        "custom_kernel_cuda_time_in_profiling_us": sum(p.device_ms for p in own) * 1e3,
        "total_kernel_run_time_in_profiling_us": sum(p.device_ms for p in result.profile) * 1e3,
    }


def evaluation_response(view: TaskView, request: dict) -> dict:
    """KernelGYM's `EvaluationResponse` for a task; an unfinished one (pending, processing) carries no verdict."""
    result = view.result
    state = status_of(view)
    response = {
        "task_id": view.id,
        "status": state,
        "compiled": None,
        "correctness": None,
        "decoy_kernel": None,
        "reference_runtime": None,
        "kernel_runtime": None,
        "speedup": None,
        "metadata": None,
        "error_message": _error_message(view, verbose=request.get("verbose_errors", True)),
        "error_code": None,
        "submitted_at": view.submitted_at,
        "completed_at": view.finished_at,
        "processing_time": result.duration_s if result is not None else None,
    }
    mine = {"state": view.state.value, "requested": request.get("requested", {}), "applied": request.get("applied", {})}
    if not view.finished:
        return response
    if result is None:  # failed: no verdict (KernelGYM's `_failed_result`)
        response.update(
            compiled=False,
            correctness=False,
            decoy_kernel=False,
            reference_runtime=-1.0,
            kernel_runtime=-1.0,
            speedup=0.0,
            error_code="SYSTEM_ERROR",
            metadata={"error": response["error_message"], "tritongym": mine},
        )
        return response
    correct = bool(result.correct) and result.status == Status.ok
    timed = correct and result.speedup is not None
    response.update(
        compiled=result.status not in (Status.compile_error, Status.rejected, *_FAILED),
        correctness=correct,
        decoy_kernel=result.hacked or result.status == Status.rejected,
        reference_runtime=result.ref_runtime_ms if timed else -1.0,
        kernel_runtime=result.runtime_ms if result.runtime_ms is not None else -1.0,
        speedup=result.speedup if timed else 0.0,
        error_code=_ERROR_CODES.get(result.status),
        metadata={
            **_coverage(result),
            "device": result.device,
            "backend": result.backend,
            "tritongym": {
                **mine,
                "status": result.status.value,
                "message": result.message,
                "kernel_id": result.kernel_id,
                "evaluation_id": result.evaluation_id,
                "problem": view.problem,
                "protocol": result.protocol,
                "trials": result.trials,
                "reward": result.reward.total,
                "pr": result.pr,
                "cached": result.cached,
                "failed_checks": [c.name for c in result.checks if not c.passed],
            },
        },
    )
    return response


# --- /health -----------------------------------------------------------------------------------------------


def _memory() -> dict:
    """The host's memory and load, as KernelGYM's `memory_usage` reports them (from sysconf, not psutil)."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total, free = os.sysconf("SC_PHYS_PAGES") * page, os.sysconf("SC_AVPHYS_PAGES") * page
        load = os.getloadavg()[0]
    except (ValueError, OSError, AttributeError):  # not Linux: leave them out rather than guess
        return {}
    return {
        "load_1m": round(load, 2),
        "memory_percent": round(100.0 * (total - free) / total, 1) if total else 0.0,
        "memory_available": f"{free / (1 << 30):.1f}GB",
        "memory_total": f"{total / (1 << 30):.1f}GB",
    }


def health_fields(health: Health, finished: int, busy: dict[str, float]) -> dict:
    """KernelGYM's `SystemHealthResponse` fields, to go beside the service's own in `Health`."""
    return {
        "timestamp": datetime.now(timezone.utc).replace(tzinfo=None).isoformat() + "Z",
        "gpu_status": {
            device: {"backend": health.backend, "busy_seconds": round(seconds, 3)} for device, seconds in busy.items()
        }
        or {health.device: {"backend": health.backend, "busy_seconds": 0.0}},
        "queue_status": {"pending": health.queued, "processing": health.running, "completed": finished},
        "memory_usage": _memory(),
        "active_tasks": health.queued + health.running,
        "total_processed": finished,
        "uptime": health.uptime_s,
    }
