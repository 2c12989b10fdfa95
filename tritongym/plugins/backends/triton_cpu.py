"""The `triton-cpu` backend: Triton's interpreter on the CPU, inside the sandboxed worker.

It checks correctness and gathers launch records exactly as the GPU backend does, so hack detection and
CI run without a GPU.  The interpreter's speed says nothing about a kernel's speed, so it reports no
runtimes: speedup and PR stay empty.
"""

from __future__ import annotations

import threading

from tritongym import hookimpl
from tritongym.core.interfaces import Backend
from tritongym.core.models import Evidence
from tritongym.core.sandbox.sandbox import run_in_sandbox
from tritongym.core.worker_task import SandboxLimits, WorkerTask


class TritonCPUBackend(Backend):
    """Triton interpreter on the CPU (TRITON_INTERPRET=1): correctness and provenance, no timing."""

    name = "triton-cpu"
    device_type = "cpu"
    default_size = "cpu"

    def default_device(self) -> str:
        return "cpu"

    def device_class(self, device: str) -> str:
        return "cpu"

    def __init__(self, options=None) -> None:
        super().__init__(options)
        self._busy_s = 0.0
        self._busy_lock = threading.Lock()

    def measure(self, task: WorkerTask, limits: SandboxLimits) -> Evidence:
        # one torch thread: the worker forks the candidate's process, and an OpenMP pool does not survive fork
        evidence = run_in_sandbox(task.model_copy(update={"device": "cpu"}), limits, {"TRITON_INTERPRET": "1"})
        with self._busy_lock:
            self._busy_s += evidence.worker_s or 0.0
        return evidence

    def busy_seconds(self) -> dict[str, float]:
        with self._busy_lock:
            return {"cpu": self._busy_s}


@hookimpl
def register_backends(register):
    register(TritonCPUBackend)
