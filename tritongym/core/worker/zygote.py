"""Fork server for GPU workers: `python -m tritongym.core.worker.zygote FD`, FD a Unix socket to the pool.

Starting a worker from scratch costs seconds of importing torch and Triton, and the pool starts one per
candidate (a fresh process each, so no candidate can leave anything behind for the next).  The zygote
imports everything once and never initialises CUDA, so forking it is safe; each child gets its own
session, working directory and environment (set before CUDA starts, so `CUDA_VISIBLE_DEVICES` picks its
GPU), then initialises CUDA and serves exactly like a worker started by `python -m gpu_worker` (or, for a
request whose role is "keeper", like `python -m keeper`: the GPU's reference keeper).  The zygote holds the pool's
lifeline (`lifeline.py`), and each child holds it again in `serve` (a fork does not copy the watching thread): all
of them die with the pool's process.

`python -m tritongym.core.worker.zygote FD task` is the sandbox's fork server instead (`sandbox/task_zygote.py`,
the triton-cpu backend's): it imports what one task's worker (`task_runner`) needs, with `TRITON_INTERPRET=1`
already in its environment, and each request forks one such worker, which runs exactly as `python -m
tritongym.core.worker LOG` would (task on its stdin, result on its stdout, its own limits set after the fork),
so an evaluation no longer pays a fresh interpreter's imports (about 2.4 s of CPU).

Protocol: over a SOCK_SEQPACKET pair, the pool sends a JSON request with file descriptors attached (a GPU
worker's: its end of a socketpair; a task's: the read end of its stdin and the write end of its stdout); the
zygote answers `{"id": ..., "pid": ...}` messages, and
`{"exited": pid, "status": code}` when a child ends (only their parent can reap them and know how
they died).  A request whose role is "launchers" is not answered: the zygote has a child of its own build the
Triton launchers it names, for the children forked after that build (`triton_cache.py`).
"""

from __future__ import annotations

import functools
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import time

from tritongym.core.worker import lifeline, triton_cache


def _preload() -> None:
    import torch  # noqa: F401
    import torch.autograd.profiler  # noqa: F401 - a worker's profiler set-up is ~1.2 s shorter with these loaded
    import torch.profiler  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    import tritongym.core.measure.compare  # noqa: F401
    import tritongym.core.measure.gpu_profile  # noqa: F401
    import tritongym.core.measure.timing  # noqa: F401
    import tritongym.core.worker.candidate_runner  # noqa: F401
    import tritongym.core.worker.gpu_worker  # noqa: F401
    import tritongym.core.worker.launches  # noqa: F401

    for module in ROLE_MODULES.values():
        importlib.import_module(module)
    _warm_triton()


def _warm_triton() -> None:
    """What every fresh worker's first Triton compile computed for itself, done once here before any fork: the hash
    of Triton's own compiler and backend sources and its 100-MiB library (`triton_key`, cached per process: 0.35
    s of every warm task on an H200) and the `gluon` modules a JIT function's launcher imports (0.08 s).  Neither
    touches CUDA, so forking after them is safe.  (Triton's C helpers are built in a child: `_build_in_child`.)"""
    from triton.runtime.cache import triton_key

    triton_key()
    try:
        import triton.experimental.gluon  # noqa: F401
    except ImportError:  # a Triton without gluon: nothing to load
        pass


