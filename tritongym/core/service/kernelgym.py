"""KernelGYM-compatible endpoints: `POST /evaluate`, `GET /status/{task_id}`, `GET /results/{task_id}`.

A trainer written against KernelGYM's server points its `server_url` here and keeps working.  The field
names are KernelGYM's, copied from:

- hkust-nlp/KernelGYM `drkernel/kernel/rewards/reward_client.py` (the RL client of the Dr. Kernel
  release): the payload it POSTs to `/evaluate` (task_id, reference_code, kernel_code, backend,
  num_correct_trials, num_perf_trials, timeout, priority, entry_point, is_valid, verbose_errors,
  enable_profiling, detect_decoy_kernel, reference_backend, and use_reference_cache/uuid), the statuses
  it polls `/status/{task_id}` for (completed, failed, timeout, cancelled; it reads `status` and
  `error_message`), and what it reads from `/results/{task_id}`: correctness, speedup, compiled,
  decoy_kernel, error_message/error, and the profiling coverage fields num_custom_kernels,
  num_total_kernels, custom_kernel_cuda_time_in_profiling_us and total_kernel_run_time_in_profiling_us
  (under `metadata`, or at the top level);
- the server's `kernelgym/server/api/models.py` and `server.py` (as in the public forks
  slchenchn/KernelGYM and L-hongbin/KernelGYM): `EvaluationRequest` (more fields, all optional),
  `EvaluationResponse` (task_id, status, compiled, correctness, decoy_kernel, reference_runtime,
  kernel_runtime, speedup, metadata, error_message, error_code, submitted_at, completed_at,
  processing_time) and `TaskStatusResponse` (task_id, status, progress, estimated_completion,
  queue_position, assigned_device, error_message);
- hkust-nlp/KernelGYM `kernelgym/server/task_manager.py`: a task is stored with status `pending`
  (`TaskStatus.PENDING`, also its default when unset) and set to `TaskStatus.PROCESSING` when a worker takes
  it, then `completed` or `failed`; we answer `pending` and `processing` for those two states (the
  PROCESSING value itself is in `kernelgym.common`, which no public copy we read holds).

What differs, on purpose: the service's configuration fixes the evaluation protocol (trials, time limit,
checks), so the per-request num_correct_trials, num_perf_trials and timeout are accepted and reported
back under `metadata.tritongym.requested` but not applied; a request naming a task id the service already
has returns that task (KernelGYM's rule) unless `force_refresh` is set and the task has finished.  Only
Triton kernels are judged (`backend` "triton" or "auto"), against a reference class named `Model`.
A candidate's verdict is a `completed` task whatever it is (correct or not, as KernelGYM reports a kernel
that fails to compile); a candidate killed at the time limit is a `timeout` task; `failed` means no
verdict could be reached.  `decoy_kernel` is set for every hack a check caught (tritongym's checks go
beyond KernelGYM's decoy test) and for a source the static policy rejected.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tritongym.core.models import Status
from tritongym.core.service.protocol import TASK_ID_PATTERN, TaskState, TaskView


class KernelGymRequest(BaseModel):
    """KernelGYM's `EvaluationRequest`: the fields its RL client sends; other fields are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")

    task_id: str = Field(pattern=TASK_ID_PATTERN)
    reference_code: str = Field(min_length=1)
    kernel_code: str
    backend: str = "triton"
    entry_point: str = "Model"
    num_correct_trials: int | None = None
    num_perf_trials: int | None = None
    timeout: int | None = None
    priority: str = "normal"
    is_valid: bool | None = None
    verbose_errors: bool | None = True
    enable_profiling: bool | None = None
    detect_decoy_kernel: bool | None = None
    reference_backend: str | None = None
    use_reference_cache: bool = False
    uuid: str | None = None
    force_refresh: bool = False

    def problem_name(self) -> str | None:
        """KernelGYM names a reference by `uuid` (its reference-cache key); tritongym stores it under that name."""
        return f"kernelgym/{self.uuid}" if self.uuid else None

    def echoed(self) -> dict:
        """What is stored with the task and reported back: the request's settings the service did not apply."""
        return {
            "requested": self.model_dump(
                include={
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


ACCEPTED_BACKENDS = ("triton", "auto")


def refusal(request: KernelGymRequest) -> str | None:
    """Why this request cannot be judged here (HTTP 422), or None."""
    if request.backend.lower() not in ACCEPTED_BACKENDS:
        return (
            f"backend '{request.backend}' is not served: tritongym judges Triton kernels "
            f"(send backend 'triton'); CUDA C and other kernels need KernelGYM's own workers"
        )
    if request.entry_point != "Model":
        return (
            f"entry_point '{request.entry_point}' is not served: the reference must define class Model and the "
            "candidate class ModelNew"
        )
    return None


def status_of(view: TaskView) -> str:
    """KernelGYM's TaskStatus value for a task."""
    if view.state == TaskState.queued:
        return "pending"
    if view.state == TaskState.running:
        return "processing"
    if view.state == TaskState.failed:
        return "failed"
    if view.result is not None and view.result.status == Status.timeout:
        return "timeout"
    return "completed"


def status_response(view: TaskView) -> dict:
    """KernelGYM's `TaskStatusResponse`."""
    state = status_of(view)
    return {
        "task_id": view.id,
        "status": state,
        "progress": 100.0 if view.finished else 0.0,
        "estimated_completion": None,
        "queue_position": view.position,
        "assigned_device": view.result.device if view.result is not None else None,
        "error_message": _error_message(view, verbose=True) if state != "completed" else None,
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


def _coverage(view: TaskView) -> dict:
    """KernelGYM's profiling coverage fields from the profile (GPU backends; zero where nothing was profiled)."""
    profile = view.result.profile if view.result is not None else []
    own = [p for p in profile if p.own]
    return {
        "num_custom_kernels": len(own),
        "num_total_kernels": len(profile),
        "custom_kernel_cuda_time_in_profiling_us": sum(p.device_ms for p in own) * 1e3,
        "total_kernel_run_time_in_profiling_us": sum(p.device_ms for p in profile) * 1e3,
    }


def evaluation_response(view: TaskView, request: dict) -> dict:
    """KernelGYM's `EvaluationResponse` for a task (finished or not: unfinished ones carry no verdict yet)."""
    result = view.result
    response = {
        "task_id": view.id,
        "status": status_of(view),
        "compiled": None,
        "correctness": None,
        "decoy_kernel": None,
        "reference_runtime": None,
        "kernel_runtime": None,
        "speedup": None,
        "memory": None,
        "metadata": None,
        "error_message": _error_message(view, verbose=request.get("verbose_errors", True)),
        "error_code": None,
        "submitted_at": view.submitted_at,
        "completed_at": view.finished_at,
        "processing_time": result.duration_s if result is not None else None,
    }
    if result is None:
        if view.finished:
            response["metadata"] = {"tritongym": {"state": view.state.value, "requested": request.get("requested", {})}}
        return response
    response.update(
        compiled=result.status not in (Status.compile_error, Status.rejected),
        correctness=result.correct,
        decoy_kernel=result.hacked or result.status == Status.rejected,
        reference_runtime=result.ref_runtime_ms,
        kernel_runtime=result.runtime_ms,
        speedup=result.speedup,
        metadata={
            **_coverage(view),
            "device": result.device,
            "backend": result.backend,
            "tritongym": {
                "status": result.status.value,
                "message": result.message,
                "kernel_id": result.kernel_id,
                "evaluation_id": result.evaluation_id,
                "problem": view.problem,
                "protocol": result.protocol,
                "reward": result.reward.total,
                "pr": result.pr,
                "cached": result.cached,
                "failed_checks": [c.name for c in result.checks if not c.passed],
                "requested": request.get("requested", {}),
            },
        },
    )
    return response
