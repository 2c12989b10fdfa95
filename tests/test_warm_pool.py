"""`tritongym eval` hands its candidate to a warm `tritongym serve` of this user's (issue 40 item 3,
`api/warm_pool.py`): a real service on loopback, real `eval` commands, on the CPU (triton-cpu, size cpu)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritongym.api import warm_pool
from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import SUITE_DIR

SOLUTION = str(SUITE_DIR.parent / "solutions" / "relu.py")
OPTIONS = ["--backend", "triton-cpu", "--size", "cpu", "--trials", "2", "--timeout", "60"]
VOLATILE = {"created_at", "duration_s", "phases", "counts", "flags", "memory_mb", "evaluation_id", "stored", "cached"}
TOKEN = "a-token-of-at-least-sixteen-chars"


@pytest.fixture
def runtime(tmp_path, monkeypatch) -> Path:
    """This test's own announcement directory: no service of the machine's user is seen, none of ours leaks."""
    directory = tmp_path / "run"
    monkeypatch.setenv(warm_pool.RUNTIME_DIR_ENV, str(directory))
    monkeypatch.setenv("TRITONGYM_SQLITE_WARNING", "0")
    monkeypatch.delenv("TRITONGYM_SERVICE_TOKEN", raising=False)
    monkeypatch.delenv("TRITONGYM_POOL", raising=False)
    return directory


def tritongym(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tritongym", *args], capture_output=True, text=True, env=env or dict(os.environ)
    )


def eval_json(registry: Path, *extra: str) -> tuple[int, dict]:
    done = tritongym("eval", SOLUTION, "-p", "relu", *OPTIONS, "--registry", str(registry), "--json", *extra)
    return done.returncode, json.loads(done.stdout)


def eval_here(registry: Path, *extra: str) -> tuple[int, dict]:
    """`eval_json` in this process (typer's runner), where the test is about what `eval` decides, not about a fresh
    interpreter: the same command line, the same JSON."""
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    args = ["eval", SOLUTION, "-p", "relu", *OPTIONS, "--registry", str(registry), "--json", *extra]
    done = CliRunner().invoke(app, args, catch_exceptions=False)
    return done.exit_code, json.loads(done.stdout)


def verdict(result: dict) -> dict:
    """What must agree between two judgings of one candidate: everything but timestamps, ids, what the run measured
    (phases, counts, flags, memory) and the seed of
    the parameters' draw (secret and fresh per judging, like the trials' seeds)."""
    kept = {k: v for k, v in result.items() if k not in VOLATILE}
    if kept.get("weights"):
        kept["weights"] = {k: v for k, v in kept["weights"].items() if k != "draw_seed"}
    return kept


@pytest.fixture
def service(runtime, tmp_path):
    """A real `tritongym serve` on 127.0.0.1 (a free port), with a token, once it has announced itself."""
    registry = tmp_path / "warm.db"
    log = tmp_path / "serve.log"
    env = {**os.environ, "TRITONGYM_SERVICE_TOKEN": TOKEN}
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tritongym", "serve", "--port", "0", *OPTIONS, "--registry", str(registry)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + 60
    while not list(runtime.glob("serve-*.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(runtime.glob("serve-*.json")), log.read_text()
    yield proc, registry
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def test_eval_hands_over_to_a_warm_pool_and_the_verdict_equals_a_cold_one(service, runtime, tmp_path):
    proc, registry = service
    (announced,) = runtime.glob("serve-*.json")
    assert announced.stat().st_mode & 0o777 == 0o600 and runtime.stat().st_mode & 0o777 == 0o700
    record = json.loads(announced.read_text())
    assert record["pid"] == proc.pid and record["token"] == TOKEN and record["registry"] == str(registry.resolve())

    code, warm = eval_here(registry)  # no token in this environment: the announcement carries it
    assert code == 0, warm
    assert warm["phases"].get("warm_pool_s", 0) > 0 and warm["stored"] and warm["evaluation_id"] is not None
    code, cold = eval_here(tmp_path / "cold.db", "--pool", "off")
    assert code == 0 and "warm_pool_s" not in cold["phases"]
    assert verdict(warm) == verdict(cold)

    # a fresh interpreter that hands over loads neither the registry's store (sqlite-utils, numpy) nor torch, and,
    # its config being the service's own in the same environment (`quick_find`), neither the plugins nor an evaluator
    done = subprocess.run([sys.executable, "-c", HAND_OVER_PROBE, str(registry)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"warm": True, "status": "ok", "loaded": []}

    proc.send_signal(signal.SIGTERM)  # a clean stop takes the announcement away
    proc.wait(60)
    assert not list(runtime.glob("serve-*.json"))


HAND_OVER_PROBE = f"""
import json, sys
from tritongym import api
from tritongym.core.config import EvalConfig

