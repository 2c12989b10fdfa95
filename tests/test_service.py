"""`tritongym serve` and `tritongym client`: a real uvicorn server on a loopback port, the triton-cpu backend.

Each server is a `python -m tritongym serve` process (so a test can kill it as a crash would) over its own
registry; the candidates are the honest ReLU kernel and variants of it, at the CPU size.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import RELU_KERNEL
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from tritongym.core.errors import ConfigError, ServiceError
from tritongym.core.problems import SUITE_DIR
from tritongym.service.http_client import Client
from tritongym.service.protocol import TaskState

pytestmark = pytest.mark.timeout(240)

TOKEN = "test-token-0123456789abcdef"
FORWARD = "    def forward(self, x):\n"
RELU_REFERENCE = (SUITE_DIR / "relu.py").read_text()


def relu_with(code: str) -> str:
    """The honest kernel with `code` run first in forward."""
    assert RELU_KERNEL.count(FORWARD) == 1
    return RELU_KERNEL.replace(FORWARD, FORWARD + "".join(f"        {line}\n" for line in code.splitlines()))


def relu_block(block: int) -> str:
    """The honest kernel at another block size: the same computation, another kernel id.  The interpreter runs
    a program at a time, so a small block is slow on the CPU (BLOCK=32: a third of a second a call); 512 and up
    cost little."""
    return RELU_KERNEL.replace("BLOCK=1024", f"BLOCK={block}").replace("cdiv(n, 1024)", f"cdiv(n, {block})")


def sample(metrics: str, name: str, **labels: str) -> float | None:
    """One sample's value in a Prometheus exposition, parsed by prometheus_client (None if absent), so a
    check of `... 1` cannot also match 10 or 1.5."""
    for family in text_string_to_metric_families(metrics):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None


class Served:
    """One `tritongym serve` process on 127.0.0.1, port chosen by the system."""

    def __init__(
        self,
        workdir: Path,
        *args: str,
        token: str | None = None,
        registry: Path | None = None,
        backend: str = "triton-cpu",
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.registry = registry or workdir / "registry.db"
        self.out = workdir / f"serve-{time.monotonic_ns()}.out"
        env = {k: v for k, v in os.environ.items() if k not in ("TRITONGYM_SERVICE_TOKEN", "TRITONGYM_REGISTRY")}
        env.update(TRITONGYM_LOAD_PLUGINS="", TRITONGYM_RAISE_ERRORS="")
        if token:
            env["TRITONGYM_SERVICE_TOKEN"] = token
        command = [sys.executable, "-m", "tritongym", "serve", "--port", "0", "--registry", str(self.registry)]
        command += ["--backend", backend, "--trials", "1", *args]
        with open(self.out, "w") as sink:
            self.proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=workdir, env=env)
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for line in self.out.read_text().splitlines():
                if "listening on " in line:
                    return line.split("listening on ", 1)[1].strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.proc.kill()
        raise AssertionError(f"the server did not start:\n{self.out.read_text()}")

    def client(self, token: str | None = TOKEN, **kwargs) -> Client:
        return Client(self.url, token, **kwargs)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the server did not stop on signal {sig}:\n{self.out.read_text()}") from None

    def stop_gracefully(self, ray: bool = False) -> None:
        """SIGTERM: uvicorn drains, runs the shutdown (the lanes finish), then exits by the signal it got.
        Under Ray, Ray's own SIGTERM handler (installed by `ray.init` in the driver) takes the re-raised
        signal and exits with status 15 after shutting Ray down."""
        code = self.stop(signal.SIGTERM)
        log = self.out.read_text()
        codes = (0, -signal.SIGTERM, signal.SIGTERM) if ray else (0, -signal.SIGTERM)
        assert code in codes and "Application shutdown complete" in log, log


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A token-protected service with two lanes, shared by the tests that only submit well-behaved work."""
    served = Served(tmp_path_factory.mktemp("service"), "--lanes", "2", token=TOKEN)
    yield served
    served.stop_gracefully()


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    """One lane, a queue of two, 16 KiB requests and a 4 s time limit (the hung candidate waits it out; the
    honest relu takes well under a second): a server that is easy to fill.  The
    `forbidden` check is off so that a segfaulting candidate (ctypes) reaches the worker instead of being
    rejected from its source."""
    served = Served(
        tmp_path_factory.mktemp("small"),
        *("--lanes", "1", "--max-queue", "2", "--max-request-mb", str(16 / 1024), "--max-batch", "3"),
        *("--timeout", "4", "--skip-check", "forbidden"),
    )
    yield served
    served.stop_gracefully()


# --- the service and its client ------------------------------------------------------------------------


