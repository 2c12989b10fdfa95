"""The fork server's copy of Triton's compiled helpers (`worker/triton_cache.py`), through Triton's real build cache.

On a GPU the helper is Triton's `cuda_utils`, which needs `libcuda.so.1`; here a small C extension module goes
through the same `compile_module_from_src` and cache, which is what decides whether a worker compiles."""

from __future__ import annotations

import os
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


def test_only_signatures_of_tritons_own_type_names_reach_the_fork_servers_compiler():
    ok = ["*fp32", "*kbf16", "i32", "fp16", "u64", "constexpr"]
    assert triton_cache.valid_signature(ok) == ok
    for bad in (
        ["*fp32", 'i32"); system("sh'],  # anything but a type name: refused, the whole signature
        ["tensordesc<fp16[64, 64]>"],  # its launcher depends on more than the types
        [("*fp32", "i32")],  # a tuple argument
        [],
        ["i32"] * (triton_cache.MAX_ARGUMENTS + 1),
        "*fp32",
        None,
    ):
        assert triton_cache.valid_signature(bad) is None, bad


def test_a_worker_reports_each_launched_signature_once_and_leaves_tensor_descriptors_out():
    from types import SimpleNamespace as Compiled

    def kernel(types: dict, tensordesc_meta=None):
        return Compiled(src=Compiled(signature=types), metadata=Compiled(tensordesc_meta=tensordesc_meta))

    relu = {"x": "*fp32", "y": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    kernels = [
        kernel(relu),
        kernel(dict(relu)),  # a second kernel with the same argument types: one launcher
        kernel({"d": "*fp16", "n": "i32"}, tensordesc_meta=[{"block": [64]}]),
        kernel({"x": "evil"}),
        Compiled(),  # something that is no compiled kernel
    ]
    assert triton_cache.launcher_signatures(kernels) == [["*fp32", "*fp32", "i32", "constexpr"]]


def test_a_fork_server_without_per_signature_launchers_or_a_toolchain_builds_none(tmp_path, monkeypatch):
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has a GPU driver: build_launchers() may build here")
    monkeypatch.setenv(triton_cache.CACHE_ENV, str(tmp_path / "zygote"))
    monkeypatch.setattr(triton_cache, "_seed", [])
    assert triton_cache.build_launchers([["*fp32", "*fp32", "i32", "constexpr"]]) == 0
    assert triton_cache.build_launchers("not a list") == 0
    assert triton_cache.build_launchers([["no such type"]]) == 0


LAUNCH_SCRIPT = """
import sys
import torch
import triton
import triton.language as tl
import triton.runtime.build as build

from tritongym.core.worker import triton_cache


@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


SIGNATURE = ["*fp32", "*fp32", "i32", "constexpr"]
if sys.argv[1] == "fork-server":  # what the fork server does: nothing of CUDA, only the builds
    built = triton_cache.build(), triton_cache.build_launchers([SIGNATURE])
    assert built[0] > 0 and built[1] == 1, built
else:  # a worker whose cache was seeded: Triton must need no C compiler for its driver or this launcher
    def no_compiler(*args, **kwargs):
        raise AssertionError("Triton ran the C compiler in a seeded worker")

    build._build = no_compiler
    x = torch.arange(1000, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    double[(4,)](x, y, x.numel(), BLOCK=256)
    assert torch.equal(y, 2 * x)
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.skipif(not Path("/dev/nvidiactl").exists(), reason="needs a CUDA GPU")
def test_on_a_gpu_a_seeded_worker_launches_a_kernel_without_compiling_tritons_c(tmp_path):
    """Triton's own driver and the launcher of the kernel's signature, built as the fork server builds them, then
    written into a fresh cache: a kernel of that signature compiles (its PTX) and runs with no C compiler."""
    import subprocess
    import sys

    script = tmp_path / "launch.py"
    script.write_text(LAUNCH_SCRIPT)
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "zygote")}
    done = subprocess.run([sys.executable, str(script), "fork-server"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    files = triton_cache.collect(str(tmp_path / "zygote"))
    triton_cache.write(str(tmp_path / "worker"), files)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "worker")
    done = subprocess.run([sys.executable, str(script), "worker"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.stderr, [p for p, _ in files])
