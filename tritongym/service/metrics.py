"""The service's metrics for `GET /metrics`, through prometheus_client.

prometheus_client rather than a hand-written exposition: its counters, gauges and histograms are what every
Prometheus user reads, the text format (escaping, `+Inf`, HELP/TYPE) is its problem, and the process
collector adds the process's CPU, memory and open files for free.  Each service has its own
`CollectorRegistry`, never the library's global one: several services in one process (the tests) would
otherwise register the same names twice.  Multiprocess mode does not apply: the service is one process
(its lanes are threads; sandboxes and Ray actors report through the backend's busy seconds).

Values the service already knows on demand (queue sizes, lanes, busy seconds per device from the backend)
are read when scraped, by `Gauge.set_function` and one small collector, rather than copied on every change.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from tritongym.core.models import EvaluationResult

RATE_WINDOW_S = 60.0
# lane seconds of one task: a cache hit takes milliseconds, a timed candidate seconds, a hang its time limit
TASK_SECONDS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class _BusySeconds(Collector):
    """`tritongym_device_busy_seconds_total{device=...}`: read from the backend at each scrape, since the
    devices (and Ray actors) are the backend's to know, and a label set cannot be a `set_function`."""

    def __init__(self, busy: Callable[[], dict[str, float]]) -> None:
        self._busy = busy

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "tritongym_device_busy_seconds",
            "Seconds workers spent on tasks, per device, summed over its workers.",
            labels=["device"],
        )
        for device, seconds in sorted(self._busy().items()):
            family.add_metric([device], seconds)
        yield family


class ServiceMetrics:
    """What the service has done since it started; safe to update from every lane at once.

    `counts` answers (queued, running) and `busy` the backend's busy seconds per device; both are called
    at each scrape."""

    def __init__(
        self,
        *,
        counts: Callable[[], tuple[int, int]],
        capacity: int,
        lanes: int,
        busy: Callable[[], dict[str, float]],
    ) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self._finished = 0
        self._finished_at: deque[float] = deque()
        self.registry = CollectorRegistry()
        r = self.registry
        Gauge("tritongym_queue_depth", "Tasks accepted and waiting for a lane.", registry=r).set_function(
            lambda: counts()[0]
        )
        Gauge("tritongym_tasks_running", "Tasks a lane is evaluating now.", registry=r).set_function(
            lambda: counts()[1]
        )
        Gauge("tritongym_queue_capacity", "Queued plus running tasks the service accepts.", registry=r).set(capacity)
        Gauge("tritongym_lanes", "Evaluations the service runs at once.", registry=r).set(lanes)
        self.submitted = Counter("tritongym_tasks_submitted_total", "Tasks accepted.", registry=r)
        self.resumed = Counter(
            "tritongym_tasks_resumed_total", "Unfinished tasks found at start-up and queued again.", registry=r
        )
        self.rejected = Counter(
            "tritongym_requests_rejected_total",
            "Requests refused, by reason.",
            ["reason"],  # queue_full, too_large, invalid, unauthenticated, forbidden
            registry=r,
        )
        self.verdicts = Counter(
            "tritongym_evaluations_total", "Tasks finished with a verdict, by status.", ["status"], registry=r
        )
        self.failed = Counter("tritongym_tasks_failed_total", "Tasks finished without a verdict.", registry=r)
        self.cache_hits = Counter(
            "tritongym_cache_hits_total",
            "Verdicts answered from the registry without running a worker.",
            registry=r,
        )
        self.evaluation_s = Counter(
            "tritongym_evaluation_seconds_total", "Lane seconds spent on finished tasks.", registry=r
        )
        self.task_seconds = Histogram(
            "tritongym_task_duration_seconds",
            "Lane seconds of each finished task, with a verdict or without.",
            buckets=TASK_SECONDS_BUCKETS,
            registry=r,
        )
        Gauge(
            "tritongym_evaluations_per_second",
            f"Tasks finished per second over the last {RATE_WINDOW_S:g} s.",
            registry=r,
        ).set_function(self.per_second)
        Gauge("tritongym_uptime_seconds", "Seconds since the service started.", registry=r).set_function(self.uptime_s)
        r.register(_BusySeconds(busy))
        ProcessCollector(registry=r)

    def count_submitted(self, n: int) -> None:
        self.submitted.inc(n)

    def count_resumed(self, n: int) -> None:
        self.resumed.inc(n)

    def count_rejected(self, reason: str, n: int = 1) -> None:
        self.rejected.labels(reason=reason).inc(n)

    def count_finished(self, result: EvaluationResult | None, seconds: float) -> None:
        if result is None:
            self.failed.inc()
        else:
            self.verdicts.labels(status=result.status.value).inc()
            if result.cached:
                self.cache_hits.inc()
        self.evaluation_s.inc(seconds)
        self.task_seconds.observe(seconds)
        now = time.monotonic()
        with self._lock:
            self._finished += 1
            self._finished_at.append(now)
            self._trim(now)

    def _trim(self, now: float) -> None:
        while self._finished_at and self._finished_at[0] < now - RATE_WINDOW_S:
            self._finished_at.popleft()

    def per_second(self) -> float:
        """Tasks finished per second over the last minute (or since the start, if that is sooner)."""
        now = time.monotonic()
        with self._lock:
            self._trim(now)
            span = min(RATE_WINDOW_S, max(now - self.started, 1e-9))
            return len(self._finished_at) / span

    def finished(self) -> int:
        """Tasks finished since the start, with a verdict or without."""
        with self._lock:
            return self._finished

    def uptime_s(self) -> float:
        return time.monotonic() - self.started

    def render(self) -> bytes:
        """The Prometheus text format (`CONTENT_TYPE`, the library's latest) of every metric in this registry."""
        return generate_latest(self.registry)