config = EvalConfig(backend="triton-cpu", size="cpu", trials=2, timeout_s=60)
result = api.evaluate({SOLUTION!r}, "relu", config, sys.argv[1], pool="require")
heavy = ("sqlite_utils", "numpy", "torch", "tritongym.core.registry.store", "tritongym.core.plugins")
print(json.dumps({{"warm": "warm_pool_s" in result.phases, "status": result.status,
                  "loaded": [m for m in heavy if m in sys.modules]}}))
"""


def announcement(runtime: Path, pid: int, started: str, **terms) -> Path:
    """An announcement file as `tritongym serve` writes it, for a process that may not be one."""
    runtime.mkdir(mode=0o700, exist_ok=True)
    path = runtime / f"serve-{pid}.json"
    path.write_text(warm_pool.PoolRecord(pid=pid, started=started, **terms).model_dump_json())
    path.chmod(0o600)
    return path


def terms_of_this_eval(registry: Path) -> dict:
    """The terms `eval` with OPTIONS would look for (an Evaluator built here as the command builds its own)."""
    config = EvalConfig(backend="triton-cpu", size="cpu", trials=2, timeout_s=60)
    evaluator = Evaluator(config, host=PluginHost(load_entry_points=False))
    return {**warm_pool.terms(evaluator), "registry": str(registry.resolve())}


def dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


# slow tier (7 s: two evals in processes of their own): the fast tier's warm-pool eval end to end is
# test_eval_hands_over_to_a_warm_pool_and_the_verdict_equals_a_cold_one
@pytest.mark.slow
def test_eval_runs_cold_past_stale_and_unfitting_announcements_and_removes_the_stale(runtime, tmp_path):
    registry = tmp_path / "registry.db"
    terms = terms_of_this_eval(registry)
    me = warm_pool.process_start(os.getpid())
    stale = announcement(runtime, dead_pid(), "gone/1", url="http://127.0.0.1:9", **terms)
    # a pid in use again: a live process of ours that started later than the one that announced (this test's)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    recycled = announcement(runtime, sleeper.pid, me, url="http://127.0.0.1:9", **terms)
    other_backend = announcement(
        runtime, os.getpid(), me, url="http://127.0.0.1:9", **{**terms, "backend": "triton-cuda"}
    )
    try:
        code, result = eval_json(registry)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert code == 0 and result["status"] == "ok" and "warm_pool_s" not in result["phases"]
    assert not stale.exists() and not recycled.exists()  # their processes are gone (or are others): removed
    assert other_backend.exists()  # alive and ours, but judging elsewhere: left for the evals that fit it

    code, refused = eval_json(registry, "--pool", "require", "--no-cache")  # the options differ too: use_cache
    assert code == 3 and refused["error_type"] == "NoWarmPool"
    assert "backend triton-cuda there, triton-cpu here" in refused["error"]
    assert "settings differ: use_cache" in refused["error"]


def test_pool_require_without_a_pool_is_exit_3_naming_why(runtime, tmp_path):
    """In this process (typer's runner): nothing here is about the process boundary, and no candidate is judged."""
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    def require(*extra: str):
        args = ["eval", SOLUTION, "-p", "relu", *OPTIONS, "--registry", str(tmp_path / "r.db"), *extra]
        return CliRunner().invoke(app, args, catch_exceptions=False)

    done = require("--pool", "require")
    assert done.exit_code == 3
    assert (
        "no tritongym serve of this user's is announced" in done.stderr and "tritongym serve --backend" in done.stderr
    )
    # a pool that fits but does not answer (its process lives; nothing listens at its address)
    terms = terms_of_this_eval(tmp_path / "r.db")
    announcement(runtime, os.getpid(), warm_pool.process_start(os.getpid()), url="http://127.0.0.1:9", **terms)
    done = require("--pool", "require")
    assert done.exit_code == 3 and "does not answer" in done.stderr
    done = require("--pool", "sometimes")
    assert done.exit_code == 2 and "pool takes auto, off, require" in done.stderr


def test_announcements_in_a_directory_others_could_write_are_ignored(runtime):
    me = warm_pool.process_start(os.getpid())
    terms = {
        "backend": "triton-cpu",
        "device_class": "cpu",
        "size": "cpu",
        "protocol": "p",
        "settings": {},
        "registry": "/r.db",
    }
    path = announcement(runtime, os.getpid(), me, url="http://127.0.0.1:9", **terms)
    assert [r.pid for r in warm_pool.records()] == [os.getpid()]
    path.chmod(0o644)  # readable by others: not written by `serve`, so not trusted (and not removed)
    assert warm_pool.records() == [] and path.exists()
    path.chmod(0o600)
    runtime.chmod(0o777)  # anyone could have put it there
    assert warm_pool.records() == []
    runtime.chmod(0o700)
    assert [r.pid for r in warm_pool.records()] == [os.getpid()]


def test_eval_starts_no_early_fork_server_when_a_pool_is_announced(runtime, monkeypatch):
    """The early fork server (`fork_server.start_early`) imports torch beside the command; with a `serve` announced
    the candidate most likely goes there, so `eval` starts none (and still does with `--pool off`)."""
    from tritongym.cli import eval as eval_cli
    from tritongym.core.sandbox import fork_server

    started = []
    monkeypatch.setattr(fork_server, "start_early", lambda: started.append("zygote"))
    announcement(runtime, dead_pid(), "gone/1", url="http://127.0.0.1:9", **terms_of_this_eval(runtime / "r.db"))
    eval_cli._start_fork_server_early("triton-cuda", None, "auto", None)
    assert started == []
    eval_cli._start_fork_server_early("triton-cuda", None, "off", None)
    assert started == ["zygote"]


def test_a_quick_hand_over_needs_the_services_own_config_environment_registry_and_gpus(runtime, tmp_path):
    """`quick_fits` skips the evaluator only where equal terms are certain: the same EvalConfig (GPUs aside) in the
    same environment, into the same registry, on GPUs the service covers, with a backend named, run locally.
    Anything else goes to `find`, which compares the terms themselves."""
    registry = tmp_path / "registry.db"
    config = EvalConfig(backend="triton-cpu", size="cpu", trials=2, timeout_s=60)
    me = warm_pool.process_start(os.getpid())
    terms = terms_of_this_eval(registry)

    def announced(**changes) -> None:
        for old in runtime.glob("serve-*.json"):
            old.unlink()
        fields = {"config": config.model_dump(mode="json"), "environment": warm_pool.environment(), **changes}
        announcement(runtime, os.getpid(), me, url="http://127.0.0.1:9", **{**terms, **fields})

    def fits(asked: EvalConfig = config, where: Path = registry, plugins: tuple = ()) -> bool:
        return len(warm_pool.quick_fits(asked, str(where), plugins)) == 1

    announced()
    assert fits()
    assert fits(config.model_copy(update={"gpus": [0]}))  # a service free to use every GPU covers any
    assert not fits(config.model_copy(update={"trials": 3}))
    assert not fits(config.model_copy(update={"workers": 4}))  # changes no term, but only `find` can say so
    assert not fits(config.model_copy(update={"backend": "auto"}))  # resolved against this process's GPUs
    assert not fits(where=tmp_path / "other.db")
    assert not fits(plugins=("my_plugins",))
    announced(environment={**warm_pool.environment(), "prefix": "/another/venv"})
    assert not fits()
    announced(config=None, environment=None)  # an announcement from before these fields
    assert not fits()
    announced(gpus=[1])
    assert fits() and not fits(config.model_copy(update={"gpus": [0]}))


def test_a_pool_that_fits_but_fails_is_asked_once_then_the_eval_runs_here(runtime, tmp_path):
    """A service announced with this eval's very config (`quick_find`) refuses the submission (its request limit is
    smaller than the candidate): `auto` says so and evaluates here, without asking the same service again through
    `find`; the service saw one submission."""
    registry = tmp_path / "warm.db"
    log = tmp_path / "serve.log"
    with open(log, "w") as sink:
        args = ["serve", "--port", "0", "--max-request-mb", "0.001", *OPTIONS, "--registry", str(registry)]
        proc = subprocess.Popen([sys.executable, "-m", "tritongym", *args], stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not list(runtime.glob("serve-*.json")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(runtime.glob("serve-*.json")), log.read_text()
        code, result = eval_here(registry)
        assert code == 0 and result["status"] == "ok" and "warm_pool_s" not in result["phases"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    submissions = [line for line in log.read_text().splitlines() if '"POST /v1/tasks HTTP' in line]
    assert len(submissions) == 1, log.read_text()
