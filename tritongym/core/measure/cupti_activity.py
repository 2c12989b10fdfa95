"""The kernel table's device events read from CUPTI's activity API directly (ctypes on libcupti), not through
`torch.profiler`.

Why: every fresh GPU worker paid 4-6 s for torch.profiler's first session, the largest part of a cold `eval` and
of a replacement worker's start.  On an H200 (`benchmarks/cupti_setup.py`, `benchmarks/results/cupti_setup-h200.json`)
CUPTI itself is not that cost: loading it and registering the buffer callbacks took 0.02 s, enabling each activity
kind microseconds, and torch.profiler's first session still took 5.6-6.1 s *after* that.  The seconds are Kineto's
own set-up.  The same run found CUPTI sees kernels of modules loaded before its set-up (3 of 3), so unlike Kineto
it can be set up when the first profile is taken.

Only what `gpu_profile.profile_forward` reads is parsed: a concurrent kernel's, memcpy's and memset's start and
end, and a kernel's name.  Those fields sit where every record version since `CUpti_ActivityKernel4` (and
`Memcpy`/`Memset`) put them, up to CUDA 13's headers; a record that reads as nonsense (an end before its start,
a kernel without a name) raises `CuptiLayoutError`, and the caller falls back to torch.profiler.

One process has one set of activity callbacks: Kineto registers its own when torch.profiler runs, so a process
uses one or the other (`PoolOptions.profiler_warm_up = "cupti"` picks this one for the pool's workers).
"""

from __future__ import annotations

import ctypes
import glob
import threading
from dataclasses import dataclass
from pathlib import Path

MEMCPY, MEMSET, CONCURRENT_KERNEL = 1, 2, 10
KINDS = (CONCURRENT_KERNEL, MEMCPY, MEMSET)
BUFFER_BYTES = 4 << 20
# offsets in the records (packed, 8-byte aligned): kind at 0 in all; start and end at 16 and 24 in all three;
# a kernel's name pointer at 104 (after deviceId..correlationId at 40-95 and the 64-bit gridId at 96); a
# memcpy's copy kind at byte 4
START, END, DEVICE_ID, KERNEL_NAME, COPY_KIND = 16, 24, 40, 104, 4
COPY_KINDS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}

_REQUEST = ctypes.CFUNCTYPE(
    None,
    ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
    ctypes.POINTER(ctypes.c_size_t),
    ctypes.POINTER(ctypes.c_size_t),
)
_COMPLETE = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t, ctypes.c_size_t
)


class CuptiUnavailable(RuntimeError):
    """No libcupti to load, or CUPTI refused a call (another subscriber, an old driver)."""


class CuptiLayoutError(RuntimeError):
    """A record did not read as its kind's layout: this CUPTI's records are not the ones this module parses."""


@dataclass(frozen=True)
class DeviceEvent:
    """One kernel, memcpy or memset on the device, as torch.profiler's device events give them."""

    name: str
    start_ns: int
    end_ns: int

    @property
    def elapsed_us(self) -> float:
        return (self.end_ns - self.start_ns) / 1000


