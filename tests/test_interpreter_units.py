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


def test_a_tl_range_index_is_a_scalar_tensor_and_other_loops_keep_python_ints():
    (lines,) = interpreted(
        """
        import torch
        import triton
        import triton.language as tl
        from tritongym.core.worker import interpreter_range

        assert interpreter_range.install() is None and interpreter_range.install() is None


        @triton.jit
        def rows(x_ptr, y_ptr, n_rows, stride, big, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=2):
                base = row.to(tl.int64) * stride  # vLLM's persistent loop
                tl.store(y_ptr + base + cols, tl.load(x_ptr + base + cols) * 2)
            for wide in tl.range(big - 1, big):
                tl.store(y_ptr + n_rows * stride, wide.dtype.primitive_bitwidth)
            for narrow in tl.range(3):
                tl.store(y_ptr + n_rows * stride + 1, narrow.dtype.primitive_bitwidth)
            for unrolled in tl.static_range(2):
                tl.static_assert(isinstance(unrolled, int))
            for plain in range(2):
                tl.static_assert(isinstance(plain, int))


        x = torch.randn(5, 8)
        y = torch.zeros(6, 8)
        rows[(2,)](x, y, 5, 8, 2**33, BLOCK=8)
        print(torch.equal(y[:5], x * 2), y[5, :2].tolist())
        """
    )
    assert lines == "True [64.0, 32.0]"  # int64 where a bound is, int32 otherwise: the compiler's index types
