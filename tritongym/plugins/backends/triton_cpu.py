"""The `triton-cpu` backend: Triton's interpreter on the CPU, inside the sandboxed worker.

It checks correctness and gathers launch records exactly as the GPU backend does, so hack detection and
CI run without a GPU.  The interpreter's speed says nothing about a kernel's speed, so it reports no
runtimes: speedup and PR stay empty.  Each task's worker is forked from a fork server that imported torch and
Triton once (`sandbox/task_zygote.py`), not started as a fresh interpreter.
"""

from __future__ import annotations

import threading

from tritongym import hookimpl
from tritongym.core.interfaces import Backend
from tritongym.core.models import Evidence
from tritongym.core.sandbox.sandbox import run_in_sandbox, warm_zygote
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

    ENV = {"TRITON_INTERPRET": "1"}  # in the fork server's environment before it imports Triton

    def warm_up(self, tasks: int) -> None:
        warm_zygote(self.ENV)

    def measure(self, task: WorkerTask, limits: SandboxLimits) -> Evidence:
        evidence = run_in_sandbox(task.model_copy(update={"device": "cpu"}), limits, self.ENV, zygote=True)
        with self._busy_lock:
            self._busy_s += evidence.worker_s or 0.0
        return evidence

    def busy_seconds(self) -> dict[str, float]:
        with self._busy_lock:
            return {"cpu": self._busy_s}


@hookimpl
def register_backends(register):
    register(TritonCPUBackend)
