"""The recorder's side-stream rule (`worker/launches.py`): a launch onto a stream other than the caller's is a
finding by itself, once per call and kernel, stalled once; the autotuner's own benchmarking is not.

Triton's interpreter has no streams, so the script below gives the recorder a stream switch of its own
(`trusted.current_stream` and `trusted.sleep`, the two CUDA primitives the rule reads): this tests the rule's
bookkeeping.  That a real side stream is seen on a GPU is `tests/hacks/test_hacks.py`'s GPU case
`side_stream_single.py`, and that Triton's CUDA-graph autotuner is left alone, the honest idiom
`relu_autotune_cudagraph.py`."""

from __future__ import annotations

from interpreted import run_interpreted

SCRIPT = """
import json
from types import SimpleNamespace

import torch
import triton
import triton.language as tl

from tritongym.core.measure import trusted
from tritongym.core.worker.launches import LaunchRecorder

CALLER, SIDE = 11, 22
stream = [CALLER]
sleeps = []
trusted.current_stream = lambda: SimpleNamespace(cuda_stream=stream[0])
trusted.sleep = sleeps.append

recorder = LaunchRecorder(__file__)
recorder.install()
recorder.caller_stream = CALLER


def on_side_stream_bench(kernel_call, quantiles=None, **kwargs):  # as do_bench_cudagraph: a stream of its own
    stream[0] = 33
    try:
        kernel_call()
    finally:
        stream[0] = CALLER
    return [1.0] * len(quantiles) if quantiles else 1.0


@triton.jit
def copy_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"], do_bench=on_side_stream_bench
)
@triton.jit
def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


x = torch.randn(100)
recorder.phase = ("trial", 0)
copy_kernel[(2,)](x, 100, BLOCK=64)  # the caller's stream: nothing
tuned_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, 100)  # benchmarked on its own stream: nothing
after_tuning = (recorder.side_launches(), list(sleeps))
stream[0] = SIDE
copy_kernel[(2,)](x, 100, BLOCK=64)
copy_kernel[(2,)](x, 100, BLOCK=64)
tuned_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, 100)
recorder.phase = ("probe", "ghost")
copy_kernel[(2,)](x, 100, BLOCK=64)
recorder.phase = None  # outside any call (timing, the harness): not the rule's
copy_kernel[(2,)](x, 100, BLOCK=64)
print(json.dumps({"after_tuning": after_tuning, "findings": recorder.side_launches(), "sleeps": sleeps}))
"""


def test_side_stream_launches_are_findings_and_the_tuners_benchmarking_is_not(tmp_path):
    seen = run_interpreted(SCRIPT, tmp_path, "side_launches.py")
    assert seen["after_tuning"] == [[], []], "the autotuner's benchmarking on its own stream was taken for side work"
    assert seen["findings"] == [
        "copy_kernel x2, tuned_kernel x1 launched on a stream other than the caller's in trial 0",
        "copy_kernel x1 launched on a stream other than the caller's in probe ghost",
    ]
    assert len(seen["sleeps"]) == 2, "one stall per call and stream"
