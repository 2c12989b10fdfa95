"""Fork server for GPU workers: `python -m tritongym.core.worker.zygote FD`, FD a Unix socket to the pool.

Starting a worker from scratch costs seconds of importing torch and Triton, and the pool starts one per
candidate (a fresh process each, so no candidate can leave anything behind for the next).  The zygote
imports everything once and never initialises CUDA, so forking it is safe; each child gets its own
session, working directory and environment (set before CUDA starts, so `CUDA_VISIBLE_DEVICES` picks its
GPU), then initialises CUDA and serves exactly like a worker started by `python -m gpu_worker` (or, for a
request whose role is "keeper", like `python -m keeper`: the GPU's reference keeper).

Protocol: over a SOCK_SEQPACKET pair, the pool sends a JSON request with one file descriptor attached
(the child's end of a socketpair); the zygote answers `{"id": ..., "pid": ...}` messages, and
`{"exited": pid, "status": code}` when a child ends (only their parent can reap them and know how
they died).
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time


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
    import tritongym.core.worker.keeper  # noqa: F401
    import tritongym.core.worker.launches  # noqa: F401


def _child(request: dict, fd: int) -> None:
    if request.get("role") == "keeper":
        from tritongym.core.worker.keeper import serve
    else:
        from tritongym.core.worker.gpu_worker import serve

    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    serve(fd, fd, request["log"], request["device"], time.monotonic())


def main() -> None:
    control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=int(sys.argv[1]))
    _preload()
    control.sendall(b'{"ready": true}')
    children: set[int] = set()
    while True:
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                control.sendall(json.dumps({"exited": pid, "status": os.waitstatus_to_exitcode(status)}).encode())
        readable, _, _ = select.select([control], [], [], 0.1)
        if not readable:
            continue
        message, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
        if not message:
            os._exit(0)  # the pool is gone; its workers die with their sessions' killpg
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                _child(request, fds[0])
            finally:
                os._exit(1)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        control.sendall(json.dumps({"id": request["id"], "pid": pid}).encode())


if __name__ == "__main__":
    main()
