"""Software/hardware fingerprints, read without importing torch (the parent process never needs it)."""

from __future__ import annotations

import functools
import importlib.metadata
import platform

from tritongym.core.models import PROTOCOL_VERSION, Fingerprint


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def local_fingerprint(device_name: str = "", driver: str | None = None, cuda: str | None = None) -> Fingerprint:
    return Fingerprint(
        tritongym=_version("tritongym") or "dev",
        python=platform.python_version(),
        torch=_version("torch"),
        triton=_version("triton"),
        platform=platform.platform(terse=True),
        cpu=cpu_name(),
        device_name=device_name or cpu_name(),
        driver=driver,
        cuda=cuda,
        protocol=PROTOCOL_VERSION,
    )
