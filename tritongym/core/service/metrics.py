"""The service's counters, and their Prometheus text exposition (format 0.0.4) for `GET /metrics`.

Hand-written rather than through prometheus_client: a dozen series, no registry of collectors to keep
in step with the service's own state, and one dependency less on the server.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque

from tritongym.core.models import EvaluationResult

RATE_WINDOW_S = 60.0


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class ServiceMetrics:
    """What the service has done since it started; safe to update from every lane at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.submitted = 0
        self.resumed = 0
        self.rejected: Counter[str] = Counter()  # why a request was refused: queue_full, too_large, invalid
        self.verdicts: Counter[str] = Counter()  # evaluations finished, by status
        self.failed = 0  # tasks that finished without a verdict
        self.cache_hits = 0
        self.evaluation_s = 0.0  # lane time of finished tasks
        self._finished_at: deque[float] = deque()

    def count_submitted(self, n: int) -> None:
        with self._lock:
            self.submitted += n

    def count_rejected(self, reason: str, n: int = 1) -> None:
        with self._lock:
            self.rejected[reason] += n

    def count_finished(self, result: EvaluationResult | None, seconds: float) -> None:
        now = time.monotonic()
        with self._lock:
            if result is None:
                self.failed += 1
            else:
                self.verdicts[result.status.value] += 1
                self.cache_hits += bool(result.cached)
            self.evaluation_s += seconds
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
            return sum(self.verdicts.values()) + self.failed

    def uptime_s(self) -> float:
        return time.monotonic() - self.started

    def render(self, *, queued: int, running: int, capacity: int, lanes: int, busy: dict[str, float]) -> str:
        """The Prometheus text format: HELP and TYPE before each family, one sample per line."""
        rate = self.per_second()
        with self._lock:
            families = [
                ("tritongym_queue_depth", "gauge", "Tasks accepted and waiting for a lane.", [("", queued)]),
                ("tritongym_tasks_running", "gauge", "Tasks a lane is evaluating now.", [("", running)]),
                (
                    "tritongym_queue_capacity",
                    "gauge",
                    "Queued plus running tasks the service accepts.",
                    [("", capacity)],
                ),
                ("tritongym_lanes", "gauge", "Evaluations the service runs at once.", [("", lanes)]),
                ("tritongym_tasks_submitted_total", "counter", "Tasks accepted.", [("", self.submitted)]),
                (
                    "tritongym_tasks_resumed_total",
                    "counter",
                    "Unfinished tasks found at start-up and queued again.",
                    [("", self.resumed)],
                ),
                (
                    "tritongym_requests_rejected_total",
                    "counter",
                    "Requests refused, by reason.",
                    [(f'{{reason="{_label(r)}"}}', n) for r, n in sorted(self.rejected.items())],
                ),
                (
                    "tritongym_evaluations_total",
                    "counter",
                    "Tasks finished with a verdict, by status.",
                    [(f'{{status="{_label(s)}"}}', n) for s, n in sorted(self.verdicts.items())],
                ),
                (
                    "tritongym_tasks_failed_total",
                    "counter",
                    "Tasks finished without a verdict.",
                    [("", self.failed)],
                ),
                (
                    "tritongym_cache_hits_total",
                    "counter",
                    "Verdicts answered from the registry without running a worker.",
                    [("", self.cache_hits)],
                ),
                (
                    "tritongym_evaluation_seconds_total",
                    "counter",
                    "Lane seconds spent on finished tasks.",
                    [("", round(self.evaluation_s, 6))],
                ),
                (
                    "tritongym_evaluations_per_second",
                    "gauge",
                    f"Tasks finished per second over the last {RATE_WINDOW_S:g} s.",
                    [("", round(rate, 6))],
                ),
                (
                    "tritongym_device_busy_seconds_total",
                    "counter",
                    "Seconds workers spent on tasks, per device, summed over its workers.",
                    [(f'{{device="{_label(d)}"}}', round(s, 6)) for d, s in sorted(busy.items())],
                ),
                ("tritongym_uptime_seconds", "gauge", "Seconds since the service started.", [("", self.uptime_s())]),
            ]
        lines = []
        for name, kind, doc, samples in families:
            lines.append(f"# HELP {name} {doc}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{name}{labels} {value!r}" for labels, value in samples)
        return "\n".join(lines) + "\n"