def _preload_task() -> None:
    """What a one-task worker imports on its way to a verdict on the CPU (the rest it imports as it needs)."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    import triton.runtime.autotuner  # noqa: F401
    import triton.runtime.interpreter  # noqa: F401

    import tritongym.core.fingerprint  # noqa: F401
    import tritongym.core.measure.compare  # noqa: F401
    import tritongym.core.measure.gold  # noqa: F401
    import tritongym.core.measure.trusted  # noqa: F401
    import tritongym.core.precision  # noqa: F401
    import tritongym.core.worker.autotune  # noqa: F401
    import tritongym.core.worker.candidate_runner  # noqa: F401
    import tritongym.core.worker.controls  # noqa: F401
    import tritongym.core.worker.distributions  # noqa: F401
    import tritongym.core.worker.input_source  # noqa: F401
    import tritongym.core.worker.launches  # noqa: F401
    import tritongym.core.worker.op_trace  # noqa: F401
    import tritongym.core.worker.plugin_probes  # noqa: F401
    import tritongym.core.worker.probes  # noqa: F401
    import tritongym.core.worker.scrub  # noqa: F401
    import tritongym.core.worker.stochastic  # noqa: F401
    import tritongym.core.worker.task_runner  # noqa: F401
    import tritongym.core.worker.trial_plan  # noqa: F401
    import tritongym.core.worker.weights  # noqa: F401


def _task_child(request: dict, fds: list[int], home: str) -> None:
    """Become a fresh task worker: own session, working directory and environment, the task's pipes as its
    standard streams and no other descriptor, then `task_runner.main` (which sets the limits).  What a fresh
    interpreter would not share with the previous task is reset: the import path's first entry (the working
    directory, as `-m` puts it, never the zygote's), tempfile's cached directory, the random generators."""
    import random
    import resource
    import tempfile

    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    stdin, stdout = fds
    os.dup2(stdin, 0)
    os.dup2(stdout, 1)
    os.dup2(stdout, 2)
    low = 3
    for fd in sorted(request.get("keep_fds", [])):  # the starting process's lifeline (owned.py)
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    sys.path[:] = [request["cwd"] if entry == home else entry for entry in sys.path]
    tempfile.tempdir = None
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    sys.argv = [sys.argv[0], request["log"]]
    from tritongym.core.worker.task_runner import main

    main()


ROLE_MODULES = {"worker": "tritongym.core.worker.gpu_worker", "keeper": "tritongym.core.keeper.keeper"}
"""The module whose `serve` a forked child of each role runs, named as `python -m` names it: the keeper sits a layer
above the worker (`core/__init__.py`'s `LAYERS`), and this fork server starts both."""


_WAKE_FDS: tuple[int, ...] = ()  # the SIGCHLD wake-up pipe of `main`: the zygote's own, never a child's


def _plain_child() -> None:
    """In a fresh child: SIGCHLD as by default, and no share in the zygote's wake-up pipe."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in _WAKE_FDS:
        os.close(fd)


def _fork_shared() -> None:
    """Before each fork: every object the zygote holds (torch's and Triton's modules, ~190,000 tracked objects) moved
    to the collector's permanent generation (`gc.freeze`, constant time).  A child's full collections then never walk
    them: unfrozen, the first one in each fresh worker wrote into every inherited object's header, copying ~48 MiB of
    the zygote's heap page by page (12,300 page faults and 0.135 s per worker on an H200 host, against 20 faults and
    none frozen: `benchmarks/fork_contention.py`).  The children never need them collected: they are the zygote's
    long-lived imports."""
    gc.freeze()


def _build_in_child(build, control: socket.socket) -> int:
    """Fork a child that runs `build` (Triton's CUDA utilities, or the launchers of a plan: `triton_cache`) into the
    zygote's own cache and exits; its pid.  The zygote keeps forking meanwhile, and reseeds once the child ended."""
    pid = os.fork()
    if pid == 0:
        try:
            control.close()
            _plain_child()
            build()
        finally:
            os._exit(0)
    return pid


def _child(request: dict, fds: list[int], home: str) -> None:
    _plain_child()
    if request.get("role") == "task":
        _task_child(request, fds, home)
        return
    fd = fds[0]
    serve = importlib.import_module(ROLE_MODULES["keeper" if request.get("role") == "keeper" else "worker"]).serve

    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    triton_cache.seed()  # into this child's own, empty Triton cache
    serve(fd, fd, request["log"], request["device"], time.monotonic())


def main() -> None:
    lifeline.hold()  # dies with the process that started it (its forks watch the same lifeline themselves)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=int(sys.argv[1]))
    home = os.getcwd()
    tasks = sys.argv[2:] == ["task"]
    if tasks:
        _preload_task()
    else:
        _preload()
    # a child's exit status is read right after its end (a task's after its result, a retired GPU worker's before
    # its task's verdict goes back): reap on SIGCHLD, never at a next poll
    global _WAKE_FDS
    wake, poke = os.pipe()
    _WAKE_FDS = (wake, poke)
    os.set_blocking(poke, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(poke)
    sys.stdout.flush()
    sys.stderr.flush()
    control.sendall(b'{"ready": true}')
    children: set[int] = set()
    builders: set[int] = set()  # children compiling Triton's C helpers (`_build_in_child`), not the pool's
    if not tasks:
        builders.add(_build_in_child(triton_cache.build_utils, control))
    while True:
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                control.sendall(json.dumps({"exited": pid, "status": os.waitstatus_to_exitcode(status)}).encode())
        for pid in list(builders):
            if os.waitpid(pid, os.WNOHANG)[0]:
                builders.discard(pid)
                triton_cache.reseed()
        readable, _, _ = select.select([control, wake], [], [])
        if wake in readable:
            os.read(wake, 1 << 12)
        if control not in readable:
            continue
        message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        if not message:
            os._exit(0)  # the pool is gone; its workers die with their sessions' killpg
        request = json.loads(message)
        if request.get("role") == "launchers":  # for the children forked after the build (`triton_cache`)
            for fd in fds:
                os.close(fd)
            plan = triton_cache.plan_launchers(request.get("signatures"))
            if plan:
                builders.add(_build_in_child(functools.partial(triton_cache.build_planned, plan), control))
            continue
        _fork_shared()
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                _child(request, fds, home)
            finally:
                os._exit(1)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        control.sendall(json.dumps({"id": request["id"], "pid": pid}).encode())


if __name__ == "__main__":
    main()