def test_a_candidate_through_the_client_then_best_leaderboard_health_and_metrics(server):
    with server.client() as service:
        result = service.evaluate(RELU_KERNEL, "relu", timeout_s=120)
        assert result.status.value == "ok", result.message
        assert result.evaluation_id is not None and not result.cached

        again = service.evaluate(RELU_KERNEL, "relu", timeout_s=120)  # the registry answers
        assert again.cached and again.kernel_id == result.kernel_id

        best = service.best("relu")
        assert best is not None and best.kernel_id == result.kernel_id and best.backend == "triton-cpu"
        assert service.best("relu", device="no-such-device") is None
        assert [k.problem_id for k in service.leaderboard(["relu"])] == ["relu"]

        health = service.health()
        assert (health.status, health.backend, health.lanes, health.queued, health.running) == (
            "healthy",
            "triton-cpu",
            2,
            0,
            0,
        )
        # KernelGYM's SystemHealthResponse fields, beside the service's own
        assert health.queue_status == {"pending": 0, "processing": 0, "completed": 2}
        assert (health.active_tasks, health.total_processed) == (0, 2) and health.uptime > 0
        assert health.timestamp.endswith("Z") and "cpu" in health.gpu_status and "memory_total" in health.memory_usage
        metrics = service.metrics()
    assert sample(metrics, "tritongym_evaluations_total", status="ok") == 2
    assert sample(metrics, "tritongym_cache_hits_total") == 1
    assert sample(metrics, "tritongym_queue_depth") == 0
    assert sample(metrics, "tritongym_device_busy_seconds_total", device="cpu") > 0
    assert "# TYPE tritongym_evaluations_per_second gauge" in metrics
    # each finished task is one observation of the histogram; the process collector is there
    assert sample(metrics, "tritongym_task_duration_seconds_count") == 2
    assert sample(metrics, "tritongym_task_duration_seconds_bucket", le="+Inf") == 2
    assert sample(metrics, "tritongym_task_duration_seconds_sum") == sample(
        metrics, "tritongym_evaluation_seconds_total"
    )
    assert sample(metrics, "process_resident_memory_bytes") > 0


def test_many_candidates_in_one_submission_come_back_in_order(server):
    with server.client() as service:
        tasks = service.evaluate_many(
            [
                {"source": relu_block(512), "problem": "relu"},
                {"source": relu_with("return x * 2"), "problem": "relu"},  # wrong: an incorrect verdict
                {"source": relu_block(4096), "problem_source": RELU_REFERENCE, "problem_name": "my-relu"},
            ],
            timeout_s=120,
        )
    assert [t.state for t in tasks] == [TaskState.done] * 3
    assert [t.result.status.value for t in tasks] == ["ok", "incorrect", "ok"]
    assert tasks[2].problem == "my-relu" and tasks[2].result.problem_id == "my-relu"


def test_a_task_id_submitted_again_is_the_same_task(server):
    with server.client() as service:
        first = service.submit(relu_block(256), "relu", task_id="retry-me")
        second = service.submit(relu_block(256), "relu", task_id="retry-me")
        assert second.id == first.id == "retry-me"
        assert service.wait("retry-me", 120).result.status.value == "ok"


def test_text_without_a_utf8_form_and_non_finite_timeouts_get_422_and_the_connection_lives(small_server):
    """A lone surrogate (JSON can carry one as an unpaired \\ud800 escape) in a source or a name, and NaN or
    infinite timeouts (Python's JSON reads NaN and Infinity), are the client's errors: 422 with a JSON reason,
    on a connection that stays usable; they used to be 500s that reset the connection."""
    candidate = '{"candidates": [{"source": "%s", "problem": "relu"}]}'
    plain = json.dumps(kernelgym_payload("kg_bad"))
    kernelgym = plain.replace('"kernel_code": "', '"kernel_code": "\\ud800', 1)
    requests = [
        ("POST", "/v1/tasks", candidate % "import torch\\ud800"),
        ("POST", "/v1/tasks", candidate.replace('"problem": "relu"', '"problem": "relu", "origin": "\\udfff"') % "x"),
        ("POST", "/evaluate", kernelgym),
        ("POST", "/evaluate", json.dumps(kernelgym_payload("kg_bad", uuid="u")).replace('"u"', '"\\ud800"')),
        ("POST", "/evaluate", json.dumps(kernelgym_payload("kg_bad", backend="\ud800"), ensure_ascii=True)),
        ("POST", "/v1/tasks/wait", '{"ids": ["x", "\\ud800"], "timeout_s": 5}'),
        ("POST", "/v1/tasks/wait", '{"ids": ["x"], "timeout_s": NaN}'),
        ("POST", "/v1/tasks/wait", '{"ids": ["x"], "timeout_s": Infinity}'),
        ("GET", "/v1/tasks/x/wait?timeout_s=nan", None),
        ("GET", "/v1/tasks/x/wait?timeout_s=inf", None),
        ("POST", "/evaluate", plain.replace('"timeout": 300', '"timeout": NaN')),
        ("POST", "/evaluate", plain.replace('"timeout": 300', '"timeout": -Infinity')),
    ]
    with httpx.Client(base_url=small_server.url, timeout=30) as http:
        for method, path, body in requests:
            headers = {"Content-Type": "application/json"}
            answer = http.request(method, path, content=body, headers=headers)
            assert answer.status_code == 422, (path, body, answer.status_code, answer.text)
            detail = json.dumps(answer.json()["detail"])
            assert any(word in detail for word in ("surrogate", "unicode", "finite", "backend")), detail
            assert http.get("/health").json()["status"] == "healthy"  # the same connection, still served
        assert http.get("/status/kg_bad").status_code == 404  # nothing was queued


