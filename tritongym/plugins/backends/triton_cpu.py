"""The `triton-cpu` backend: Triton's interpreter on the CPU, inside the sandboxed worker.

It checks correctness and gathers launch records exactly as the GPU backend does, so hack detection and
CI run without a GPU.  The interpreter's speed says nothing about a kernel's speed, so it reports no
runtimes: speedup and PR stay empty.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tritongym import hookimpl
from tritongym.core.interfaces import Backend
from tritongym.core.models import Evidence
from tritongym.core.sandbox import SandboxLimits, run_in_sandbox
from tritongym.core.worker_task import WorkerTask


class TritonCPUOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threads: int = Field(default=1, ge=1, le=64, description="torch intra-op threads in the worker")


class TritonCPUBackend(Backend):
    """Triton interpreter on the CPU (TRITON_INTERPRET=1): correctness and provenance, no timing."""

    name = "triton-cpu"
    device_type = "cpu"
    default_size = "cpu"
    Options = TritonCPUOptions

    def default_device(self) -> str:
        return "cpu"

    def device_class(self, device: str) -> str:
        return "cpu"

    def measure(self, task: WorkerTask, limits: SandboxLimits) -> Evidence:
        limits = limits.model_copy(update={"threads": self.options.threads})
        return run_in_sandbox(task.model_copy(update={"device": "cpu"}), limits, {"TRITON_INTERPRET": "1"})


@hookimpl
def register_backends(register):
    register(TritonCPUBackend)
