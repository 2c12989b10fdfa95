"""A pool process's environment (`processes.process_env`): its device, and the hardware queues its CUDA context
is made with (`PoolOptions.device_connections`, the triton-cuda backend's `device_connections`).

Why one queue by default: a candidate may launch on the current stream only (the `streams` check), and the
driver creates contexts with one queue ~3x faster when many start at once (on an H200, 16 at once: 0.83 s each
against 2.63 s), which every fresh worker pays.  The GPU evidence is in `benchmarks/results/*-h200-stop57*`; here,
the rule that puts the variable where the driver reads it, and the option's bounds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tritongym.core.sandbox.pool_options import PoolOptions
from tritongym.core.sandbox.processes import process_env
from tritongym.plugins.backends.triton_cuda import TritonCUDABackend


def test_a_gpu_process_sees_its_gpu_alone_with_one_hardware_queue(tmp_path):
    env = process_env("1", PoolOptions(gpus=["0", "1"]), str(tmp_path), {"TRITONGYM_TIMING_FLAG": "x"})
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert env["TRITONGYM_TIMING_FLAG"] == "x"  # the process's own variables stay
    assert "TRITON_INTERPRET" not in env


def test_the_caller_s_own_setting_does_not_reach_the_sandbox(tmp_path, monkeypatch):
    """The sandbox's environment is stripped: the option decides, not whatever the caller's shell exported."""
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4")
    default = process_env("0", PoolOptions(gpus=["0"], device_connections=None), str(tmp_path), {})
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in default  # None: the driver's own default (8)
    chosen = process_env("0", PoolOptions(gpus=["0"], device_connections=8), str(tmp_path), {})
    assert chosen["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"


def test_a_cpu_process_runs_the_interpreter(tmp_path):
    env = process_env("cpu", PoolOptions(gpus=["cpu"]), str(tmp_path), {})
    assert env["TRITON_INTERPRET"] == "1"
    assert "CUDA_VISIBLE_DEVICES" not in env


def test_the_backend_option_defaults_to_one_queue_and_is_bounded():
    assert TritonCUDABackend.Options().device_connections == 1
    assert TritonCUDABackend.Options(device_connections=None).device_connections is None
    for wrong in (0, 33):
        with pytest.raises(ValidationError, match="device_connections"):
            TritonCUDABackend.Options(device_connections=wrong)
