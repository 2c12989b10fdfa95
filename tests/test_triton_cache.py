"""The fork server's copy of Triton's compiled helpers (`worker/triton_cache.py`), through Triton's real build cache.

On a GPU the helper is Triton's `cuda_utils`, which needs `libcuda.so.1`; here a small C extension module goes
through the same `compile_module_from_src` and cache, which is what decides whether a worker compiles."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from tritongym.core.worker import triton_cache

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None and shutil.which("clang") is None, reason="Triton's build needs a C compiler"
)

MODULE_SOURCE = """
#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_NAME(void) { return PyModule_Create(&module); }
"""


def _source(name: str) -> str:
    return MODULE_SOURCE.replace("NAME", name)


def _no_compiler(*args, **kwargs):
    raise AssertionError("Triton ran the C compiler: the seeded cache did not hold the module")


def _compile(name: str):
    from triton.runtime.build import compile_module_from_src

    return compile_module_from_src(_source(name), name, include_dirs=[sysconfig.get_paths()["include"]])


def test_a_worker_cache_seeded_from_the_fork_servers_loads_the_module_without_compiling(tmp_path, monkeypatch):
    import triton.runtime.build as build

    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "zygote"))
    assert _compile("tg_seed_a").answer() == 42  # built here, as the fork server does once
    files = triton_cache.collect(str(tmp_path / "zygote"))
    assert files and all(not p.startswith("/") for p, _ in files)

    monkeypatch.setattr(build, "_build", _no_compiler)
    worker = tmp_path / "worker"
    monkeypatch.setenv(triton_cache.CACHE_ENV, str(worker))
    assert triton_cache.write(str(worker), files) == len(files)
    assert _compile("tg_seed_a").answer() == 42  # found by its content hash in the worker's own folder

    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "unseeded"))
    with pytest.raises(AssertionError, match="ran the C compiler"):
        _compile("tg_seed_a")  # an empty cache compiles: the seed is what spared it


def test_seed_writes_what_build_kept_into_this_processes_own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "zygote"))
    _compile("tg_seed_b")
    monkeypatch.setattr(triton_cache, "_seed", triton_cache.collect(str(tmp_path / "zygote")))
    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "child"))
    assert triton_cache.seed() == len(triton_cache._seed) > 0
    made = sorted(p.relative_to(tmp_path / "child") for p in (tmp_path / "child").rglob("*") if p.is_file())
    kept = sorted(p.relative_to(tmp_path / "zygote") for p in (tmp_path / "zygote").rglob("*") if p.is_file())
    assert made == kept


def test_collect_leaves_out_half_written_files_and_groups_that_point_into_the_fork_servers_cache(tmp_path):
    entry = tmp_path / "KEY"
    entry.mkdir()
    (entry / "cuda_utils.so").write_bytes(b"\x7fELF")
    (entry / "__grp__kernel.json").write_text('{"child_paths": {"a": "/abs/path"}}')
    (entry / "lock").write_text("")
    (entry / "tmp.pid_1_x").mkdir()
    (entry / "tmp.pid_1_x" / "cuda_utils.so").write_bytes(b"half")
    assert triton_cache.collect(str(tmp_path)) == [("KEY/cuda_utils.so", b"\x7fELF")]


def test_write_never_leaves_the_workers_folder(tmp_path):
    inside = tmp_path / "cache"
    assert triton_cache.write(str(inside), [("../outside.so", b"x"), ("KEY/ok.so", b"y")]) == 1
    assert not (tmp_path / "outside.so").exists()
    assert (inside / "KEY" / "ok.so").read_bytes() == b"y"


def test_without_a_cuda_toolchain_the_fork_server_keeps_nothing_and_workers_build_as_before(tmp_path, monkeypatch):
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has a GPU driver: build() is expected to succeed here")
    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "zygote"))
    monkeypatch.setattr(triton_cache, "_seed", [])
    assert triton_cache.build() == 0
    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "child"))
    assert triton_cache.seed() == 0
    assert not (tmp_path / "child").exists()