def test_bad_submissions_are_refused_with_the_reason(server):
    with server.client() as service:
        with pytest.raises(ServiceError, match="no problem named 'nope'") as unknown:
            service.submit(RELU_KERNEL, "nope")
        assert unknown.value.status_code == 422 and unknown.value.exit_code == 2
        with pytest.raises(ServiceError, match="KernelBench format") as malformed:
            service.submit(RELU_KERNEL, problem_source="x = 1\n")
        assert malformed.value.status_code == 422
        with pytest.raises(ServiceError, match="no task 'missing'") as missing:
            service.result("missing")
        assert missing.value.status_code == 404


# --- auth and exposure ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path", [("GET", "/health"), ("GET", "/metrics"), ("POST", "/v1/tasks"), ("POST", "/evaluate")]
)
def test_requests_without_the_token_get_401_and_with_a_wrong_one_403(server, method, path):
    missing = httpx.request(method, server.url + path, json={})
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert "bearer token" in missing.json()["detail"]
    wrong = httpx.request(method, server.url + path, json={}, headers={"Authorization": "Bearer wrong-token"})
    assert wrong.status_code == 403
    basic = httpx.request(method, server.url + path, json={}, headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status_code == 403


def test_the_client_with_a_wrong_token_fails_clearly(server):
    with server.client(token="wrong-token-0123456789") as service, pytest.raises(ServiceError) as refused:
        service.health()
    assert refused.value.status_code == 403 and refused.value.exit_code == 2 and "token is wrong" in str(refused.value)


def test_a_non_loopback_address_needs_a_token(tmp_path, monkeypatch):
    """`tritongym serve` refuses before it opens anything: the CLI app in this process (what `python -m tritongym`
    runs), since the refusal, its message and its exit code are the CLI's, not the process boundary's."""
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    monkeypatch.delenv("TRITONGYM_SERVICE_TOKEN", raising=False)
    done = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--registry", str(tmp_path / "r.db")])
    assert done.exit_code == 2, (done.stdout, done.stderr, done.exception)
    assert "refusing to serve on 0.0.0.0 without a token" in done.stderr
    assert not (tmp_path / "r.db").exists()  # refused before anything was opened


def test_the_exposure_rule():
    from tritongym.service.server import check_exposure, is_loopback, settings

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "gpu-box.example.org"))
    for host in ("0.0.0.0", "::", "192.168.1.7", "gpu-box"):
        with pytest.raises(ConfigError, match="without a token"):
            check_exposure(settings(host=host))
        check_exposure(settings(host=host, token=TOKEN))
    check_exposure(settings(host="127.0.0.1"))
    with pytest.raises(ConfigError, match="at least 16"):
        check_exposure(settings(host="127.0.0.1", token="short"))


# --- limits, crashes, a full queue ---------------------------------------------------------------------


