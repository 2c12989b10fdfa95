"""Only our processes: what this user's tritongym processes start, recorded, so that a clean-up touches nothing else.

Every process a tritongym process starts to run candidates or references in (the CPU sandbox, the GPU pool's
zygote, workers and keepers) and every temporary folder it makes is recorded in a directory of this user's
(`records_dir`: `$TRITONGYM_RUNTIME_DIR/owned`, else `$XDG_RUNTIME_DIR/tritongym/owned`, else
`~/.cache/tritongym/owned`; mode 0700): one small JSON file each, with the process's pid and start (boot id and
start time from /proc/<pid>/stat), the folder, and the *owner*: the pid and start of the tritongym process that
started it.  A record is removed when its process ends or its folder is removed in the ordinary way.

`sweep` (at a service's start, and before a process's first sandbox or GPU pool) kills a recorded process and
removes its folder only when its owner is dead (its pid gone, or now naming a process started at another time)
and the recorded process is still the one recorded (same start).  Nothing is guessed from process names or parents:
a Ray actor renames itself (`ray::BackendActor.measure`), and a service started beside a running Ray
evaluation once killed its live sandbox for it, whose honest kernel was then stored as `crashed`.

A folder's name carries its owner's pid too (`tritongym-<pid>-<kind>-...`), so one made in the instant before
its record was written is still found by `sandbox.sweep_orphans`.  The lifeline (`lifeline_fd`, and
`worker/lifeline.py` on the other side) makes every started process die with its owner, so a service killed
with `kill -9` leaves nothing running until the next start; the records are for what the lifeline cannot
reach (a folder, a process that was stopped and could not read its end).

Where /proc is missing (not Linux) nothing is recorded and nothing swept.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import stat
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tritongym.core.worker.lifeline import ENV as LIFELINE_ENV

RUNTIME_DIR_ENV = "TRITONGYM_RUNTIME_DIR"

_lock = threading.Lock()
_records: dict[tuple[str, str], Path] = {}  # ("pid", "123") or ("folder", path) -> its record file
_lifeline: tuple[int, int, int] | None = None  # (the pid that made it, read end, write end)


def records_dir() -> Path:
    """Where this user's tritongym processes record what they started."""
    if os.environ.get(RUNTIME_DIR_ENV):
        return Path(os.environ[RUNTIME_DIR_ENV]) / "owned"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "tritongym" / "owned"
    return Path.home() / ".cache" / "tritongym" / "owned"


def process_start(pid: int) -> str | None:
    """`pid`'s start as '<boot id>/<start time in clock ticks>' when it is a live process of this user; None when it
    is gone (a zombie too: dead, only not yet reaped, as the orphans of a container whose init reaps nothing stay),
    another user's, or there is no /proc to tell."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return None
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()  # the name, in parentheses, may hold spaces and parentheses
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return None
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        return None
    return f"{boot}/{fields[19]}"  # field 22 of stat, counted after the name


def _private_dir() -> Path | None:
    directory = records_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(directory, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return None
    if st.st_mode & 0o077:
        os.chmod(directory, 0o700)
    return directory


def _write(kind: str, pid: int | None, folder: str | None) -> Path | None:
    owner_start = process_start(os.getpid())
    start = process_start(pid) if pid is not None else None
    if owner_start is None or (pid is not None and start is None):
        return None  # no /proc, or the process already gone: nothing a later sweep could check
    directory = _private_dir()
    if directory is None:
        return None
    body = {"kind": kind, "owner": os.getpid(), "owner_start": owner_start, "pid": pid, "start": start}
    body["folder"] = folder
    path = directory / f"{os.getpid()}-{kind}-{secrets.token_hex(6)}.json"
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(body, f)
    os.replace(temporary, path)
    return path


def started(pid: int, kind: str) -> None:
    """Record `pid`, a process this one just started (`kind`: sandbox, zygote, worker, keeper)."""
    path = _write(kind, pid, None)
    if path is not None:
        with _lock:
            _records[("pid", str(pid))] = path


def ended(pid: int) -> None:
    """`pid`, started here, has ended or been killed here: its record goes."""
    with _lock:
        path = _records.pop(("pid", str(pid)), None)
    if path is not None:
        path.unlink(missing_ok=True)


def make_folder(kind: str) -> str:
    """A private temporary folder for a process of `kind`, named after this process and recorded."""
    folder = tempfile.mkdtemp(prefix=f"tritongym-{os.getpid()}-{kind}-")
    path = _write(kind, None, folder)
    if path is not None:
        with _lock:
            _records[("folder", folder)] = path
    return folder


def remove_folder(folder: str) -> None:
    """Remove a folder `make_folder` made, and its record."""
    shutil.rmtree(folder, ignore_errors=True)
    with _lock:
        path = _records.pop(("folder", folder), None)
    if path is not None:
        path.unlink(missing_ok=True)


@dataclass
class Swept:
    """What a sweep removed: processes killed (pids) and folders removed."""

    killed: list[int] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _read(path: Path) -> dict | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        try:
            body = json.load(f)
        except ValueError:
            return None
    return body if isinstance(body, dict) and isinstance(body.get("owner"), int) else None


def _kill(pid: int) -> None:
    """SIGKILL a recorded process and, where it leads its own group (a sandbox does), the group with it."""
    try:
        group = os.getpgid(pid)
    except OSError:
        return
    try:
        if group == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _removable(folder: object) -> bool:
    """Only a folder of this user's named as `make_folder` names them: a record never points a sweep elsewhere."""
    if not isinstance(folder, str) or not os.path.basename(folder).startswith("tritongym-"):
        return False
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def sweep() -> Swept:
    """Kill the recorded processes, and remove the recorded folders, of owners that are dead; leave every record of
    a live owner alone (another service, an `eval`, a Ray actor whatever it calls itself)."""
    swept = Swept()
    directory = records_dir()
    if process_start(os.getpid()) is None or not directory.is_dir():
        return swept
    for path in sorted(directory.glob("*.json")):
        body = _read(path)
        if body is None:
            continue
        if body["owner"] == os.getpid() or process_start(body["owner"]) == body.get("owner_start"):
            continue  # its owner lives: its business
        pid = body.get("pid")
        if isinstance(pid, int) and pid > 1 and process_start(pid) == body.get("start"):
            _kill(pid)
            swept.killed.append(pid)
        if _removable(body.get("folder")):
            shutil.rmtree(body["folder"], ignore_errors=True)
            swept.removed.append(body["folder"])
        path.unlink(missing_ok=True)
    return swept


def mine() -> list[int]:
    """The processes this process started that are still recorded (still running, as far as it knows)."""
    with _lock:
        return [int(key[1]) for key in _records if key[0] == "pid"]


def kill(pid: int) -> None:
    """SIGKILL a process this one started (and its group where it leads one)."""
    _kill(pid)


def lifeline_fd() -> int:
    """The read end of this process's lifeline, to pass to every process it starts (`pass_fds`) and name in
    `$TRITONGYM_LIFELINE` (`lifeline_env`): its write end stays open here until this process ends."""
    global _lifeline
    with _lock:
        if _lifeline is None or _lifeline[0] != os.getpid():  # a forked copy makes its own
            read, write = os.pipe()  # both close-on-exec: only `pass_fds` hands the read end on
            _lifeline = (os.getpid(), read, write)
        return _lifeline[1]


def lifeline_env() -> dict[str, str]:
    """The environment entry naming the lifeline to a started process."""
    return {LIFELINE_ENV: str(lifeline_fd())}
