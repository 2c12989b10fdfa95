"""GPU timing inside the worker (ARCHITECTURE.md §3): what `runtime_ms` means on the `triton-cuda` backend.

One function, `time_forward`, times the reference and the candidate alike:

* warm-up by time (compilation, autotuning, lazy handles stay out of the numbers), then an estimate;
* the forward is captured in a CUDA graph and each sample replays it between two events on one stream.
  A capture only succeeds when every side stream the forward forks joins back, so the end event waits
  for all of the forward's work; work that escapes the capture is not replayed, and the outputs of the
  timed calls (checked against the reference) are then wrong;
* a forward whose one-call graph replay takes less than `fast_us` of device time is replayed
  `calls_per_sample` times per sample from one graph, so a ~5 µs launch overhead does not swamp a 10 µs
  kernel; its calls rotate over enough input copies to
  exceed the L2 cache where memory allows;
* slower forwards get the L2 flushed (a buffer twice the L2 size zeroed) before every sample, outside
  the timed window;
* a forward that cannot be captured (it synchronises, or leaves a side stream unjoined) is timed eagerly:
  the device is synchronised before the start event and again before the end event, so side streams
  cannot hide work, and the event/synchronise overhead (calibrated once) is subtracted; its host launch
  time counts, which the result states;
* between samples every input buffer is refreshed in place with another trial's values (same pointers,
  new contents), so a cache keyed on pointers or call counts returns stale outputs that fail the check.

The number of samples follows a time budget (`rep_ms`), clamped to [min_samples, max_samples]; the
median and the interquartile range are reported with the count.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from tritongym.core.measure import trusted
from tritongym.core.models import TimingStats
from tritongym.core.worker_task import TimingOptions

Forward = Callable[[list], object]


@dataclass
class InputSets:
    """K input buffers refreshed in place from T pristine trial inputs: buffer k holds trial (k+r) % T."""

    pristine: list[list]
    buffers: list[list]
    round: int = 0
    loaded: list[int] = field(default_factory=list)

    @classmethod
    def make(cls, pristine: list[list], count: int) -> InputSets:
        buffers = [
            [v.clone() if isinstance(v, torch.Tensor) else v for v in pristine[k % len(pristine)]] for k in range(count)
        ]
        return cls(pristine, buffers, 0, [k % len(pristine) for k in range(count)])

    def refresh(self, round: int | None = None) -> None:
        """New values into the same memory: the next trial's inputs for every buffer (or round `round`'s)."""
        self.round = self.round + 1 if round is None else round
        for k, buf in enumerate(self.buffers):
            j = (k + self.round) % len(self.pristine)
            for dst, src in zip(buf, self.pristine[j]):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
            self.loaded[k] = j


def set_bytes(values: list) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


class Timer:
    """Per-worker timing state: the L2 flush buffer and the eager-mode overhead, measured once."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        props = torch.cuda.get_device_properties(device)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
        self.flush_buffer = torch.empty(2 * self.l2_bytes // 4, dtype=torch.int32, device=device)
        self.capture_stream = torch.cuda.Stream(device)
        self.eager_overhead_ms: float | None = None  # measured when first needed, with the GPU held alone

    def flush(self) -> None:
        self.flush_buffer.zero_()

    def _calibrate_eager(self) -> float:
        """What an empty eager window measures: synchronize, start, synchronize, end."""
        pairs = []
        for _ in range(30):
            self.flush()
            trusted.synchronize()
            start, end = _events()
            trusted.record(start)
            trusted.synchronize()
            trusted.record(end)
            pairs.append((start, end))
        trusted.synchronize()
        return statistics.median(trusted.elapsed_time(s, e) for s, e in pairs[5:])

    # --- the one entry point ------------------------------------------------------------------------

    def time_forward(
        self, forward: Forward, pristine: list[list], options: TimingOptions, rep_ms: float | None = None
    ) -> tuple[TimingStats, list[tuple[int, object]]]:
        """Time `forward(inputs)`; returns the stats and (trial index, outputs) of the last timed calls."""
        rep_ms = options.rep_ms if rep_ms is None else rep_ms
        with torch.no_grad():
            estimate_ms = self._warm_up(forward, pristine, options.warmup_ms)
            calls, l2, fast = 1, "flushed", False
            sets = InputSets.make(pristine, 1)
            graph, outputs, why = self._capture(forward, sets, 1)
            if graph is not None:
                # The batching decision uses the device time of one graph replay: an eager estimate
                # includes host launch time, which is noisy and made a 37 µs kernel flip between modes.
                estimate_ms = self._graph_estimate(graph)
                fast = estimate_ms * 1000 < options.fast_us
            if fast:
                calls = max(2, min(256, math.ceil(options.graph_batch_us / max(estimate_ms * 1000, 1.0))))
                per_set = max(1, set_bytes(pristine[0]))
                want = max(1, math.ceil(2 * self.l2_bytes / per_set))
                count = min(calls, want, 64, max(1, (1 << 30) // per_set))
                l2 = "rotated" if count * per_set >= 2 * self.l2_bytes else "warm"
                del graph, outputs
                sets = None  # the one-set buffers gone before the batch's are made: a full-size set is GiBs
                sets = InputSets.make(pristine, count)
                graph, outputs, why = self._capture(forward, sets, calls)
            if graph is not None:
                samples = self._sample_graph(graph, sets, calls, fast, estimate_ms, rep_ms, options)
                mode = "graph-batched" if fast else "graph"
                note = f"{calls} forwards per sample, one CUDA graph" if fast else ""
            else:
                sets = None  # the failed capture's buffers gone before the eager ones are made
                sets = InputSets.make(pristine, 1)
                l2 = "flushed"
                calls = 1
                samples = self._sample_eager(forward, sets, estimate_ms, rep_ms, options)
                mode = "eager"
                note = f"not capturable as a CUDA graph ({why}); host launch time included"
            # One more call whose inputs hold values no buffer held when it was first used or captured
            # (round 1 mod T), so outputs cached by pointer, shape or call count are stale and caught.
            sets.refresh(len(pristine) * (sets.round // len(pristine) + 1) + 1)
            if graph is not None:
                graph.replay()
            else:
                outputs = [forward(sets.buffers[0])]
            trusted.synchronize()
        last = _last_outputs(outputs, sets, calls)
        q = statistics.quantiles(samples, n=4) if len(samples) >= 2 else [samples[0]] * 3
        stats = TimingStats(
            median_ms=statistics.median(samples),
            iqr_ms=q[2] - q[0],
            samples=len(samples),
            mode=mode,
            calls_per_sample=calls,
            l2=l2,
            note=note,
        )
        return stats, last

    # --- stages ---------------------------------------------------------------------------------------

    def _warm_up(self, forward: Forward, pristine: list[list], warmup_ms: float) -> float:
        """Call until `warmup_ms` has passed (at least twice), then estimate one forward's time."""
        inputs = pristine[0]
        began = time.perf_counter()
        calls = 0
        while calls < 2 or (time.perf_counter() - began) * 1000 < warmup_ms:
            forward(inputs)
            calls += 1
            if calls % 8 == 0 or calls < 3:
                trusted.synchronize()
            if calls >= 10_000:
                break
        trusted.synchronize()
        pairs = []
        for _ in range(3):
            start, end = _events()
            trusted.record(start)
            forward(inputs)
            trusted.record(end)
            pairs.append((start, end))
        trusted.synchronize()
        return min(trusted.elapsed_time(s, e) for s, e in pairs)

    def _graph_estimate(self, graph) -> float:
        """Median device time of five replays of a one-forward graph, L2 flushed before each."""
        pairs = []
        _preroll()
        for _ in range(5):
            self.flush()
            start, end = _events()
            trusted.record(start)
            graph.replay()
            trusted.record(end)
            pairs.append((start, end))
        trusted.synchronize()
        return statistics.median(trusted.elapsed_time(s, e) for s, e in pairs)

    def _capture(self, forward: Forward, sets: InputSets, calls: int):
        """One CUDA graph of `calls` forwards over the buffers; (None, None, why) when it cannot be built."""
        stream = self.capture_stream
        try:
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for k in range(min(2, len(sets.buffers))):
                    forward(sets.buffers[k])
            torch.cuda.current_stream().wait_stream(stream)
            trusted.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                outputs = [forward(sets.buffers[i % len(sets.buffers)]) for i in range(calls)]
            graph.replay()
            trusted.synchronize()
            return graph, outputs, ""
        except Exception as exc:  # noqa: BLE001 - any failure to capture means: time it eagerly
            _settle()
            return None, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"

    def _sample_count(self, sample_ms: float, rep_ms: float, options: TimingOptions) -> int:
        return max(options.min_samples, min(options.max_samples, int(rep_ms / max(sample_ms, 1e-4))))

    def _sample_graph(self, graph, sets, calls, fast, estimate_ms, rep_ms, options) -> list[float]:
        n = self._sample_count(estimate_ms * calls, rep_ms, options)
        pairs = []
        _preroll()
        for _ in range(n):
            sets.refresh()
            if not fast:
                self.flush()
            start, end = _events()
            trusted.record(start)
            graph.replay()
            trusted.record(end)
            pairs.append((start, end))
        trusted.synchronize()
        return [trusted.elapsed_time(s, e) / calls for s, e in pairs]

    def _sample_eager(self, forward, sets, estimate_ms, rep_ms, options):
        # calibrated here, under the exclusive GPU lock: measured while other processes' kernels run, the
        # empty window would include their time and the subtraction would erase real work
        self.eager_overhead_ms = self._calibrate_eager()
        n = self._sample_count(estimate_ms, rep_ms, options)
        pairs = []
        for _ in range(n):
            sets.refresh()
            self.flush()
            trusted.synchronize()
            start, end = _events()
            trusted.record(start)
            forward(sets.buffers[0])
            trusted.synchronize()  # device-wide: work on any stream ends inside the window
            trusted.record(end)
            pairs.append((start, end))
        trusted.synchronize()
        return [max(trusted.elapsed_time(s, e) - self.eager_overhead_ms, 1e-6) for s, e in pairs]


PREROLL_CYCLES = 2_000_000  # about 1 ms at the ~2 GHz SM clock of an H100 or H200


def _preroll() -> None:
    """Keep the GPU busy (a spin kernel) while the host enqueues the samples that follow.

    Each sample is start event, replay, end event; if the GPU is idle, a host thread descheduled between
    them (other workers compile on the same CPUs) leaves a gap inside the timed window.  Once the GPU is
    behind the host it stays behind, since a sample takes longer on the device than to enqueue."""
    trusted.sleep(PREROLL_CYCLES)


def _events():
    return trusted.timing_events()


def _settle() -> None:
    try:
        trusted.synchronize()
    except Exception:  # noqa: BLE001 - a sticky error surfaces on the next real call
        pass


def _last_outputs(outputs, sets: InputSets, calls: int) -> list[tuple[int, object]]:
    """For each buffer, the outputs of the last call that read it, with the trial its values came from."""
    if outputs is None:
        return []
    last: dict[int, object] = {}
    for i in range(calls if len(outputs) >= calls else len(outputs)):
        last[i % len(sets.buffers)] = outputs[i]
    return [(sets.loaded[k], out) for k, out in sorted(last.items())][:2]


def measure_copy_bandwidth(device: torch.device, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written (the roofline)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    trusted.synchronize()
    pairs = []
    for _ in range(10):
        start, end = _events()
        trusted.record(start)
        dst.copy_(src)
        trusted.record(end)
        pairs.append((start, end))
    trusted.synchronize()
    ms = statistics.median(trusted.elapsed_time(s, e) for s, e in pairs)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (ms * 1e-3) / 1e9