def test_oversized_requests_get_413_before_they_are_read(small_server):
    big = {"candidates": [{"source": RELU_KERNEL + "#" * (20 << 10), "problem": "relu"}]}
    declared = httpx.post(small_server.url + "/v1/tasks", json=big)
    assert declared.status_code == 413 and "limit of 16384 bytes" in declared.json()["detail"]

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"candidates": [{"problem": "relu", "source": "'
        for _ in range(40):
            yield b"#" * 1024
        yield b'"}]}'

    streamed = httpx.post(small_server.url + "/v1/tasks", content=chunks())
    assert streamed.status_code == 413
    too_many = {"candidates": [{"source": RELU_KERNEL, "problem": "relu"}] * 4}
    assert httpx.post(small_server.url + "/v1/tasks", json=too_many).status_code == 413
    scraped = httpx.get(small_server.url + "/metrics")
    assert scraped.headers["content-type"] == CONTENT_TYPE_LATEST  # the Prometheus text format of this version
    assert sample(scraped.text, "tritongym_requests_rejected_total", reason="too_large") == 3


def test_a_full_queue_answers_429_and_crashing_candidates_get_verdicts(small_server):
    hang = relu_with("while True:\n    pass")
    segfault = relu_with("import ctypes\nctypes.string_at(0)")
    raises = relu_with("raise RuntimeError('boom from the candidate')")
    with small_server.client(token=None, retry_s=0) as service:
        first = service.submit_many([{"source": hang, "problem": "relu"}, {"source": segfault, "problem": "relu"}])
        refused = httpx.post(
            small_server.url + "/v1/tasks", json={"candidates": [{"source": raises, "problem": "relu"}]}
        )
        assert refused.status_code == 429, refused.text
        assert "queue is full" in refused.json()["detail"] and int(refused.headers["retry-after"]) >= 1
        with pytest.raises(ServiceError) as full:  # the client gives up at once with retry_s=0
            service.submit(raises, "relu")
        assert full.value.status_code == 429 and full.value.exit_code == 3
        hung, crashed = service.wait([t.id for t in first], timeout_s=120)
    assert hung.result.status.value == "timeout" and "time limit of 4 s" in hung.result.message
    assert crashed.result.status.value == "crashed" and "SIGSEGV" in crashed.result.message
    with small_server.client(token=None, retry_s=60) as service:  # still serving, and the queue has room again
        raised = service.evaluate(raises, "relu", timeout_s=120)
        assert raised.status.value == "runtime_error" and "boom from the candidate" in raised.message
        assert service.evaluate(RELU_KERNEL, "relu", timeout_s=120).status.value == "ok"
        metrics = service.metrics()
    assert sample(metrics, "tritongym_requests_rejected_total", reason="queue_full") == 2
    for status in ("timeout", "crashed", "runtime_error", "ok"):
        assert sample(metrics, "tritongym_evaluations_total", status=status) == 1


# --- restarts ------------------------------------------------------------------------------------------


def _states(registry: Path) -> dict[str, str]:
    with sqlite3.connect(registry) as db:
        return dict(db.execute("SELECT id, state FROM service_tasks"))


# slow tier (9 s: two servers and four evaluations): the fast tier's next start takes up the tasks a stop left
# queued in test_stopping_drains_running_tasks_and_leaves_queued_ones_for_the_next_start
@pytest.mark.slow
def test_a_killed_server_loses_no_accepted_task(tmp_path):
    served = Served(tmp_path, "--lanes", "1")
    sources = [relu_block(b) for b in (128, 256, 512, 2048)]
    with served.client(token=None) as service:
        ids = [t.id for t in service.submit_many([{"source": s, "problem": "relu"} for s in sources])]
        deadline = time.monotonic() + 60
        while service.result(ids[0]).state == TaskState.queued and time.monotonic() < deadline:
            time.sleep(0.05)
    assert served.stop(signal.SIGKILL) == -signal.SIGKILL
    before = _states(served.registry)
    assert set(before) == set(ids) and "queued" in before.values(), before
    assert set(before.values()) <= {"queued", "running", "done"}, before
    unfinished = sum(state != "done" for state in before.values())  # at least the queued one

    again = Served(tmp_path, "--lanes", "2", registry=served.registry)
    try:
        with again.client(token=None) as service:
            tasks = service.wait(ids, timeout_s=150)
            assert [t.state for t in tasks] == [TaskState.done] * 4, [(t.state, t.error) for t in tasks]
            assert all(t.result.status.value == "ok" for t in tasks)
            metrics = service.metrics()
        assert sample(metrics, "tritongym_tasks_resumed_total") == unfinished, before
        # a task the kill interrupted was started once by each process; every other task ran once
        expected = {task_id: 2 if state == "running" else 1 for task_id, state in before.items()}
        assert {t.id: t.attempts for t in tasks} == expected, before
    finally:
        again.stop_gracefully()
    assert set(_states(served.registry).values()) == {"done"}


def test_stopping_drains_running_tasks_and_leaves_queued_ones_for_the_next_start(tmp_path, fast_config):
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.plugins import PluginHost
    from tritongym.service.service import EvaluationService

    def service() -> EvaluationService:
        evaluator = Evaluator(fast_config.model_copy(update={"trials": 1}), host=PluginHost(load_entry_points=False))
        from tritongym.core.problems import load_problem

        return EvaluationService(evaluator, tmp_path / "r.db", {"relu": load_problem("relu")}, lanes=1, capacity=8)

    first = service()
    first.start()
    from tritongym.service.protocol import Submission

    views = first.submit([first.prepare(Submission(source=relu_block(b), problem="relu")) for b in (2048, 4096, 8192)])
    ids = [v.id for v in views]
    deadline = time.monotonic() + 60
    while first.view(ids[0]).state == TaskState.queued and time.monotonic() < deadline:
        time.sleep(0.02)
    assert first.stop(drain_s=120) is True  # the running task finished; the others were not started
    states = _states(tmp_path / "r.db")
    assert states[ids[0]] == "done" and [states[i] for i in ids[1:]] == ["queued", "queued"]

    second = service()
    assert second.start() == 2
    deadline = time.monotonic() + 120
    while not second.all_finished(ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert second.stop(drain_s=30)
    assert [v.result.status.value for v in second.views(ids).values()] == ["ok"] * 3


HANG = relu_with("while True:\n    pass")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether the process has ended (SIGKILL is delivered at once, but a process takes a moment to exit)."""
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _task_sandboxes(served: Served) -> list[int]:
    """The pids of `served`'s sandbox processes once its task's candidate runs: the CPU fork server (the server's
    child, started with it), the worker it forked for the task and the candidate's process the worker forks (in a
    session of its own).  Waited for by what runs, not by a time: the candidate's process exists, so the hung
    candidate is under way."""
    from tritongym.service.sandboxes import sandbox_processes

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        parents = sandbox_processes()
        depth = {pid: 1 for pid, parent in parents.items() if parent == served.proc.pid}
        grown = True
        while grown:  # the fork server's children, and theirs
            below = {pid: depth[parent] + 1 for pid, parent in parents.items() if parent in depth}
            grown = bool(below.keys() - depth.keys())
            depth |= below
        if max(depth.values(), default=0) >= 3:
            return sorted(depth)
        time.sleep(0.05)
    raise AssertionError(f"no candidate of the server ran within 120 s:\n{served.out.read_text()}")


def _all_gone(pids: list[int], within_s: float = 5.0) -> bool:
    """Whether every process in `pids`, and every process in a session one of them leads (the candidate's forks,
    orphaned under init if they outlived their parents), has ended."""

    def session(pid: int) -> int | None:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
        except (OSError, ValueError, IndexError):
            return None

    def left() -> list[int]:
        alive = [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit() and _alive(int(e.name))]
        return [pid for pid in alive if pid in pids or session(pid) in pids]

    deadline = time.monotonic() + within_s
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not left()


# slow tier (12 s: a served process stopped by SIGTERM mid-task): the fast tier drains in
# test_stopping_drains_running_tasks_and_leaves_queued_ones_for_the_next_start and
# test_a_drain_that_runs_out_kills_the_sandbox_and_records_no_verdict
@pytest.mark.slow
def test_sigterm_drains_while_answering_503_and_stopping_and_leaves_no_sandbox(tmp_path):
    served = Served(tmp_path, "--lanes", "1", "--timeout", "4", "--drain", "60")
    with served.client(token=None) as service:
        task = service.submit(HANG, "relu")
    sandboxes = _task_sandboxes(served)
    served.proc.send_signal(signal.SIGTERM)
    with httpx.Client(base_url=served.url, timeout=10) as http:  # the hung candidate runs out its 4 s meanwhile
        deadline = time.monotonic() + 5  # the server's state polled until the signal is handled, not slept on
        while (health := http.get("/health")).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert health.status_code == 503 and health.json()["status"] == "stopping", health.text
        refused = http.post("/v1/tasks", json={"candidates": [{"source": RELU_KERNEL, "problem": "relu"}]})
        assert refused.status_code == 503 and "shutting down" in refused.json()["detail"]
        assert refused.headers["retry-after"]
        kernelgym = http.post("/evaluate", json=kernelgym_payload("kg_late"))
        assert kernelgym.status_code == 503
        assert http.get(f"/v1/tasks/{task.id}").json()["state"] == "running"
    assert served.proc.wait(90) == -signal.SIGTERM
    assert _states(served.registry)[task.id] == "done"  # finished within the drain: its timeout verdict
    assert _all_gone(sandboxes)


def test_a_drain_that_runs_out_kills_the_sandbox_and_records_no_verdict(tmp_path):
    """The task left running is run again at the next start, so its sandbox must not outlive the server, and
    the sandbox's death must not be recorded as the candidate's crash."""
    served = Served(tmp_path, "--lanes", "1", "--timeout", "60", "--drain", "1")
    with served.client(token=None) as service:
        task = service.submit(HANG, "relu")
    sandboxes = _task_sandboxes(served)
    assert served.stop(signal.SIGTERM) == -signal.SIGTERM
    # the task's sandbox, and under the zygote the CPU fork server it was forked from (recorded too)
    assert re.search(r"killing [12] sandbox\(es\) of tasks left running", served.out.read_text()), (
        served.out.read_text()
    )
    assert _all_gone(sandboxes)
    assert _states(served.registry)[task.id] == "running"  # for the next start
    with sqlite3.connect(served.registry) as db:
        stored = db.execute("SELECT status FROM evaluations WHERE kernel_id = ?", [task.kernel_id]).fetchall()
    assert stored == []


# slow tier (10 s: a served process killed mid-task and started again): the fast tier's processes die with their
# owner in test_pool_ownership.py's test_a_pools_zygote_workers_and_keepers_are_recorded_and_die_with_its_process
@pytest.mark.slow
def test_after_kill_9_the_sandbox_dies_with_the_server_and_the_next_start_resumes_its_task(tmp_path):
    served = Served(tmp_path, "--lanes", "1", "--timeout", "60")
    with served.client(token=None) as service:
        task = service.submit(HANG, "relu")
    sandboxes = _task_sandboxes(served)
    assert served.stop(signal.SIGKILL) == -signal.SIGKILL
    assert _all_gone(sandboxes)  # its lifeline closed with the server: no orphan runs on under init
    again = Served(tmp_path, "--lanes", "1", "--timeout", "60", "--drain", "0", registry=served.registry)
    try:
        with again.client(token=None) as service:
            assert service.health().status == "healthy"  # the lanes are up: start() has run
            deadline = time.monotonic() + 30
            while service.result(task.id).attempts < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
        resumed = _task_sandboxes(again)
    finally:
        again.stop(signal.SIGTERM)
    assert _all_gone(resumed)


# A process that started a sandbox the way `sandbox.run_in_sandbox` does (recorded, holding the lifeline or not)
# and calls itself what a Ray actor calls itself: `ray::BackendActor.measure` as argv[0] (bash's `exec -a`) and
# as its name (PR_SET_NAME).  Neither "python" in its command nor init as the sandbox's parent.
OWNER = """
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(15, b"ray::BackendAct", 0, 0, 0)
from tritongym.core.sandbox import owned
folder = owned.make_folder("sandbox")
lifeline = sys.argv[2] == "lifeline"
env = {**os.environ, **(owned.lifeline_env() if lifeline else {})}
os.mkfifo(os.path.join(folder, "task"))  # its task never comes, and its input never ends: it waits
proc = subprocess.Popen(
    [sys.argv[1], "-s", "-m", "tritongym.core.worker", os.path.join(folder, "worker.log")],
    stdin=os.open(os.path.join(folder, "task"), os.O_RDWR), env=env, start_new_session=True,
    pass_fds=(owned.lifeline_fd(),) if lifeline else (),
)
owned.started(proc.pid, "sandbox")
print(proc.pid, folder, flush=True)
time.sleep(600)
"""


def _renamed_owner(lifeline: bool) -> tuple[subprocess.Popen, int, Path]:
    """The owner, its sandbox's pid (a real worker process waiting for its task on stdin) and its folder."""
    import site

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[1]), *site.getsitepackages()]))
    argv = ["bash", "-c", 'exec -a "ray::BackendActor.measure" "$1" -c "$0" "$1" "$2"', OWNER, sys.executable]
    owner = subprocess.Popen([*argv, "lifeline" if lifeline else "none"], stdout=subprocess.PIPE, text=True, env=env)
    pid, folder = owner.stdout.readline().split()
    assert Path(f"/proc/{owner.pid}/cmdline").read_bytes().startswith(b"ray::BackendActor.measure\0")
    return owner, int(pid), Path(folder)


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    """Records of started processes apart from other tests' (servers started here inherit it)."""
    monkeypatch.setenv("TRITONGYM_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "runtime"


def test_a_service_started_beside_a_ray_evaluation_leaves_its_sandbox_alone(tmp_path, runtime_dir):
    """The sandbox of a live process that renamed itself as a Ray actor does survives a service's start (its
    start-up clean-up once killed it, and the honest kernel in it was stored as `crashed`); once its owner is
    SIGKILLed the sandbox dies with it (the lifeline), and the next start removes the folder it left."""
    owner, sandbox, folder = _renamed_owner(lifeline=True)
    try:
        served = Served(tmp_path / "first", "--lanes", "1")
        try:
            with served.client(token=None) as service:
                assert service.health().status == "healthy"  # start() and its clean-up have run
            assert _alive(sandbox) and folder.is_dir()
        finally:
            served.stop_gracefully()
        assert _alive(sandbox) and folder.is_dir()
    finally:
        owner.kill()
        owner.wait()
    assert _gone(sandbox)  # dies with the process that started it
    assert folder.is_dir()  # kill -9 skips every finally: the folder stays until a clean-up
    served = Served(tmp_path / "second", "--lanes", "1")
    try:
        with served.client(token=None) as service:
            assert service.health().status == "healthy"
        assert not folder.exists()
    finally:
        served.stop_gracefully()


def test_kill_orphans_kills_only_what_a_dead_owner_recorded(runtime_dir):
    from tritongym.service import sandboxes

    owner, sandbox, folder = _renamed_owner(lifeline=False)  # a sandbox that outlives its owner
    live_owner, live_sandbox, live_folder = _renamed_owner(lifeline=True)
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)", "tritongym.core.worker"]  # looks like one
    quiet = "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"  # holds no pipe of ours: run() returns at once
    spawn = f"import subprocess; print(subprocess.Popen({sleeper!r}, {quiet}).pid)"
    unrecorded = int(subprocess.run([sys.executable, "-c", spawn], capture_output=True, text=True).stdout)
    try:
        assert sandboxes.kill_orphans() == []  # every owner lives
        owner.kill()
        owner.wait()
        assert _alive(sandbox) and _alive(unrecorded)  # orphans under init now
        assert sandboxes.kill_orphans() == [sandbox]
        assert _gone(sandbox) and not folder.exists()
        # an orphan nobody recorded is not ours to guess at; a live owner's sandbox is its own
        assert _alive(unrecorded) and _alive(live_sandbox) and live_folder.is_dir()
        assert list(runtime_dir.glob("owned/*.json")) and sandboxes.kill_orphans() == []
    finally:
        os.kill(unrecorded, signal.SIGKILL)
        live_owner.kill()
        live_owner.wait()
    assert _gone(live_sandbox)


