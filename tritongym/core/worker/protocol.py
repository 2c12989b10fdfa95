"""The pool's wire protocol: every frame kind of every channel, with its payload, in one module both sides import.

Three processes talk over `frames.py`'s length-prefixed frames (a four-letter kind, a payload):

- the parent (`sandbox/gpu_pool.py`, `TaskDriver`) and a candidate's worker (`worker/gpu_worker.py`): the worker
  asks for the GPU lock and for handouts, reports its trials and its timing (`FromWorker`); the parent grants,
  lends, and decides (`ToWorker`);
- the parent and a GPU's reference keeper (`keeper/keeper.py`): requests (`KeeperRequest`) answered one at a
  time (`KeeperAnswer`);
- both processes, at their start and end (`Lifecycle`): ready, could not start, exit.

The worker never talks to the keeper: the parent relays.  Every tag is one message, on one channel (the tests
hold the tags unique over all channels and every tag a side receives handled): `HOUT`, `HDAT` and `RCHK` once
named both the worker's ask and the parent's request to the keeper it relays.  Structured JSON payloads have a
model here; tensor payloads (`torch.save` bytes, read back with `weights_only=True`) are described on their tag.

A payload the keeper must match to a task but that the parent only relays (the worker's tensors: its report,
its outputs' bytes on the CPU) travels as the worker sent it, behind the task's id (`tagged`/`untagged`): the
parent does not decode and re-encode what it only passes on.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from tritongym.core.models import ErrorInfo
from tritongym.core.worker_task import WorkerTask


class Lifecycle(StrEnum):
    """A worker's or a keeper's start and end (either process, to or from the parent)."""

    READY = "REDY"  # process -> parent: warmed up; JSON `ready_info` (device, memory, start-up seconds)
    START_FAILED = "FAIL"  # process -> parent: could not start; `StartFailure`
    EXIT = "EXIT"  # parent -> process: exit now (no payload)


class FromWorker(StrEnum):
    """What a candidate's worker sends the parent during a task."""

    SHARE = "SHAR"  # take the GPU lock shared (import, correctness trials); answered `GRANTED`
    RESUME = "RSHR"  # take a shared hold given up while compiling back, ahead of waiting timers; `GRANTED`
    LOCK = "LOCK"  # take the GPU lock exclusively (timing); answered `GRANTED`
    UNLOCK = "UNLK"  # give the hold back (no answer); payload `COMPILING` when it is given back to compile
    YIELD = "YILD"  # a sharer steps aside for a waiting timing (`GPULock.step_aside`); answered `GRANTED`
    ASK_HANDOUTS = "HOUT"  # `HandoutAsk`: handouts for a group of outputs; answered `HANDOUTS`
    HANDOUT_BYTES = "HDAT"  # CPU only, tensors {"ids", "values"}: the outputs' values; answered `BYTES_TAKEN`
    CANDIDATE = "CAND"  # tensors: the candidate's report (trials, probes, prior, weights, stage, error)
    CHECK_IN_HOLD = "RCHK"  # inside its exclusive timing hold: the reference's drift check; answered `CHECKED`
    TIMED = "TIMD"  # tensors {"timing", "pr", "profile", "timed"}: the candidate's timing, the timed outputs lent
    DONE = "DONE"  # the task's `Evidence` as JSON: the last frame of a task


COMPILING = b"compile"
"""The payload of the `UNLOCK` a worker sends as it gives its hold back for Triton to compile (`RESUME` follows):
the pool keeps the compile's seconds off the candidate's time budget, up to a cap (`sandbox/compile_clock.py`)."""


class ToWorker(StrEnum):
    """What the parent sends a candidate's worker."""

    TASK = "TASK"  # the `WorkerTask` (`worker_view`) as JSON
    GRANTED = "GRNT"  # the hold asked for is granted (no payload)
    HANDOUTS = "HAND"  # `HandoutsLent`
    BYTES_TAKEN = "HDOK"  # the keeper took the CPU outputs' values (no payload)
    TIME = "TIME"  # every trial matched (`verdict.ready_to_time`): time the candidate
    STOP = "STOP"  # a trial did not match: no timing
    CHECKED = "RCHD"  # the drift check is done (no payload: the worker never sees the reference's numbers)


