"""`PoolOptions.device_schedule`: how the pool's CUDA contexts wait for their GPU, set in each process's environment."""

from __future__ import annotations

import pytest

from tritongym.core.sandbox.pool_options import PoolOptions
from tritongym.core.sandbox.processes import process_env
from tritongym.core.worker import cuda_schedule


def test_a_chosen_schedule_reaches_every_gpu_process_environment_and_auto_sets_nothing(tmp_path):
    chosen = process_env("1", PoolOptions(gpus=["1"], device_schedule="yield"), str(tmp_path), {})
    assert chosen[cuda_schedule.ENV] == "yield" and chosen["CUDA_VISIBLE_DEVICES"] == "1"
    default = process_env("1", PoolOptions(gpus=["1"]), str(tmp_path), {})
    assert cuda_schedule.ENV not in default


def test_apply_names_an_unknown_schedule_and_leaves_auto_to_the_driver(monkeypatch):
    monkeypatch.setenv(cuda_schedule.ENV, "sometimes")
    with pytest.raises(ValueError, match="auto, spin, yield, blocking"):
        cuda_schedule.apply()
    monkeypatch.setenv(cuda_schedule.ENV, "auto")
    assert cuda_schedule.apply() is None


def test_without_a_driver_the_schedule_is_not_set_and_nothing_fails(monkeypatch):
    """This project's CPU machines have no `libcuda`: the process keeps the driver's default (there is none)."""
    monkeypatch.setenv(cuda_schedule.ENV, "blocking")
    try:
        import ctypes

        ctypes.CDLL("libcuda.so.1")
    except OSError:
        assert cuda_schedule.apply() is None
    else:
        pytest.skip("a CUDA driver is here: tests/test_gpu.py covers a real context")


def test_the_backend_option_is_validated_and_reaches_the_pool():
    from pydantic import ValidationError

    from tritongym.plugins.backends.triton_cuda import TritonCUDABackend

    with pytest.raises(ValidationError, match="device_schedule"):
        TritonCUDABackend.Options(device_schedule="sometimes")
    assert TritonCUDABackend.Options(device_schedule="blocking").device_schedule == "blocking"