# --- KernelGYM's API -----------------------------------------------------------------------------------


def kernelgym_payload(task_id: str, kernel_code: str = RELU_KERNEL, **extra) -> dict:
    """What KernelGYM's RL client (drkernel/kernel/rewards/reward_client.py) POSTs to /evaluate."""
    return {
        "task_id": task_id,
        "reference_code": RELU_REFERENCE,
        "kernel_code": kernel_code,
        "backend": "triton",
        "num_correct_trials": 5,
        "num_perf_trials": 100,
        "timeout": 300,
        "priority": "normal",
        "entry_point": "Model",
        "is_valid": False,
        "verbose_errors": True,
        "enable_profiling": True,
        "detect_decoy_kernel": True,
        "reference_backend": None,
        **extra,
    }


def kernelgym_poll(http: httpx.Client, task_id: str) -> dict:
    """KernelGYM's client loop: poll /status until a final status, then fetch /results."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = http.get(f"/status/{task_id}").json()
        if status["status"] in ("completed", "failed", "timeout", "cancelled"):
            if status["status"] == "completed":
                result = http.get(f"/results/{task_id}")
                assert result.status_code == 200
                return result.json()
            return status
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} did not finish")


def test_the_kernelgym_request_and_response(server):
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
        accepted = http.post(
            "/evaluate", json=kernelgym_payload("kg_000001", use_reference_cache=True, uuid="relu-ref")
        )
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["task_id"] == "kg_000001"
        assert accepted.json()["status"] == "completed"  # KernelGYM's /evaluate answers with the result
        result = kernelgym_poll(http, "kg_000001")
        assert result == accepted.json()
        assert result["status"] == "completed" and result["task_id"] == "kg_000001"
        assert (result["compiled"], result["correctness"], result["decoy_kernel"]) == (True, True, False)
        assert result["error_message"] is None and result["completed_at"]
        metadata = result["metadata"]
        for field in (
            "num_custom_kernels",
            "num_total_kernels",
            "custom_kernel_cuda_time_in_profiling_us",
            "total_kernel_run_time_in_profiling_us",
        ):
            assert field in metadata
        assert metadata["tritongym"]["status"] == "ok" and metadata["tritongym"]["problem"] == "kernelgym/relu-ref"
        assert metadata["tritongym"]["requested"]["num_correct_trials"] == 5
        assert metadata["tritongym"]["applied"] == {"trials": 5, "timeout_s": 120.0}  # capped at the service's
        assert metadata["tritongym"]["trials"] == 5 and metadata["backend"] == "triton-cpu"
        assert result["speedup"] == 0.0 and result["error_code"] is None  # the CPU does not time

        again = http.post("/evaluate", json=kernelgym_payload("kg_000001", kernel_code=relu_with("return x")))
        assert again.json()["status"] == "completed" and again.json()["correctness"] is True  # the same task

        wrong = http.post("/evaluate", json=kernelgym_payload("kg_000002", relu_with("return x"), backend="cuda"))
        wrong = wrong.json()  # KernelGYM's other backend name: judged on the service's backend all the same
        assert wrong["status"] == "completed" and wrong["correctness"] is False and wrong["compiled"] is True
        assert "incorrect" in wrong["error_message"] and wrong["error_code"] == "CORRECTNESS_ERROR"
        assert (wrong["speedup"], wrong["reference_runtime"]) == (0.0, -1.0)
        assert kernelgym_poll(http, "kg_000002") == wrong

        # the request's time limit is the candidate's: 3 s, not the service's 120
        hung = http.post("/evaluate", json=kernelgym_payload("kg_hang", relu_with("while True:\n    pass"), timeout=3))
        hung = hung.json()
        assert (hung["status"], hung["error_code"], hung["compiled"]) == ("failed", "TIMEOUT_ERROR", False), hung
        assert "time limit of 3 s" in hung["error_message"]
        assert http.get("/status/kg_hang").json()["status"] == "failed"

        for refused in (kernelgym_payload("kg_3", backend="hip"), kernelgym_payload("kg_4", entry_point="Net")):
            answer = http.post("/evaluate", json=refused)
            assert answer.status_code == 422 and ("backend" in answer.text or "entry_point" in answer.text)
        for out_of_range in (kernelgym_payload("kg_5", num_correct_trials=21), kernelgym_payload("kg_6", timeout=0)):
            assert http.post("/evaluate", json=out_of_range).status_code == 422
        assert http.get("/status/kg_unknown").status_code == 404


# --- the client CLI ------------------------------------------------------------------------------------


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`tritongym client ARGS` through the CLI app in this process (what `python -m tritongym` runs), with `env`
    set for the call: the client imports no torch, so a fresh interpreter per call would only add its start."""
    from typer.testing import CliRunner

    from tritongym.cli.app import app

    done = CliRunner().invoke(app, ["client", *args], env={"TRITONGYM_LOAD_PLUGINS": "", **(env or {})})
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return subprocess.CompletedProcess(["tritongym", "client", *args], done.exit_code, done.stdout, done.stderr)


