"""A `tritongym serve` running on this machine as a warm pool for `tritongym eval`.

A cold `eval` starts its own workers (on a GPU: a CUDA context and CUPTI's set-up per process, most of its time);
a service that is already running has them warm.  So a service listening on loopback *announces* itself, and
`eval` (`api.evaluate`, `pool="auto"` or `"require"`) looks for one that judges as it would and hands the
candidate over through the service's own HTTP API and client (`service/http_client.py`) instead of starting any.

The announcement: one JSON file per service (`serve-<pid>.json`) in a directory of this user's
(`$TRITONGYM_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/tritongym`, else `~/.cache/tritongym/pools`), made mode 0700
and refused when another user owns it or may write to it; each file is 0600, written whole under a temporary name
and renamed into place, removed when the service starts to stop.  It records the URL, the process id and the
process's start (boot id and start time, from /proc: a file whose process is gone or whose pid now names another
process is stale, ignored and removed; where /proc is missing nothing is announced), and the terms that make two
evaluations' verdicts the same (`terms`):

- the backend, the device class and the size preset, and the protocol key: the registry keys every stored
  verdict by these (with the problem and the kernel), `EvalConfig.protocol_key` over the checks selected;
- the settings outside that key that still change what the result says: the sandbox's limits (a time limit kills
  a slow candidate), the backend's options (its timing), `compile_reference`, `use_cache`, the rewards;
- the registry (its real path): the pool stores the verdict, and a verdict stored elsewhere is not the
  evaluation the user asked for;
- the GPUs the service may use (an `eval --gpus` the service does not cover is judged here).

A service run with a token (`TRITONGYM_SERVICE_TOKEN`) writes it into the file.  Why that is acceptable: the
file can be read only by this user, who can read the token from the service's own environment
(`/proc/<pid>/environ`) anyway; another user can read neither.  The service is announced only on a loopback
address, so the file never points a client at another machine.

The announcement also carries the service's own EvalConfig and environment (`environment`): an `eval` whose
config is the very same, in the same environment, knows the terms are equal without making an evaluator
(`quick_find`: the plugins' imports and the evaluator were 0.16 s of a warm `eval` on an H200); any other config
is compared by its terms (`find`).

A hand-over submits the candidate with its problem's source (`problem_source`, `problem_name`: the problem this
process loaded, not a name the service might resolve differently), waits for the verdict, checks it is the
evaluation asked for (problem key, kernel, protocol, backend, device class), and returns the service's
`EvaluationResult` with one phase added, `warm_pool_s` (the hand-over's wall seconds), which says where it was
judged.  Under `"auto"` anything that goes wrong (no pool fits, the pool cannot be reached, it could not judge the
candidate) means the evaluation runs here as before; under `"require"` it is `NoWarmPool` (exit 3) saying why.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tritongym.api.pool_announcements import RUNTIME_DIR_ENV, announced, pool_dir  # noqa: F401 - re-exported
from tritongym.core.errors import NoWarmPool, ServiceError
from tritongym.core.timeline import mark

if TYPE_CHECKING:
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.models import Candidate, EvaluationResult, Problem

log = logging.getLogger("tritongym.pool")

POOL_CHOICES = ("auto", "off", "require")
HEALTH_TIMEOUT_S = 5.0
FORMAT = 1


class PoolRecord(BaseModel):
    """One announced service: where it listens, which process it is, and the terms it judges under (`terms`)."""

    model_config = ConfigDict(extra="ignore")

    format: int = FORMAT
    url: str
    pid: int
    started: str  # the process's start: boot id and start time in clock ticks (`process_start`)
    version: str = ""
    backend: str
    device_class: str
    size: str
    protocol: str
    settings: dict[str, Any]
    registry: str
    gpus: list[int] | None = None
    token: str | None = None
    # what lets an `eval` recognise these terms without making an evaluator (`quick_find`): the service's EvalConfig
    # and the environment that turns a config into terms; absent in older announcements (then `find` only)
    config: dict[str, Any] | None = None
    environment: dict[str, Any] | None = None


def process_start(pid: int) -> str | None:
    """`pid`'s start as '<boot id>/<start time in clock ticks>', when it is a live process of this user; None when it
    is gone, another user's, or this system has no /proc to tell (then no pool is announced or found)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return None
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return None
    return f"{boot}/{fields[19]}" if len(fields) > 19 else None  # field 22 of stat, counted after the name


def terms(evaluator: Evaluator) -> dict[str, Any]:
    """What must be equal for a service's verdict to be the one this evaluator would reach (see the module's doc)."""
    config = evaluator.config
    settings = {
        "limits": evaluator.limits.model_dump(mode="json"),
        "backend_options": evaluator.backend.options.model_dump(mode="json", exclude={"gpus"}),
        "compile_reference": config.compile_reference,
        "use_cache": config.use_cache,
        "rewards": config.rewards,
        "reward_options": config.reward_options,
        "hack_penalty": config.hack_penalty,
    }
    return {
        "backend": evaluator.backend_name,
        "device_class": evaluator.device_class,
        "size": evaluator.size,
        "protocol": evaluator.protocol,
        "settings": json.loads(json.dumps(settings, sort_keys=True, default=str)),
    }


