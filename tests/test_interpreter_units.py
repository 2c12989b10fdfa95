"""Interpreter patches (`core/worker/interpreter_*.py`) one at a time, each in a fresh Python under `TRITON_INTERPRET=1`
(Triton reads it when imported, and a patch changes Triton for the whole process): what the patch makes of the idiom
that failed, and that what the interpreter did before stays as it was.  Whole kernels judged on triton-cpu are
test_interpreter_compat.py's and the honest suite's (tests/hacks/honest)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def interpreted(code: str) -> list[str]:
    """The lines `code` prints, run by a fresh Python with Triton's interpreter on."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.splitlines()


def test_the_driver_answers_a_cuda_target_and_names_the_interpreter_for_the_rest():
    before, target, kernels, rest = interpreted(
        """
        import triton
        import triton.language as tl
        from tritongym.core.worker import interpreter_driver

        try:
            triton.runtime.driver.active
        except RuntimeError as exc:
            print(exc)
        assert interpreter_driver.install() is None and interpreter_driver.install() is None
        active = triton.runtime.driver.active
        t = active.get_current_target()
        print(t.backend, t.arch, t.warp_size, active.get_active_torch_device(), active.get_current_device())
        print(tl.target_info.current_target(), tl.target_info.is_cuda(), tl.target_info.cuda_capability_geq(9))
        try:
            active.utils.get_device_properties(0)
        except AttributeError as exc:
            print(exc)
        """
    )
    assert "0 active drivers" in before  # what tutorial 03 got at import
    assert target == "cuda 90 32 cpu 0"
    assert kernels == "None False False"  # a kernel's guards keep the portable path: no inline PTX interpreted
    assert rest.startswith("triton.runtime.driver.active.utils: Triton's interpreter (triton-cpu) has no GPU driver")
