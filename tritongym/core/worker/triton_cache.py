"""Triton's own compiled helpers, built once in the fork server and written into every worker's fresh cache.

Each GPU worker gets a Triton cache folder of its own (`TRITON_CACHE_DIR` in its private folder): no candidate
can leave a compiled kernel or launcher behind for the next one to load.  The price was that every worker, at its
candidate's first launch, built Triton's CUDA utilities (`cuda_utils`: `driver.c`, about 500 lines of C through
`gcc -O3`, 0.4 s on this project's CPUs) before anything of the candidate ran, on the critical path of every
evaluation, warm pools included.

That module is Triton's, not the candidate's: the same source for every worker of one installation.  So the fork
server has a child of its own build it once (`build_utils`), then keeps the cache's files *as bytes in its own
memory* (`reseed`); each worker forked after that writes them into its own empty cache folder (`seed`) before it
serves, where Triton finds them by its usual content hash and loads them instead of compiling.  Nothing is shared
on disk between workers: a candidate that overwrote its copy changed only its own process, as before.

The same holds for Triton's *launchers* (Triton 3.6 and earlier): the C glue that calls a compiled kernel, one
module per kernel signature, compiled with gcc at a kernel's first launch (0.2-0.3 s).  Its source is made by
Triton from the signature's argument types alone (no value, no name, no candidate code), so a worker reports the
signatures it launched (`launcher_signatures`, in its evidence), the pool passes them to the fork server, which
checks every type against Triton's type names (`plan_launchers`), has Triton generate and compile each new one
once in a child of its own (`build_planned`: no fork waits for gcc; at most `MAX_LAUNCHERS` in a fork server's
life), and seeds the workers forked after that child ended with them too (`reseed`).  A
hostile worker can only make the fork server compile launchers for well-formed signatures.

Building needs a CUDA toolchain's headers that Triton ships, a C compiler and `libcuda.so.1`; where any is missing
(this project's CPU machines) nothing is kept and workers build as before.  Every build runs in a child the fork
server forks (no CUDA there either), so no fork waits for gcc; a worker forked before the utilities are kept makes
Triton's driver itself, after its CUDA context (`activate`), in its start-up rather than in its first task.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable

log = logging.getLogger("tritongym.worker")

CACHE_ENV = "TRITON_CACHE_DIR"
MAX_SEED_BYTES = 64 << 20  # a cache that grew past this is not what `build` made: keep nothing

MAX_LAUNCHERS = 64  # launchers one fork server builds in its life: every worker's seed is written at its fork
MAX_SIGNATURES_PER_TASK = 8
MAX_ARGUMENTS = 128
_SCALAR = r"(i1|i8|i16|i32|i64|u1|u8|u16|u32|u64|fp8e4nv|fp8e4b15|fp8e4b8|fp8e5|fp8e5b16|fp16|bf16|fp32|fp64)"
ARGUMENT_TYPE = re.compile(rf"^(\*k?{_SCALAR}|{_SCALAR}|constexpr)$")
"""A kernel argument's type as Triton's signatures spell it: a pointer to a scalar, a scalar, or a constexpr.
Tensor descriptors and tuples are left to the worker (their launchers depend on more than the types)."""

_seed: list[tuple[str, bytes]] = []
_launchers: set[str] = set()  # digests of the launcher sources built here


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


def build_utils() -> bool:
    """Compile Triton's CUDA utilities into this process's cache (the fork server has a child of its own do it, so
    that its first forks do not wait for gcc); whether they were built (False where Triton cannot build them here)."""
    if not os.environ.get(CACHE_ENV):
        return False
    try:
        from triton.backends.nvidia.driver import CudaUtils, library_dirs

        library_dirs()  # `ldconfig -p`, once: the answer is cached per process
        CudaUtils()
    except Exception as exc:  # noqa: BLE001 - no GPU toolchain here: workers build it themselves, as before
        log.debug("Triton's CUDA utilities not built in the fork server: %s", exc)
        return False
    return True


def build() -> int:
    """`build_utils` and `reseed` in this process: how many files the seed now holds."""
    return reseed() if build_utils() else 0


def valid_signature(signature: object) -> list[str] | None:
    """`signature` as a list of Triton argument types when every one is well-formed (`ARGUMENT_TYPE`), else None."""
    if not isinstance(signature, (list, tuple)) or not 0 < len(signature) <= MAX_ARGUMENTS:
        return None
    if not all(isinstance(t, str) and ARGUMENT_TYPE.match(t) for t in signature):
        return None
    return list(signature)


def launcher_signatures(kernels: Iterable[object]) -> list[list[str]]:
    """In a worker, after its task: the argument types of the compiled kernels it launched (Triton's
    `CompiledKernel.src.signature`), each signature once; kernels with tensor descriptors are left out."""
    found: list[list[str]] = []
    for compiled in kernels:
        try:
            if getattr(getattr(compiled, "metadata", None), "tensordesc_meta", None):
                continue
            types = getattr(getattr(compiled, "src", None), "signature", None)
            signature = valid_signature(list(types.values())) if isinstance(types, dict) else None
        except Exception:  # noqa: BLE001 - a hint, never the verdict: an odd kernel object is left out
            continue
        if signature is not None and signature not in found:
            found.append(signature)
    return found[:MAX_SIGNATURES_PER_TASK]


def plan_launchers(signatures: object) -> list[list[str]]:
    """In the fork server: of `signatures`, the well-formed ones whose launcher is neither built nor planned yet (at
    most `MAX_LAUNCHERS` in a fork server's life), marked planned.  Empty on a Triton without per-signature
    launchers."""
    if not os.environ.get(CACHE_ENV) or not isinstance(signatures, list):
        return []
    try:
        from triton.backends.nvidia.driver import make_launcher
    except Exception:  # noqa: BLE001 - a Triton without per-signature launchers: nothing to build
        return []
    plan = []
    for signature in signatures[:MAX_SIGNATURES_PER_TASK]:
        types = valid_signature(signature)
        if types is None or len(_launchers) >= MAX_LAUNCHERS:
            continue
        try:
            digest = hashlib.sha256(make_launcher({}, dict(enumerate(types)), None).encode()).hexdigest()
        except Exception:  # noqa: BLE001 - a signature Triton cannot make a launcher for: the worker's own affair
            continue
        if digest not in _launchers:
            _launchers.add(digest)
            plan.append(types)
    return plan


def build_planned(plan: list[list[str]]) -> int:
    """Compile the launchers of `plan` into this process's cache exactly as Triton's `CudaLauncher` would in a
    worker; how many were built.  The fork server runs this in a child of its own, so that no fork waits for gcc."""
    try:
        from triton.backends.nvidia.driver import include_dirs, libraries, library_dirs, make_launcher
        from triton.runtime.build import compile_module_from_src
    except Exception:  # noqa: BLE001 - no per-signature launchers here
        return 0
    built = 0
    for types in plan:
        try:
            compile_module_from_src(
                src=make_launcher({}, dict(enumerate(types)), None),
                name="__triton_launcher",
                library_dirs=library_dirs(),
                include_dirs=include_dirs,
                libraries=libraries,
            )
        except Exception as exc:  # noqa: BLE001 - the worker compiles it itself, as before
            log.debug("launcher for %s not built in the fork server: %s", types, exc)
            continue
        built += 1
    return built


def reseed() -> int:
    """In the fork server, once a build has ended: keep the cache's files, now with the new launchers, for `seed`."""
    cache_dir = os.environ.get(CACHE_ENV)
    if cache_dir:
        _seed[:] = collect(cache_dir)
    return len(_seed)


def build_launchers(signatures: object) -> int:
    """`plan_launchers`, `build_planned` and `reseed` in this process: how many launchers were built."""
    built = build_planned(plan_launchers(signatures))
    if built:
        reseed()
    return built


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
