"""Helpers shared by the benchmarks that run kernels in their own (trusted) process, outside tritongym.

`baseline_harness.py` (in its fresh per-task processes) and `timing_precision.py` (in the benchmark
process) load a problem and a candidate from source the way tritongym's worker does: each source is written
to a real file (Triton's `@jit` reads its source back), the problem's size preset is applied to the
module's globals (`vars(module).update(sizes)`), `Model` and `ModelNew` are built under one seed, and every
parameter/buffer of `ModelNew` whose name, shape and dtype match `Model`'s is copied in.

Only torch is imported at module level (tritongym is not needed in a baseline process), and `print_table`
prints with rich when it is installed, else as plain text.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType

import torch


def load_module(name: str, source: str, directory: str) -> ModuleType:
    """Import `source` as module `name` from the file `directory/name.py`."""
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py path always has a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_reference(source: str, sizes: dict, directory: str, name: str = "bench_reference") -> ModuleType:
    """The problem module with its size preset applied to its globals, as tritongym's worker does."""
    module = load_module(name, source, directory)
    vars(module).update(sizes)
    return module


def set_precision(precision: str = "tf32") -> None:
    """tritongym's precision policy as it times the reference (its default, "tf32", and "half" allow TF32;
    "ieee" allows none), applied to this process."""
    allow = precision != "ieee"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")


def bind_weights(reference: torch.nn.Module, candidate: torch.nn.Module) -> list[str]:
    """Copy each of `reference`'s parameters/buffers into `candidate` where name, shape and dtype match."""
    ref_state = reference.state_dict()
    bound = []
    with torch.no_grad():
        for name, tensor in candidate.state_dict().items():
            source = ref_state.get(name)
            if source is not None and source.shape == tensor.shape and source.dtype == tensor.dtype:
                tensor.copy_(source)
                bound.append(name)
    return bound


def build_model(reference: ModuleType, cls, device: str, seed: int = 42) -> torch.nn.Module:
    """`cls(*get_init_inputs())` built under `seed` (KernelBench seeds before each construction)."""
    torch.manual_seed(seed)
    init_inputs = reference.get_init_inputs()
    torch.manual_seed(seed)
    return cls(*init_inputs).to(device)


def make_inputs(reference: ModuleType, seed: int, device: str) -> list:
    torch.manual_seed(seed)
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in reference.get_inputs()]


def outputs_of(value) -> list:
    """A forward's result as a flat list (a tensor, or a tuple/list of them)."""
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in outputs_of(v)]
    return [value]


def synchronize(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_with_cuda_events(fn: Callable[[], object], device: str, warmup: int = 3, trials: int = 100) -> list[float]:
    """KernelBench's `time_execution_with_cuda_event`: per-call times in ms, events on the current stream.

    On a CPU device (smoke tests under TRITON_INTERPRET=1) the same loop is timed with `perf_counter`.
    """
    cuda = torch.device(device).type == "cuda"
    for _ in range(warmup):
        fn()
        synchronize(device)
    times = []
    for _ in range(trials):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def median_ms(fn: Callable[[], object], device: str) -> float:
    """`triton.testing.do_bench(fn, return_mode="median")` (defaults warmup=25, rep=100) on CUDA; on a CPU
    device a plain median of 10 timed calls after one warm-up (smoke tests only)."""
    if torch.device(device).type == "cuda":
        import triton.testing

        return float(triton.testing.do_bench(fn, return_mode="median"))
    fn()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A table on standard output: rich when available, else aligned plain text."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
        print(title)
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
        for row in cells:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
        return
    table = Table(title=title)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right")
    for row in cells:
        table.add_row(*(escape(c) for c in row))
    Console(width=160).print(table)


def fmt(value: float | None, digits: int = 3) -> str:
    """`digits` significant digits, without exponents for large values; "-" for None."""
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 10**digits else f"{value:.{digits}g}"