def library_path() -> str:
    """The libcupti this process already mapped (torch's, when it loaded one), else the first under
    site-packages' `nvidia/` (torch's CUDA wheels ship it there)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcupti" in line:
                return line.split()[-1]
    import torch

    found = sorted(
        glob.glob(str(Path(torch.__file__).parent.parent / "nvidia" / "**" / "libcupti.so*"), recursive=True)
    )
    if not found:
        raise CuptiUnavailable("no libcupti: none mapped in this process and none under site-packages/nvidia")
    return found[0]


def demangle(name: str) -> str:
    """A C++ kernel name as torch.profiler shows it (Triton's kernels are C names and come back unchanged)."""
    if not name.startswith("_Z"):
        return name
    try:
        cxa = ctypes.CDLL("libstdc++.so.6").__cxa_demangle
    except (OSError, AttributeError):
        return name
    cxa.restype = ctypes.c_void_p
    cxa.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    status = ctypes.c_int()
    out = cxa(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not out:
        return name
    try:
        return ctypes.string_at(out).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(out))


def parse_record(address: int) -> DeviceEvent | None:
    """The device event at one record's address (None for a kind the table does not read)."""
    kind = ctypes.c_uint32.from_address(address).value
    if kind not in KINDS:
        return None
    start = ctypes.c_uint64.from_address(address + START).value
    end = ctypes.c_uint64.from_address(address + END).value
    if end < start:
        raise CuptiLayoutError(f"a kind-{kind} record ends ({end}) before it starts ({start})")
    if kind == CONCURRENT_KERNEL:
        device = ctypes.c_uint32.from_address(address + DEVICE_ID).value
        if device > 1024:  # checked before the name pointer is followed: a wrong layout is refused, not read
            raise CuptiLayoutError(f"a kernel record on device {device}")
        pointer = ctypes.c_void_p.from_address(address + KERNEL_NAME).value
        if not pointer:
            raise CuptiLayoutError("a kernel record without a name")
        name = demangle(ctypes.string_at(pointer).decode(errors="replace"))
    elif kind == MEMCPY:
        copy = ctypes.c_uint8.from_address(address + COPY_KIND).value
        name = f"Memcpy {COPY_KINDS.get(copy, 'Unknown')}"
    else:
        name = "Memset (Device)"
    return DeviceEvent(name, start, end)


class ActivityTrace:
    """CUPTI's activity API for one process: buffers handed to CUPTI on request, the device events of the kinds
    in `KINDS` parsed as CUPTI completes them, `collect` around one window."""

    def __init__(self, path: str | None = None) -> None:
        try:
            self.lib = ctypes.CDLL(path or library_path())
        except OSError as exc:
            raise CuptiUnavailable(f"libcupti would not load: {exc}") from exc
        self._buffers: dict[int, ctypes.Array] = {}
        self._events: list[DeviceEvent] = []
        self._error: Exception | None = None
        self._lock = threading.Lock()  # CUPTI completes buffers on its own thread
        self._request = _REQUEST(self._on_request)  # kept alive: CUPTI holds these pointers
        self._complete = _COMPLETE(self._on_complete)
        self.check("cuptiActivityRegisterCallbacks", self._request, self._complete)

    def check(self, name: str, *args) -> None:
        result = getattr(self.lib, name)(*args)
        if result != 0:
            text = ctypes.c_char_p()
            self.lib.cuptiGetResultString(result, ctypes.byref(text))
            raise CuptiUnavailable(f"{name}: CUPTI error {result} ({(text.value or b'').decode()})")

    def _on_request(self, buffer, size, max_records) -> None:
        raw = (ctypes.c_uint8 * (BUFFER_BYTES + 8))()
        address = (ctypes.addressof(raw) + 7) & ~7  # CUPTI wants 8-byte alignment
        with self._lock:
            self._buffers[address] = raw
        buffer[0] = ctypes.cast(address, ctypes.POINTER(ctypes.c_uint8))
        size[0] = BUFFER_BYTES
        max_records[0] = 0

    def _on_complete(self, _context, _stream, buffer, _size, valid) -> None:
        record = ctypes.c_void_p()
        found: list[DeviceEvent] = []
        try:
            while self.lib.cuptiActivityGetNextRecord(buffer, ctypes.c_size_t(valid), ctypes.byref(record)) == 0:
                event = parse_record(record.value)
                if event is not None:
                    found.append(event)
        except CuptiLayoutError as exc:  # raised to the caller of `collect`, not on CUPTI's thread
            self._error = exc
        with self._lock:
            self._events.extend(found)
            self._buffers.pop(ctypes.addressof(buffer.contents), None)

    def take(self) -> list[DeviceEvent]:
        """Every device event recorded since the last `take`: CUPTI's buffers flushed, then handed over."""
        self.check("cuptiActivityFlushAll", ctypes.c_uint32(1))
        error, self._error = self._error, None
        with self._lock:
            events, self._events = self._events, []
        if error is not None:
            raise error
        return events

    def collect(self, window) -> list[DeviceEvent]:
        """The device events of `window()` (which must synchronize the device before it returns)."""
        from tritongym.core.measure import trusted

        trusted.synchronize()  # the primitive saved before any candidate ran: a replaced one would cut the window
        self.take()  # nothing from before the window
        for kind in KINDS:
            self.check("cuptiActivityEnable", ctypes.c_int(kind))
        try:
            window()
        finally:
            for kind in KINDS:
                self.check("cuptiActivityDisable", ctypes.c_int(kind))
        return self.take()


_trace: ActivityTrace | None = None
_trace_lock = threading.Lock()


def trace() -> ActivityTrace:
    """This process's one `ActivityTrace`, set up on first use (~0.02 s on an H200)."""
    global _trace
    with _trace_lock:
        if _trace is None:
            _trace = ActivityTrace()
        return _trace