class KeeperRequest(StrEnum):
    """What the parent asks a GPU's reference keeper; each answered `OKAY` or `DENY`."""

    SIZE = "SIZE"  # `SizeRequest`: weigh the problem's forward on the meta device (admission)
    PREPARE = "PREP"  # `PrepareRequest`: build or find the task's record
    TIME_REFERENCE = "RTIM"  # `TimeReferenceRequest`: time the reference before the candidate
    DRIFT_CHECK = "DRFT"  # `DriftCheckRequest`: re-time the reference briefly after the candidate's timing
    LEND = "LEND"  # `LendRequest`: handouts for a group of the candidate's outputs (relays `ASK_HANDOUTS`)
    FILL = "FILL"  # `tagged` worker bytes of `HANDOUT_BYTES`: the outputs' values, on the CPU
    COMPARE = "CMPR"  # `tagged` worker bytes of `CANDIDATE`: compare the candidate's report
    COMPARE_TIMED = "CMPT"  # tensors {"task_id", "timed"}: compare the timed calls' outputs
    FREE = "FREE"  # `TaskRequest`: the task is over; give back what it held
    SCREEN = "SCRN"  # `ScreenRequest`: a problem's negative-control screen (`keeper/screen.py`)


class KeeperAnswer(StrEnum):
    """The keeper's answer to one `KeeperRequest`."""

    OKAY = "OKAY"  # JSON, with the keeper's own seconds in `_keeper_s`
    DENY = "DENY"  # `KeeperRefusal`: the request failed (the problem's or the keeper's failure, never a crash)


CHANNELS: tuple[type[StrEnum], ...] = (Lifecycle, FromWorker, ToWorker, KeeperRequest, KeeperAnswer)


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartFailure(_Payload):
    kind: str
    message: str


class HandoutAsk(_Payload):
    """The worker's outputs of one group: each `{"where", "index", "shape", "dtype", "device"}`."""

    outputs: list[dict[str, Any]]


class HandoutsLent(_Payload):
    """Per output asked for, a handout (`{"id", "handle", "nbytes", ...}`) or None (judged from its description)."""

    lent: list[dict[str, Any] | None]


class TaskRequest(_Payload):
    task_id: str


class SizeRequest(_Payload):
    task: dict[str, Any]


class ScreenRequest(_Payload):
    task: dict[str, Any]


class PrepareRequest(TaskRequest):
    task: dict[str, Any]


class TimeReferenceRequest(TaskRequest):
    known: bool  # the pool or the registry knows the reference's timing: a short paired one will do
    compile_known: bool


class DriftCheckRequest(TaskRequest):
    settle: bool = False  # a second, settled look at a reference the first check found slower


class LendRequest(TaskRequest):
    outputs: list[dict[str, Any]]


class KeeperRefusal(_Payload):
    stage: str  # "problem", "setup", "keeper", or `MALFORMED`
    error: ErrorInfo


MALFORMED = "malformed"
"""A `KeeperRefusal`'s stage when what the keeper could not read is a worker's payload the pool relayed unopened
(`FILL`, `CMPR`): the worker's malformed frame, charged to the candidate as the pool's own decoding would have."""


def encode(model: BaseModel) -> bytes:
    return model.model_dump_json().encode()


def tagged(task_id: str, payload: bytes) -> bytes:
    """A worker's payload, unopened, behind the id of the keeper's task it belongs to."""
    return task_id.encode("ascii") + b"\n" + payload


def untagged(payload: bytes) -> tuple[str, bytes]:
    """`tagged` undone: (task id, the worker's payload)."""
    task_id, sep, rest = payload.partition(b"\n")
    if not sep:
        raise ValueError("a tagged payload has no task id")
    return task_id.decode("ascii"), rest


WORKER_HIDDEN = tuple(f for f in WorkerTask.model_fields if f.startswith("cached_")) + (
    "reference_peak_mb",
    "reference_host_mb",
)
"""The reference's numbers the parent and the keeper use (its known timings, every `cached_*` field, its memory
peak and parked bytes) and the candidate's worker must not see: it has no use for them, and a candidate that read
the reference's median time could shape its own timing against it."""


def worker_view(task: WorkerTask) -> WorkerTask:
    """The task as the candidate's worker gets it: without `WORKER_HIDDEN`."""
    return task.model_copy(update=dict.fromkeys(WORKER_HIDDEN))


def record_key(task: WorkerTask) -> str:
    """What the reference's outputs depend on: the same key, the same tensors.  One keeper record per key; the pool
    sends a key's tasks to one keeper and shares the record's memory among them."""
    identity = [
        task.problem_source,
        task.sizes,
        task.extra_sizes,
        task.extra_sizes_optional,
        task.late_trial,
        sorted(task.degenerate.items()),
        task.seeds,
        task.init_seed,
        task.precision,
        task.draw_parameters,
        # the declared probes: the record computes the reference's side of exactly these
        sorted((name, spec.model_dump()) for name, spec in task.probes.items()),
    ]
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
