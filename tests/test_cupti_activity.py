"""The kernel table read from CUPTI's activity API directly (`measure/cupti_activity.py`,
`profiler_warm_up = "cupti"`): the record parser on records laid out as CUPTI's headers lay them out (CPU), and on
a GPU the table against torch.profiler's for the same forward, and a pool whose workers never start Kineto."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import textwrap

import pytest
import torch

from tritongym.core.measure import cupti_activity as ca


def record(kind: int, start: int, end: int, name: bytes | None = None, copy: int = 0) -> tuple[ctypes.Array, list]:
    """A record as CUPTI writes it (packed, 8-aligned): kind at 0, a memcpy's copy kind at 4, start and end at 16
    and 24, a kernel's name pointer at 104; 144 bytes, longer than every field read."""
    raw = (ctypes.c_uint8 * 144)()
    base = ctypes.addressof(raw)
    keep = []
    ctypes.c_uint32.from_address(base).value = kind
    ctypes.c_uint8.from_address(base + 4).value = copy
    ctypes.c_uint64.from_address(base + 16).value = start
    ctypes.c_uint64.from_address(base + 24).value = end
    if name is not None:
        text = ctypes.create_string_buffer(name)
        keep.append(text)
        ctypes.c_void_p.from_address(base + 104).value = ctypes.addressof(text)
    return raw, keep


def test_records_parse_into_the_device_events_torch_profiler_names():
    kernel, keep = record(ca.CONCURRENT_KERNEL, 1_000, 4_500, b"relu_kernel")
    event = ca.parse_record(ctypes.addressof(kernel))
    assert event == ca.DeviceEvent("relu_kernel", 1_000, 4_500) and event.elapsed_us == 3.5
    torch_kernel, keep2 = record(ca.CONCURRENT_KERNEL, 0, 10, b"_Z3addPfi")
    assert ca.parse_record(ctypes.addressof(torch_kernel)).name == "add(float*, int)"  # demangled, as Kineto does
    copy, _ = record(ca.MEMCPY, 5, 9, copy=8)
    assert ca.parse_record(ctypes.addressof(copy)) == ca.DeviceEvent("Memcpy DtoD", 5, 9)
    fill, _ = record(ca.MEMSET, 5, 5)
    assert ca.parse_record(ctypes.addressof(fill)).name == "Memset (Device)"
    runtime_api, _ = record(5, 0, 1)
    assert ca.parse_record(ctypes.addressof(runtime_api)) is None  # a kind the table does not read


def test_a_record_that_does_not_read_as_its_layout_is_refused_not_counted():
    backwards, _ = record(ca.CONCURRENT_KERNEL, 9_000, 1_000, b"k")
    with pytest.raises(ca.CuptiLayoutError, match="ends .* before it starts"):
        ca.parse_record(ctypes.addressof(backwards))
    nameless, _ = record(ca.CONCURRENT_KERNEL, 0, 1)
    with pytest.raises(ca.CuptiLayoutError, match="without a name"):
        ca.parse_record(ctypes.addressof(nameless))
    elsewhere, _ = record(ca.CONCURRENT_KERNEL, 0, 1, b"k")
    ctypes.c_uint32.from_address(ctypes.addressof(elsewhere) + 40).value = 0xDEAD
    with pytest.raises(ca.CuptiLayoutError, match="on device"):
        ca.parse_record(ctypes.addressof(elsewhere))


SIDE_BY_SIDE = textwrap.dedent(
    """
    import json, time
    import torch, triton, triton.language as tl
    from tritongym.core.measure import gpu_profile

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    x = torch.zeros(1 << 20, device="cuda")
    add_one[(1024,)](x, x.numel(), BLOCK=1024)  # its module loaded before CUPTI is set up
    torch.cuda.synchronize()

    def window():
        for _ in range(3):
            add_one[(1024,)](x, x.numel(), BLOCK=1024)
            torch.mm(x[:1 << 16].view(256, 256), x[:1 << 16].view(256, 256))
            x[:16].zero_()
        torch.cuda.synchronize()

    began = time.perf_counter()
    direct = gpu_profile.device_events(window, via="cupti")
    direct_s = time.perf_counter() - began
    began = time.perf_counter()
    kineto = gpu_profile.device_events(window, via="kineto")
    kineto_s = time.perf_counter() - began
    print(json.dumps({"direct": direct, "kineto": kineto, "direct_s": direct_s, "kineto_s": kineto_s,
                      "failure": gpu_profile.cupti_failure, "x": float(x[100])}))
    """
)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.timeout(300)
def test_on_a_gpu_the_direct_table_matches_torch_profilers(tmp_path):
    """In a fresh process, the same forward (a Triton kernel whose module loaded before CUPTI, a cuBLAS GEMM, a
    fill) read both ways: the same kernels, each as many times, and the direct set-up without Kineto's seconds.
    The script is a file: `@triton.jit` reads its function's source, which `python -c` does not have."""
    script = tmp_path / "side_by_side.py"
    script.write_text(SIDE_BY_SIDE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["failure"] is None, seen["failure"]
    assert seen["x"] == 7.0  # the window ran twice, and the warm-up once

    def counts(events):
        table: dict[str, int] = {}
        for name, us in events:
            assert us >= 0
            table[name] = table.get(name, 0) + 1
        return table

    direct, kineto = counts(seen["direct"]), counts(seen["kineto"])
    assert direct.get("add_one") == 3 and kineto.get("add_one") == 3, (direct, kineto)
    assert sum(direct.values()) == sum(kineto.values()), (direct, kineto)
    assert sorted(direct.values()) == sorted(kineto.values()), (direct, kineto)
    # set-up and window, against Kineto's in the same process (the seconds themselves: benchmarks/cupti_setup.py;
    # an absolute bound here failed at 1.8 s with three other GPU tests beside it)
    assert seen["direct_s"] < seen["kineto_s"], (seen["direct_s"], seen["kineto_s"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.timeout(600)
def test_on_a_gpu_workers_reading_cupti_directly_judge_as_before_and_start_without_kinetos_seconds(
    tmp_path, sandbox_checks
):
    """The suite's relu and softmax judged by a pool whose workers read CUPTI directly: `ok` with PR and the
    candidate's own kernel in the table, as under torch.profiler, and the worker's profiler set-up under a second."""
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.models import Status
    from tritongym.core.plugins import PluginHost
    from tritongym.core.problems import load_problem

    config = EvalConfig(
        backend="triton-cuda",
        size="gpu",
        use_cache=False,
        timeout_s=300,
        checks=sandbox_checks,
        backend_options={"profiler_warm_up": "cupti"},
    )
    evaluator = Evaluator(config, registry=None, host=PluginHost(load_entry_points=False))
    try:
        problems = [load_problem(name, "gpu") for name in ("relu", "softmax")]
        results = evaluator.evaluate_many([(p.solution, p) for p in problems])
    finally:
        evaluator.close()
    for r in results:
        assert r.status == Status.ok, (r.problem_id, r.message)
        assert r.pr is not None and 0 < r.pr <= 1, (r.problem_id, r.pr)
        assert any(e.own for e in r.profile), (r.problem_id, r.profile)
        assert r.phases.get("worker_startup_profiler", 0.0) < 1.0, r.phases