def test_the_client_cli_submits_waits_and_reports_with_eval_exit_codes(server, tmp_path):
    env = {"TRITONGYM_SERVICE_URL": server.url, "TRITONGYM_SERVICE_TOKEN": TOKEN}
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(relu_block(2048))
    bad.write_text(relu_with("return x + 1"))

    ok = run_cli("submit", str(good), "-p", "relu", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("ok  relu")

    queued = run_cli("submit", str(bad), "-p", "relu", "--no-wait", "--json", env=env)
    assert queued.returncode == 0, queued.stderr

    task_id = json.loads(queued.stdout)["id"]
    waited = run_cli("wait", task_id, "--json", env=env)
    assert waited.returncode == 1 and json.loads(waited.stdout)[0]["result"]["status"] == "incorrect"

    health = run_cli("health", "--json", env=env)
    assert health.returncode == 0 and json.loads(health.stdout)["backend"] == "triton-cpu"
    assert run_cli("best", "relu", env=env).returncode == 0
    none = run_cli("best", "relu", "--device", "nowhere", "--json", env=env)
    assert none.returncode == 1 and "no honest" in json.loads(none.stdout)["error"]
    unknown = run_cli("submit", str(good), "-p", "nope", env=env)
    assert unknown.returncode == 2 and "no problem named 'nope'" in unknown.stderr
    unreachable = run_cli("health", "--url", "http://127.0.0.1:9", env=env)
    assert unreachable.returncode == 3 and "cannot reach" in unreachable.stderr


# slow tier (7 s: seven CLI processes): the fast tier's client CLI end to end is
# test_the_client_cli_submits_waits_and_reports_with_eval_exit_codes
@pytest.mark.slow
def test_the_client_cli_names_a_problem_as_eval_does(server, tmp_path):
    """`client submit --problem` takes what `eval --problem` takes: a .py file or SOURCE#NAME here is read and its
    reference sent with the candidate (the service has no copy); `client best FILE` finds the kernel under the
    name the file gives it.  The old `--problem-file` still works, with a note, and is gone from --help."""
    env = {"TRITONGYM_SERVICE_URL": server.url, "TRITONGYM_SERVICE_TOKEN": TOKEN}
    kernel, source = tmp_path / "k.py", tmp_path / "kb"
    kernel.write_text(relu_block(8192))
    source.mkdir()
    # a computation of its own: the registry keys problems by their normalised source, so a copy of relu (or one
    # with a comment more) would be stored as relu
    (source / "cli_relu.py").write_text(RELU_REFERENCE + "\nCLIENT_COPY = True\n")

    by_file = run_cli("submit", str(kernel), "--problem", str(source / "cli_relu.py"), "--json", env=env)
    assert by_file.returncode == 0, by_file.stdout + by_file.stderr
    assert json.loads(by_file.stdout)["result"]["problem_id"] == "cli_relu"
    by_reference = run_cli("submit", str(kernel), "-p", f"{source}#cli_relu", "--json", env=env)
    assert by_reference.returncode == 0 and json.loads(by_reference.stdout)["result"]["problem_id"] == "cli_relu"
    old = run_cli("submit", str(kernel), "--problem-file", str(source / "cli_relu.py"), "--json", env=env)
    assert old.returncode == 0 and json.loads(old.stdout)["result"]["problem_id"] == "cli_relu", old.stderr
    assert "--problem-file is now --problem" in old.stderr
    assert "--problem-file" not in run_cli("submit", "--help", env={**env, "COLUMNS": "300"}).stdout

    best = run_cli("best", str(source / "cli_relu.py"), "--json", env=env)
    assert best.returncode == 0 and json.loads(best.stdout)["problem_id"] == "cli_relu", best.stdout + best.stderr
    assert run_cli("best", f"{source}#cli_relu", env=env).returncode == 0


# slow tier (22 s): a Ray cluster of its own; the fast tier serves on the local pool (this module) and
# evaluates on Ray in test_ray.py
@pytest.mark.slow
def test_a_served_process_evaluates_on_ray_actors(tmp_path):
    """`tritongym serve --ray local`: the service starts its own Ray, its two lanes hand the sandboxes to two
    actors, and the service alone writes the registry; /metrics counts busy time per actor."""
    served = Served(tmp_path, "--lanes", "2", "--workers", "2", "--timeout", "60", "--ray", "local")
    try:
        with served.client(token=None) as service:
            tasks = service.evaluate_many(
                [
                    {"source": RELU_KERNEL, "problem": "relu"},
                    {"source": relu_block(512), "problem": "relu"},
                    {"source": relu_with("return x * 2"), "problem": "relu"},
                ],
                timeout_s=200,
            )
            metrics = service.metrics()
    finally:
        served.stop_gracefully(ray=True)
    assert [t.result.status.value for t in tasks] == ["ok", "ok", "incorrect"], [t.result.message for t in tasks]
    busy = [line for line in metrics.splitlines() if line.startswith("tritongym_device_busy_seconds_total{")]
    assert busy and all('device="actor' in line for line in busy), metrics
    assert sum(float(line.rsplit(" ", 1)[1]) for line in busy) > 0
    with sqlite3.connect(served.registry) as db:
        stored = db.execute("select count(*) from evaluations where problem_name = 'relu'").fetchone()[0]
    assert stored == 3


# --- on a GPU ------------------------------------------------------------------------------------------


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_on_a_gpu_verdicts_are_timed_and_busy_time_is_counted_per_gpu(tmp_path):
    served = Served(tmp_path, "--lanes", "2", backend="triton-cuda")
    try:
        with served.client(token=None) as service:
            tasks = service.evaluate_many([{"source": s, "problem": "relu"} for s in (RELU_KERNEL, relu_block(512))])
            assert [t.result.status.value for t in tasks] == ["ok", "ok"], [t.result.message for t in tasks]
            assert all(t.result.runtime_ms and t.result.speedup for t in tasks)
            kg = httpx.post(served.url + "/evaluate", json=kernelgym_payload("kg_gpu"), timeout=30)
            assert kg.status_code == 200
            with httpx.Client(base_url=served.url, timeout=30) as http:
                result = kernelgym_poll(http, "kg_gpu")
            assert result["correctness"] is True and result["speedup"] and result["kernel_runtime"]
            assert result["metadata"]["num_custom_kernels"] >= 1
            metrics = service.metrics()
        busy = [line for line in metrics.splitlines() if line.startswith("tritongym_device_busy_seconds_total{")]
        assert busy and all(line.split('device="')[1].startswith("cuda:") for line in busy), metrics
        assert sum(float(line.rsplit(" ", 1)[1]) for line in busy) > 0
    finally:
        served.stop_gracefully()
