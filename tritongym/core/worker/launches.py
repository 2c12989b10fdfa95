"""Record every Triton kernel launch inside the worker (launch provenance).

Installed before the candidate is imported, on the launch entry point of Triton's JIT and of its
interpreter at class level, so `@triton.jit`, `@triton.autotune` and `@triton.heuristics` kernels are all
seen, however the candidate calls them.  A launch is attributed to the candidate when the kernel's
function was defined in the candidate's file; only launches made while the candidate's forward runs are
recorded (`phase` is set by the worker).

While `ghost` is set (the ghost-replay probe), launches of the candidate's own kernels are recorded but
skipped: the call returns at once, so an output that still matches the reference did not come from them.

While `caller_stream` is set (the CUDA handle of the stream the worker calls forward on), the first launch
of each call onto any other stream is preceded there by a spin kernel of `SIDE_STREAM_STALL_CYCLES`
(about 50 ms).  A forward that joins its side streams back waits for it and is only slower; one that
returns without waiting hands back outputs that are certainly not written yet, so the copies the worker
takes the moment forward returns differ from the final outputs (the `side_work` check), however fast the
side work would have been.

With one hardware queue per context (`PoolOptions.device_connections = 1`, the default) the stall alone is a race:
the copy waits behind the spin and then runs beside the side kernel.  So a launch onto any stream other than the
caller's is also reported by itself (`side_launches`, named in the `side_work` check), whatever the copies show;
the autotuner's own benchmarking is the one exception (`Autotuner._bench`: `do_bench_cudagraph` warms up and
captures on a stream of its own, and synchronises before it returns).

While `watch` is set (the `precomputed` probe, `probes.PriorAnswerWatch`), it is told before and after each
launch of an own kernel, with the launch's arguments: what they held before the kernel ran shows whether the
answer already existed outside the candidate's Triton.

`Autotuner.run` is wrapped too: the config each of the candidate's autotuned kernels settles on is kept in
`autotune` (`autotune.py`, which also holds the interpreter's first-config policy).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tritongym.core.models import LaunchRecord
from tritongym.core.worker.autotune import AutotuneLog, base_function, phase_text, pruning

SIDE_STREAM_STALL_CYCLES = 100_000_000  # about 50 ms at the ~2 GHz SM clock of an H100 or H200


class LaunchRecorder:
    def __init__(self, candidate_file: str) -> None:
        self.candidate_file = candidate_file
        self.phase: Any = None  # e.g. ("trial", 3); None while the reference or harness runs
        self.ghost = False  # skip the candidate's own launches (ghost replay)
        self.caller_stream: int | None = None  # CUDA stream handle forward is called on (None: no stalls)
        self.watch: Any = None  # told before/after each own launch (the `precomputed` probe)
        self._stalled: set[tuple[Any, int]] = set()
        self._side: dict[Any, Counter] = {}  # phase -> kernels launched onto a stream other than the caller's
        self._benching = 0  # inside the autotuner's own benchmarking (`Autotuner._bench`)
        self._counts: dict[Any, Counter] = {}
        self._grids: dict[tuple[Any, str], str] = {}
        self._compiled: dict[tuple[Any, str], str] = {}
        self.own_compiled: set[str] = set()  # compiled names of the candidate's kernels, for the profiler
        self.own_kernels: dict[str, Any] = {}  # compiled name -> compiled kernel (its PTX shows its precision)
        # the config each of the candidate's autotuned kernels picked (autotune.py)
        self.autotune = AutotuneLog(self.is_own_tuner, lambda: phase_text(self.phase))

    def install(self) -> None:
        import triton.runtime.jit as jit

        targets = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            targets.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in targets:
            original = cls.run
            if getattr(original, "_tritongym_recorder", None) is not None:
                continue
            cls.run = self._wrap(original)
        try:
            from triton.runtime.autotuner import Autotuner
        except ImportError:
            return
        original = Autotuner.run  # the config it picks is recorded
        if getattr(original, "_tritongym_recorder", None) is None:
            Autotuner.run = self._tuning(original)
            if callable(getattr(Autotuner, "prune_configs", None)):
                Autotuner.prune_configs = pruning(Autotuner.prune_configs)
            if callable(getattr(Autotuner, "_bench", None)):
                Autotuner._bench = self._benchmarking(Autotuner._bench)

    def _benchmarking(self, original):
        """`Autotuner._bench`, counted: launches it makes (on `do_bench_cudagraph`'s own stream, which it joins)
        are the tuner's, not side work."""
        recorder = self

        def _bench(tuner, *args, **kwargs):
            recorder._benching += 1
            try:
                return original(tuner, *args, **kwargs)
            finally:
                recorder._benching -= 1

        _bench._tritongym_recorder = self  # type: ignore[attr-defined]
        return _bench

    def _tuning(self, original):
        """`Autotuner.run`, with the config it picks for the candidate's kernels recorded in `self.autotune`
        (autotune.py)."""
        recorder = self

        def run(tuner, *args, **kwargs):
            snapshot = recorder.autotune.before(tuner)
            try:
                return original(tuner, *args, **kwargs)
            finally:
                recorder.autotune.after(tuner, snapshot)

        run._tritongym_recorder = self  # type: ignore[attr-defined]
        return run

    def _wrap(self, original):
        recorder = self

        def run(kernel, *args, grid=None, warmup=False, **kwargs):
            if recorder.ghost and not warmup and recorder.is_own(kernel):
                if recorder.phase is not None:
                    recorder._record(kernel, grid, None)
                return None
            if recorder.caller_stream is not None and recorder.phase is not None and not warmup:
                recorder._stall_side_stream(kernel)
            watch = recorder.watch if not warmup and recorder.is_own(kernel) else None
            if watch is not None:
                watch.before(kernel, args, kwargs)
                if callable(grid):  # the candidate's grid callable runs inside the launch: look again after it
                    grid = _watched_grid(grid, watch, kernel, args, kwargs)
            compiled = original(kernel, *args, grid=grid, warmup=warmup, **kwargs)
            if watch is not None:
                watch.after(kernel, args, kwargs)
            if not warmup and recorder.phase is not None:
                recorder._record(kernel, grid, compiled)
            return compiled

        run._tritongym_recorder = self  # type: ignore[attr-defined]
        return run

    def _stall_side_stream(self, kernel) -> None:
        from tritongym.core.measure import trusted

        handle = trusted.current_stream().cuda_stream
        if handle == self.caller_stream or self._benching:
            return
        name = getattr(getattr(kernel, "fn", None), "__name__", type(kernel).__name__)
        self._side.setdefault(self.phase, Counter())[name] += 1
        if (self.phase, handle) not in self._stalled:
            self._stalled.add((self.phase, handle))
            trusted.sleep(SIDE_STREAM_STALL_CYCLES)

    def side_launches(self) -> list[str]:
        """One finding per call whose kernels went onto a stream other than the caller's (the `side_work`
        check's evidence): the caller's stream, and so its timer, never waits for them."""
        return [
            f"{', '.join(f'{name} x{n}' for name, n in sorted(counts.items()))} launched on a stream other than "
            f"the caller's in {phase_text(phase)}"
            for phase, counts in self._side.items()
        ]

    def is_own(self, kernel) -> bool:
        code = getattr(getattr(kernel, "fn", None), "__code__", None)
        return code is not None and code.co_filename == self.candidate_file

    def is_own_tuner(self, tuner) -> bool:
        """Whether an Autotuner wraps (through Heuristics or not) a function defined in the candidate's file."""
        code = getattr(base_function(tuner), "__code__", None)
        return code is not None and code.co_filename == self.candidate_file

    def _record(self, kernel, grid, compiled) -> None:
        fn = getattr(kernel, "fn", None)
        name = getattr(fn, "__name__", type(kernel).__name__)
        own = self.is_own(kernel)
        key = (name, own)
        self._counts.setdefault(self.phase, Counter())[key] += 1
        self._grids.setdefault((self.phase, name), grid if isinstance(grid, str) else _grid_text(grid))
        compiled_name = getattr(compiled, "name", None)
        if isinstance(compiled_name, str):
            self._compiled.setdefault((self.phase, name), compiled_name)
            if own:
                self.own_compiled.add(compiled_name)
                self.own_kernels.setdefault(compiled_name, compiled)

    def records(self, phase: Any) -> list[LaunchRecord]:
        counts = self._counts.get(phase, Counter())
        return [
            LaunchRecord(
                kernel=name,
                own=own,
                count=n,
                grid=self._grids.get((phase, name), ""),
                compiled=self._compiled.get((phase, name), ""),
            )
            for (name, own), n in sorted(counts.items())
        ]


def _watched_grid(grid, watch, kernel, args: tuple, kwargs: dict):
    """The candidate's grid callable, after which the watch samples the arguments again: code in a grid
    lambda runs after the launch began but before the kernel does, and may compute the answer there."""

    def watched(meta):
        value = grid(meta)
        watch.before(kernel, args, kwargs)
        return value

    return watched


def _grid_text(grid) -> str:
    if isinstance(grid, tuple):
        return str(tuple(int(g) if isinstance(g, int) else str(g) for g in grid))
    return "callable" if callable(grid) else str(grid)


def tf32_kernels(own_kernels: dict[str, Any]) -> list[str]:
    """Names of compiled kernels whose PTX multiplies in TF32 (`mma`/`wgmma` with `.tf32` operands)."""
    found = []
    for name, compiled in own_kernels.items():
        asm = getattr(compiled, "asm", None)
        ptx = asm.get("ptx", "") if isinstance(asm, dict) else ""
        if isinstance(ptx, bytes):
            ptx = ptx.decode(errors="replace")
        if any(op in line and ".tf32" in line for line in ptx.splitlines() for op in ("mma", "wgmma")):
            found.append(name)
    return sorted(found)
