"""`triton.runtime.driver.active` under Triton's interpreter, as on the GPU the CPU judge stands for: a CUDA target.

Tutorial 03 as published asks `triton.runtime.driver.active.get_current_target()` when it is imported, to choose its
autotune configs (CUDA's or HIP's), and the tutorials take `DEVICE = driver.active.get_active_torch_device()`.  On a
machine without a GPU no backend's driver is active, so `driver.active` raised "0 active drivers" and the tutorial was
a `compile_error` on triton-cpu, an honest kernel the GPU judges `ok`.

`install` (in the trusted worker, before any candidate is loaded, interpreter only) wraps Triton's `_create_driver`:
where no backend's driver is active, the driver made is `InterpreterDriver`, which answers what host code asks before
it launches: the target of the GPUs the judge times on (`TARGET`, an H100/H200), the torch device the interpreter's
tensors are on (the CPU) and device 0.  Anything else of a driver (launchers, benchmarks, device properties) raises
an `AttributeError` that names the interpreter, as its absence did.  A driver that is active (a GPU host) is left
alone.

`triton.language.target_info.current_target()` stays None with that driver, as before: its constexpr guards
(`cuda_capability_geq`, `is_cuda`) choose, inside a kernel, between inline PTX and a portable path, and the
interpreter runs no inline assembly.
"""

from __future__ import annotations

import os

TARGET = ("cuda", 90, 32)
"""backend, arch (compute capability 9.0) and warp size of the GPUs the CPU judge stands for."""


def install() -> str | None:
    """Answer `driver.active` with a CUDA target where no driver is active; None when installed, else why not."""
    import sys

    import triton.runtime  # noqa: F401 - loads triton.runtime.driver
    from triton.backends import DriverBase, backends
    from triton.backends.compiler import GPUTarget
    from triton.language import target_info

    module = sys.modules.get("triton.runtime.driver")
    create = getattr(module, "_create_driver", None)
    current_target = getattr(target_info, "current_target", None)
    if create is None or current_target is None or not hasattr(type(getattr(module, "driver", None)), "active"):
        return "this Triton has no triton.runtime.driver._create_driver/driver.active/target_info.current_target"
    if getattr(create, "_tritongym_driver", False):
        return None

    class InterpreterDriver(DriverBase):
        """The driver of a machine with no GPU, for Triton's interpreter (see the module docstring)."""

        @classmethod
        def is_active(cls) -> bool:
            return False  # never chosen by Triton itself: `install` makes it where no driver is

        def get_current_target(self):
            return GPUTarget(*TARGET)

        def get_active_torch_device(self):
            import torch

            return torch.device("cpu")

        def get_current_device(self) -> int:
            return 0

        def map_python_to_cpp_type(self, ty: str) -> str:
            raise self._missing("map_python_to_cpp_type")

        def get_benchmarker(self):
            raise self._missing("get_benchmarker")

        def __getattr__(self, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            raise self._missing(name)

        @staticmethod
        def _missing(name: str) -> AttributeError:
            return AttributeError(
                f"triton.runtime.driver.active.{name}: Triton's interpreter (triton-cpu) has no GPU driver; it "
                "answers only get_current_target(), get_active_torch_device() and get_current_device(). Keep "
                "device queries out of the kernel's path, or guard them with os.environ.get('TRITON_INTERPRET')"
            )

    def create_driver():
        try:
            return create()
        except RuntimeError:
            if os.environ.get("TRITON_DEFAULT_BACKEND") or any(b.driver.is_active() for b in backends.values()):
                raise
            return InterpreterDriver()

    config = getattr(module, "driver", None)

    def kernel_target():
        target = current_target()
        if target is not None and isinstance(config.active, InterpreterDriver):
            return None  # a kernel's constexpr guards take their portable path, as before
        return target

    kernel_target.__triton_builtin__ = True
    create_driver._tritongym_driver = True
    module._create_driver = create_driver
    target_info.current_target = kernel_target
    return None
