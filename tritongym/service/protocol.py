"""What travels between `tritongym serve` and its clients: the JSON bodies of the native API (`/v1/...`).

One pydantic model per body, shared by the server (which validates what it receives) and `Client` (which
validates what it gets back), so the two cannot drift apart.  The KernelGYM-compatible endpoints have
their own models in `kernelgym.py`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tritongym.core.models import EvaluationResult
from tritongym.core.problems import load_problem, names_a_file

TASK_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,100}$"


class TaskState(str, Enum):
    queued = "queued"  # accepted and stored; waiting for a lane
    running = "running"  # a lane is evaluating it
    done = "done"  # evaluated: `result` holds the verdict, whatever it is (ok, incorrect, crashed, ...)
    failed = "failed"  # no verdict could be reached (the problem's reference failed, a plugin broke): see `error`


FINISHED = (TaskState.done, TaskState.failed)


def utf8_text(model: BaseModel) -> None:
    """Refuse a string field with no UTF-8 form: JSON can carry a lone surrogate (an unpaired \\ud800 escape),
    which nothing downstream (SQLite, the sandbox, the JSON reply) can store or send.  A list's strings too (the
    `ids` of a wait: a lone surrogate there was a 500 that reset the connection)."""
    for name, value in model:
        items = [(name, value)] if isinstance(value, str) else []
        if isinstance(value, list):
            items = [(f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, str)]
        for where, text in items:
            try:
                text.encode()
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"{where} is not valid Unicode text: character {exc.start} is a lone surrogate "
                    f"(U+{ord(text[exc.start]):04X}); send UTF-8 text, with every \\ud800-\\udfff escape paired"
                ) from None


def problem_fields(spec: str) -> dict[str, str]:
    """A problem as `tritongym eval --problem` takes it, as the fields of a `Submission`: a name is sent as
    a name the service serves (`problem`); a .py file or SOURCE#NAME is read here, with `load_problem` (eval's
    own resolver), and its reference travels with the candidate (`problem_source`, `problem_name`), so the
    service needs no copy of the file (a directory here is refused as eval refuses it: pick one with DIR#NAME)."""
    if not names_a_file(spec) and not Path(spec).exists():
        return {"problem": spec}
    problem = load_problem(spec)
    return {"problem_source": problem.source, "problem_name": problem.name}


class Submission(BaseModel):
    """One candidate to evaluate, against a problem the server knows by name or against a reference given here."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="the candidate: Python source defining ModelNew with Triton kernels")
    problem: str | None = Field(
        default=None, description="a problem the server serves (a suite name, or a name from its --problems source)"
    )
    problem_source: str | None = Field(
        default=None, description="or a KernelBench-format reference (Model, get_inputs, get_init_inputs)"
    )
    problem_name: str | None = Field(default=None, max_length=200, description="the name to store problem_source under")
    origin: str = Field(default="", max_length=500, description="where the candidate came from (free text)")
    task_id: str | None = Field(
        default=None,
        pattern=TASK_ID_PATTERN,
        description="an id of your choosing; submitting an id again returns the task it names (safe retries)",
    )

    @model_validator(mode="after")
    def _one_problem(self) -> Submission:
        utf8_text(self)
        if (self.problem is None) == (self.problem_source is None):
            raise ValueError("give either problem (a name the server knows) or problem_source (reference code)")
        if self.problem_name is not None and self.problem_source is None:
            raise ValueError("problem_name names a problem_source; with problem, leave it out")
        return self


class SubmitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    candidates: list[Submission] = Field(min_length=1)


class TaskView(BaseModel):
    """A task as the service reports it: where it is, and its verdict once it has one."""

    id: str
    state: TaskState
    problem: str
    kernel_id: str
    origin: str = ""
    position: int | None = Field(default=None, description="tasks ahead of it in the queue (queued tasks only)")
    attempts: int = 0
    submitted_at: str
    started_at: str | None = None
    finished_at: str | None = None
    result: EvaluationResult | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


class SubmitResponse(BaseModel):
    tasks: list[TaskView]


class WaitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(min_length=1)
    timeout_s: float = Field(default=30.0, ge=0, le=300, allow_inf_nan=False)

    @model_validator(mode="after")
    def _utf8(self) -> WaitRequest:
        utf8_text(self)
        return self


class WaitResponse(BaseModel):
    """The tasks asked for; `done` is True when every one of them has finished."""

    done: bool
    tasks: list[TaskView]


class Health(BaseModel):
    """`GET /health`: the service's own fields, then KernelGYM's (`SystemHealthResponse`), so that KernelGYM's
    clients, which require `"status": "healthy"` before they start, accept this service."""

    status: str = Field(description="'healthy'; 'stopping' (with HTTP 503) while the service drains at shutdown")
    version: str
    backend: str
    device: str
    device_class: str
    size: str
    protocol: str
    lanes: int
    queued: int
    running: int
    capacity: int
    uptime_s: float
    problems: int = Field(description="how many named problems the service serves")
    timestamp: str | None = None
    gpu_status: dict = Field(default_factory=dict, description="busy seconds per device (per Ray actor under --ray)")
    queue_status: dict = Field(default_factory=dict, description="pending, processing, completed (since start)")
    memory_usage: dict = Field(default_factory=dict)
    active_tasks: int = 0
    total_processed: int = 0
    uptime: float = 0.0