def environment(extra_plugins: Sequence[str] = ()) -> dict[str, Any]:
    """What, beside an EvalConfig, decides the terms an evaluator derives from it: this installation and its
    interpreter (the entry-point plugins it finds, the checks' code), the plugins named on the command line, the
    import path they are found on, and the GPUs this process may see."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("tritongym")
    except PackageNotFoundError:
        installed = "dev"
    return {
        "tritongym": installed,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "pythonpath": os.environ.get("PYTHONPATH", ""),
        "plugins": sorted(extra_plugins),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def _private_dir(create: bool) -> Path | None:
    """The announcement directory, when it is this user's alone (created 0700 when `create`); else None."""
    directory = pool_dir()
    if create:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        st = os.stat(directory, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return None
    if st.st_mode & 0o077:
        if not create:
            return None
        os.chmod(directory, 0o700)  # ours, made open by an earlier umask or a hand: closed before anything goes in
    return directory


def announce(
    url: str,
    evaluator: Evaluator,
    registry: str | Path,
    gpus: list[int] | None,
    token: str | None,
    extra_plugins: Sequence[str] = (),
) -> Path | None:
    """Write this process's announcement; its path, or None where it cannot be told apart from a recycled pid (no
    /proc) or the directory is not private (a warning says which)."""
    from tritongym.core.fingerprint import local_fingerprint

    started = process_start(os.getpid())
    if started is None:
        log.warning("not announced as a warm pool: this system has no /proc to tell a live service from a stale file")
        return None
    directory = _private_dir(create=True)
    if directory is None:
        log.warning("not announced as a warm pool: %s is not a directory of this user's alone", pool_dir())
        return None
    record = PoolRecord(
        url=url,
        pid=os.getpid(),
        started=started,
        version=local_fingerprint().tritongym,
        registry=os.path.realpath(registry),
        gpus=gpus,
        token=token,
        config=evaluator.config.model_dump(mode="json"),
        environment=environment(extra_plugins),
        **terms(evaluator),
    )
    path = directory / f"serve-{os.getpid()}.json"
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".serve-", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(record.model_dump_json(indent=2))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def withdraw(path: Path | None) -> None:
    """Remove this process's announcement (at the first stop signal, and again on the way out: idempotent)."""
    if path is not None:
        path.unlink(missing_ok=True)


def records() -> list[PoolRecord]:
    """The live services announced by this user; a stale file (its process gone, or its pid now another process's)
    is removed, one that is not a record written by this user (other owner or mode, not JSON) is left alone."""
    directory = _private_dir(create=False)
    if directory is None:
        return []
    found = []
    for path in sorted(directory.glob("serve-*.json")):
        record = _read(path)
        if record is None:
            continue
        if process_start(record.pid) != record.started:
            path.unlink(missing_ok=True)  # stale: nothing will ever answer it
            continue
        found.append(record)
    return found


def _read(path: Path) -> PoolRecord | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        try:
            return PoolRecord.model_validate_json(f.read())
        except (ValidationError, ValueError):
            return None


def differences(record: PoolRecord, ours: dict[str, Any], registry: str | None, gpus: list[int] | None) -> list[str]:
    """Why `record`'s verdicts would not be this evaluation's: one phrase per term that differs; empty when none."""
    found = []
    for name in ("backend", "device_class", "size", "protocol"):
        if getattr(record, name) != ours[name]:
            found.append(f"{name} {getattr(record, name)} there, {ours[name]} here")
    settings = sorted(
        k for k in set(record.settings) | set(ours["settings"]) if record.settings.get(k) != ours["settings"].get(k)
    )
    if settings:
        found.append(f"settings differ: {', '.join(settings)}")
    if registry is None:
        found.append("this evaluation keeps no registry")
    elif record.registry != os.path.realpath(registry):
        found.append(f"registry {record.registry} there, {os.path.realpath(registry)} here")
    if gpus and record.gpus is not None and not set(gpus) <= set(record.gpus):
        found.append(f"GPUs {record.gpus} there, {gpus} asked for here")
    return found


def find(evaluator: Evaluator, registry: str | Path | None) -> tuple[PoolRecord | None, list[str]]:
    """The announced service that judges as `evaluator` would, into `registry` (the least busy of those that
    answer), or None and, for each service found, why it does not fit."""
    ours = terms(evaluator)
    reasons, fits = [], []
    for record in records():
        wrong = differences(record, ours, None if registry is None else str(registry), evaluator.config.gpus)
        if wrong:
            reasons.append(f"the pool at {record.url} (pid {record.pid}): {'; '.join(wrong)}")
        else:
            fits.append(record)
    if not fits and not reasons:
        reasons.append(f"no tritongym serve of this user's is announced in {pool_dir()}")
    return _least_busy(fits, reasons), reasons


def quick_find(config: EvalConfig, registry: str | Path | None, extra_plugins: Sequence[str] = ()) -> PoolRecord | None:
    """The announced service whose own EvalConfig and environment equal this evaluation's (the least busy that
    answers), found without making an evaluator: equal configs in an equal environment give equal terms.  Only
    for a config that names its backend (`auto` is resolved against this process's GPUs and plugins) and runs
    locally; None sends the caller to `find`, which compares the terms themselves (0.16 s more on an H200: the
    plugins' imports and the evaluator)."""
    return _least_busy(quick_fits(config, registry, extra_plugins), [])


def quick_fits(config: EvalConfig, registry: str | Path | None, extra_plugins: Sequence[str] = ()) -> list[PoolRecord]:
    """The announcements `quick_find` may hand over to, before asking any of them whether it is healthy."""
    if config.backend == "auto" or config.executor != "local" or registry is None:
        return []
    ours = config.model_dump(mode="json")
    here = environment(extra_plugins)
    fits = []
    for record in records():
        if record.config is None or record.environment != here:
            continue
        if {k: v for k, v in record.config.items() if k != "gpus"} != {k: v for k, v in ours.items() if k != "gpus"}:
            continue
        if record.registry != os.path.realpath(registry):
            continue
        if config.gpus and record.gpus is not None and not set(config.gpus) <= set(record.gpus):
            continue  # as `differences`: a service free to use every GPU covers any
        fits.append(record)
    return fits


def _least_busy(fits: list[PoolRecord], reasons: list[str]) -> PoolRecord | None:
    """Of `fits`, the service that answers healthy, judging what it announced, with the fewest tasks; each one
    that does not is added to `reasons`."""
    best, load = None, None
    for record in fits:
        try:
            with _client(record, retry_s=0.0, timeout_s=HEALTH_TIMEOUT_S) as service:
                health = service.health()
        except ServiceError as exc:
            reasons.append(f"the pool at {record.url} (pid {record.pid}) does not answer: {exc}")
            continue
        seen = (health.backend, health.device_class, health.size, health.protocol)
        if health.status != "healthy" or seen != (record.backend, record.device_class, record.size, record.protocol):
            reasons.append(f"the pool at {record.url} (pid {record.pid}) says it is {health.status}, judging {seen}")
            continue
        if load is None or health.queued + health.running < load:
            best, load = record, health.queued + health.running
    return best


def _client(record: PoolRecord, **kwargs):
    try:
        from tritongym.service.http_client import Client  # httpx only where a pool was announced
    except ImportError as exc:  # a pool is announced, but this environment cannot talk to it: judged here
        raise ServiceError(f"handing over needs httpx ({exc}): pip install 'tritongym[serve]'") from None
    return Client(record.url, record.token, **kwargs)


def hand_over(
    evaluator: Evaluator,
    candidate: Candidate,
    problem: Problem,
    registry: str | Path | None,
    required: bool = False,
) -> EvaluationResult | None:
    """The verdict of a warm pool that fits (`find`) and stores into `registry` (a path; None: this evaluation keeps
    none), or None: the caller evaluates here.  `required`: raise `NoWarmPool` instead of returning None.
    `evaluator` only says how this evaluation would judge (`terms`): it needs no registry opened."""
    record, reasons = find(evaluator, registry)
    if record is None:
        how = (
            f"start one with `tritongym serve --backend {evaluator.backend_name} --size {evaluator.size} "
            f"--registry {registry or 'PATH'}` and this evaluation's other options"
        )
        return _not_handed(required, f"no warm pool fits this evaluation: {'; '.join(reasons)}; {how}")
    asked = (problem.key, candidate.kernel_id, evaluator.protocol, evaluator.backend_name, evaluator.device_class)
    return hand_over_to(record, candidate, problem, asked, required)


def hand_over_to(
    record: PoolRecord, candidate: Candidate, problem: Problem, asked: tuple, required: bool = False
) -> EvaluationResult | None:
    """`candidate` judged by the service `record` announces, when its verdict is the evaluation `asked` for
    (problem key, kernel id, protocol, backend, device class); else None (`required`: `NoWarmPool`)."""
    started = time.perf_counter()
    mark("hand_over_found")
    try:
        with _client(record) as service:
            task = service.submit(
                candidate.source,
                problem_source=problem.source,
                problem_name=problem.name,
                origin=candidate.origin or "eval",
            )
            mark("hand_over_submitted")
            task = service.wait(task.id)
            mark("hand_over_answered")
    except ServiceError as exc:
        return _not_handed(required, f"the warm pool at {record.url} failed: {exc}")
    result = task.result
    if result is None:
        return _not_handed(required, f"the warm pool at {record.url} could not judge it: {task.error}")
    got = (result.problem_key, result.kernel_id, result.protocol, result.backend, result.device_class)
    if got != asked:
        return _not_handed(
            required, f"the warm pool at {record.url} judged {got}, not the evaluation asked for {asked}"
        )
    result.phases["warm_pool_s"] = round(time.perf_counter() - started, 4)
    return result


def _not_handed(required: bool, why: str) -> None:
    if required:
        raise NoWarmPool(f"{why} (pool 'require'; 'auto' evaluates here instead)")
    if "no warm pool fits" not in why:  # a pool was there and failed: say so; none fitting is the quiet, common case
        log.warning("%s; evaluating here instead", why)
    return None
