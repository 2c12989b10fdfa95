"""Triton's own compiled helper, built once in the fork server and written into every worker's fresh cache.

Each GPU worker gets a Triton cache folder of its own (`TRITON_CACHE_DIR` in its private folder): no candidate
can leave a compiled kernel or launcher behind for the next one to load.  The price was that every worker, at its
candidate's first launch, built Triton's CUDA utilities (`cuda_utils`: `driver.c`, about 500 lines of C through
`gcc -O3`, 0.4 s on this project's CPUs) before anything of the candidate ran, on the critical path of every
evaluation, warm pools included.

That module is Triton's, not the candidate's: the same source for every worker of one installation.  So the fork
server builds it once, before it forks anything (`build`), and keeps the cache's files *as bytes in its own
memory*; each forked worker writes them into its own empty cache folder (`seed`) before it serves, where Triton
finds them by its usual content hash and loads them instead of compiling.  Nothing is shared on disk between
workers: a candidate that overwrote its copy changed only its own process, as before.

Building needs a CUDA toolchain's headers that Triton ships, a C compiler and `libcuda.so.1`; where any is missing
(this project's CPU machines) `build` keeps nothing and workers build as before.  Loading the module into the fork
server links `libcuda.so.1` without calling `cuInit`, so forking afterwards stays safe; the worker makes Triton's
driver itself, after its CUDA context (`activate`), in its start-up rather than in its first task.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("tritongym.worker")

CACHE_ENV = "TRITON_CACHE_DIR"
MAX_SEED_BYTES = 64 << 20  # a cache that grew past this is not what `build` made: keep nothing

_seed: list[tuple[str, bytes]] = []


def collect(cache_dir: str) -> list[tuple[str, bytes]]:
    """Every file under `cache_dir`, as (path relative to it, content): what a fresh cache needs to hold the same
    entries.  Left out: Triton's half-written files (in `tmp.*` folders) and its groups (`__grp__*`, which name
    their members by absolute paths into this cache, so they would point a worker back here)."""
    found: list[tuple[str, bytes]] = []
    total = 0
    for root, dirs, files in os.walk(cache_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("tmp."))
        for name in sorted(files):
            if name == "lock" or name.startswith("__grp__"):
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                data = f.read()
            total += len(data)
            if total > MAX_SEED_BYTES:
                return []
            found.append((os.path.relpath(path, cache_dir), data))
    return found


def write(cache_dir: str, files: list[tuple[str, bytes]]) -> int:
    """Write `files` (from `collect`) into `cache_dir`; how many were written.  Paths that would leave the folder
    are skipped (they come from this process's own memory, but the check costs nothing)."""
    written = 0
    root = os.path.realpath(cache_dir)
    for relative, data in files:
        path = os.path.realpath(os.path.join(root, relative))
        if os.path.commonpath([root, path]) != root:
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        written += 1
    return written


def build() -> int:
    """In the fork server, before any fork: compile Triton's CUDA utilities into this process's cache and keep the
    cache's files in memory for `seed`; how many files were kept (0 where Triton cannot build them here)."""
    cache_dir = os.environ.get(CACHE_ENV)
    if not cache_dir:
        return 0
    try:
        from triton.backends.nvidia.driver import CudaUtils, library_dirs

        library_dirs()  # `ldconfig -p`, once: the answer is cached per process, and the fork keeps it
        CudaUtils()
    except Exception as exc:  # noqa: BLE001 - no GPU toolchain here: workers build it themselves, as before
        log.debug("Triton's CUDA utilities not built in the fork server: %s", exc)
        return 0
    _seed[:] = collect(cache_dir)
    return len(_seed)


def seed() -> int:
    """In a forked worker, after its environment is set: write what `build` kept into the worker's own cache."""
    cache_dir = os.environ.get(CACHE_ENV)
    if not _seed or not cache_dir:
        return 0
    try:
        return write(cache_dir, _seed)
    except OSError as exc:  # a full or unwritable folder: Triton builds what it lacks, as it always did
        log.warning("could not seed the worker's Triton cache %s: %s", cache_dir, exc)
        return 0


def activate() -> None:
    """Make Triton's active driver now, in the worker's start-up after its CUDA context (the seeded `cuda_utils`
    loads in milliseconds; unseeded, it compiles here instead of in the first task)."""
    try:
        from triton.runtime import driver

        driver.active.get_current_target()
    except Exception as exc:  # noqa: BLE001 - the first launch makes it, and says what is wrong, as before
        log.debug("Triton's driver not made at start-up: %s", exc)
