"""The Ray executor (`executor = "ray"`) on a real local Ray cluster: two CPUs, two actors, triton-cpu.

One Ray instance serves the whole module (starting Ray on two shared cores takes seconds); each test's
Evaluator starts its own actors and kills them when it closes.  The GPU test at the end runs one actor per
GPU on the device: python -m pytest -m gpu tests/test_ray.py
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
import ray
import torch
from typer.testing import CliRunner

from tests.conftest import RELU_KERNEL, process_alive, process_gone
from tritongym.cli.app import app
from tritongym.core.config import EvalConfig, load_config
from tritongym.core.errors import BackendUnavailable, ConfigError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

HACKS = Path(__file__).parent / "hacks" / "candidates"


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _host() -> PluginHost:
    return PluginHost(load_entry_points=False)


def _config(**overrides) -> EvalConfig:
    return EvalConfig(backend="triton-cpu", trials=2, timeout_s=90, workers=2, seed=3, **overrides)


def _verdict(result) -> tuple:
    failed = sorted(c.name for c in result.checks if not c.passed)
    return result.status, result.correct, result.hacked, failed, result.reward.total


# slow tier (15 s: a batch judged twice, on Ray and in process): a Ray cluster's start costs 9 s; the fast tier
# routes tasks to actors without one (test_a_task_goes_to_its_problems_actor_while_that_one_has_a_free_slot)
@pytest.mark.slow
def test_ray_verdicts_equal_the_in_process_ones(ray_cluster):
    relu, softmax = load_problem("relu"), load_problem("softmax")
    pairs = [
        (RELU_KERNEL, relu),
        (RELU_KERNEL.replace("tl.maximum(x, 0.0)", "x"), relu),  # incorrect
        (RELU_KERNEL.replace("return out", "raise RuntimeError('boom')"), relu),  # runtime error
        ((HACKS / "grad_mode_shortcut.py").read_text(), softmax),  # hacked: only a worker probe can tell
    ]
    with Evaluator(_config(), host=_host()) as local:
        expected = [_verdict(r) for r in local.evaluate_many(pairs)]
    with Evaluator(_config(executor="ray"), host=_host()) as on_ray:
        assert len(on_ray.executor.actors) == 2
        assert on_ray.device_class == "cpu"
        got = [_verdict(r) for r in on_ray.evaluate_many(pairs)]
    assert [v[0] for v in expected] == [Status.ok, Status.incorrect, Status.runtime_error, Status.hacked]
    assert got == expected


# slow tier: a Ray cluster's start costs 9 s; the fast tier routes tasks to actors without one
@pytest.mark.slow
def test_lanes_on_threads_share_one_ray_executor(ray_cluster):
    """`tritongym serve` runs several lanes (threads, each its own Evaluator view) over one executor: every
    batch completes, the routing counters come back to zero, and busy time is counted per actor."""
    relu = load_problem("relu")
    variants = [RELU_KERNEL.replace("BLOCK=1024", f"BLOCK={b}").replace("1024)", f"{b})") for b in (256, 512)]
    wrong = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "x")
    results: dict[int, list] = {}
    with Evaluator(_config(executor="ray"), host=_host()) as evaluator:

        def lane(number: int, sources: list[str]) -> None:
            view = evaluator.with_registry(None)
            results[number] = [r.status for r in view.evaluate_many([(src, relu) for src in sources])]

        lanes = [
            threading.Thread(target=lane, args=(0, [RELU_KERNEL, wrong])),
            threading.Thread(target=lane, args=(1, variants)),
        ]
        for thread in lanes:
            thread.start()
        for thread in lanes:
            thread.join(180)
        executor = evaluator.executor
        assert results == {0: [Status.ok, Status.incorrect], 1: [Status.ok, Status.ok]}
        assert executor.busy == [0, 0]
        busy = executor.busy_seconds()
        assert len(busy) == 2 and all(seconds > 0 for seconds in busy.values()), busy  # both actors worked


# slow tier: a Ray cluster's start costs 9 s; the fast tier routes tasks to actors without one
@pytest.mark.slow
def test_a_killed_actor_s_task_is_retried_on_the_other(ray_cluster, tmp_path):
    """Actor 0 is killed while it runs a task: that task runs again on actor 1 and the batch completes."""
    relu = load_problem("relu")
    pairs = [(RELU_KERNEL.replace("1024", str(b)), relu) for b in (1024, 512, 256, 128)]
    with Evaluator(_config(executor="ray", ray={"max_restarts": 0}), host=_host()) as evaluator:
        executor = evaluator.executor
        killed = threading.Event()

        def kill_actor_0_mid_task() -> None:
            deadline = time.monotonic() + 120
            while executor.in_flight().get(0, 0) == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3)  # inside the task: a sandbox alone takes seconds to import torch and Triton
            ray.kill(executor.actors[0], no_restart=True)
            killed.set()

        killer = threading.Thread(target=kill_actor_0_mid_task)
        killer.start()
        results = evaluator.evaluate_many(pairs)
        killer.join()
        assert killed.is_set()
        assert [r.status for r in results] == [Status.ok] * 4
        assert executor.retried == 1
        assert executor.lost == {0}
        assert executor.in_flight() == {1: 0}


# slow tier (14 s, 9 of them a Ray cluster's start): the fast tier routes tasks to actors without a cluster
# (test_a_task_goes_to_its_problems_actor_while_that_one_has_a_free_slot) and validates the settings
@pytest.mark.slow
def test_cli_eval_runs_through_ray(ray_cluster, tmp_path):
    """`tritongym eval --ray local` in a process that already runs Ray uses that instance.  One candidate, one
    actor (`[ray] actors = 1`): each actor imports torch and Triton and starts its own fork server, and routing
    over two is test_ray_verdicts_equal_the_in_process_ones's."""
    candidate = tmp_path / "relu.py"
    candidate.write_text(RELU_KERNEL)
    registry = tmp_path / "registry.db"
    config = tmp_path / "eval.toml"
    config.write_text("[ray]\nactors = 1\n")
    args = ["eval", str(candidate), "-p", "relu", "--backend", "triton-cpu", "--trials", "2", "--ray", "local"]
    args += ["--config", str(config)]
    result = CliRunner().invoke(app, [*args, "--registry", str(registry), "--json"])
    assert result.exit_code == 0, result.output
    assert '"status": "ok"' in result.output
    assert ray.is_initialized()  # not ours to shut down


# slow tier: a Ray cluster's start costs 9 s; the fast tier routes tasks to actors without one
@pytest.mark.slow
def test_cli_tune_runs_its_variants_through_ray(ray_cluster, tmp_path):
    """`tritongym tune --ray local`: every variant judged on the actors, every record kept by this process."""
    candidate = tmp_path / "relu.py"
    candidate.write_text(RELU_KERNEL)
    registry = str(tmp_path / "registry.db")
    args = [
        "tune",
        "--file",
        str(candidate),
        "--problem",
        "relu",
        "--backend",
        "triton-cpu",
        "--trials",
        "2",
        "--budget",
        "2",
    ]
    result = CliRunner().invoke(app, [*args, "--ray", "local", "--registry", registry, "--json"])
    assert result.exit_code == 0, result.output
    (tuned,) = json.loads(result.stdout)["problems"]
    assert tuned["status"] == "tuned" and tuned["variants"] == 2 and tuned["evaluated"] == 3
    # RELU_KERNEL's grid hard-codes cdiv(n, 1024): the BLOCK=512 variant leaves half the output unwritten
    assert [r["status"] for r in tuned["records"]] == ["ok", "incorrect", "ok"] and tuned["rejected"] == 1


def test_ray_settings_are_validated(tmp_path):
    config = tmp_path / "eval.toml"
    config.write_text('executor = "ray"\n[ray]\naddress = "auto"\nactors = 0\n')
    with pytest.raises(ConfigError, match="ray.actors"):
        load_config(config)
    with pytest.raises(ConfigError, match="executor"):
        load_config(None, executor="dask")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_one_actor_per_gpu_times_like_the_local_pool(ray_cluster):
    """On the device: one actor per GPU, each owning that GPU's warm pool; verdicts equal the local ones, and
    each kernel's runtime and speedup are within 25% of the local pool's (paired timing on the same card: a
    Ray actor adds no work to the timed region, so what it times is what the local pool times)."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    assert gpus == torch.cuda.device_count()
    problems = [load_problem(name, "gpu") for name in ("relu", "softmax", "layer_norm")]
    pairs = [(p.solution, p) for p in problems]
    config = EvalConfig(backend="triton-cuda", trials=3, seed=3, executor="ray")
    with Evaluator(config, host=_host()) as on_ray:
        assert len(on_ray.executor.actors) == gpus
        assert on_ray.device_class.startswith("cuda:")
        results = on_ray.evaluate_many(pairs)
    assert [r.status for r in results] == [Status.ok] * len(pairs)
    assert all(r.speedup is not None and r.pr is not None for r in results)
    with Evaluator(config.model_copy(update={"executor": "local"}), host=_host()) as local:
        assert local.device_class == on_ray.device_class
        here = local.evaluate_many(pairs)
    # the verdict without the reward total, which carries the speedup (compared below, with a tolerance)
    assert [_verdict(r)[:4] for r in results] == [_verdict(r)[:4] for r in here]
    for remote, mine in zip(results, here):
        for what in ("runtime_ms", "speedup"):
            a, b = getattr(remote, what), getattr(mine, what)
            assert b is not None and abs(a / b - 1) < 0.25, (remote.problem_id, what, a, b)


def test_a_task_goes_to_its_problems_actor_while_that_one_has_a_free_slot():
    """One keeper builds a problem's record: a task goes to the actor its problem is placed on (`ProblemGPUs`, as a
    local pool's GPUs) unless that one is full, lost or has failed the task; then to the least busy."""
    from tritongym.core.distributed.ray_executor import RayExecutor

    executor = object.__new__(RayExecutor)  # routing only: no actor is started
    executor.actors, executor.lost, executor.slots = [None, None, None], set(), [2, 2, 2]
    executor.concurrency = [1, 1, 1]  # each actor's pool runs one task at once, and is sent two
    executor.busy = [1, 1, 0]
    assert executor._pick(set(), placed=1) == 1  # free, though actor 2 is idler
    executor.busy = [1, 2, 0]
    assert executor._pick(set(), placed=1) == 2  # full: an actor whose pool would idle takes it
    executor.busy = [1, 2, 1]
    assert executor._pick(set(), placed=1) is None  # the others have work of their own: it waits for its actor
    executor.busy = [1, 1, 0]
    assert executor._pick({1}, placed=1) == 2  # the task died on it
    executor.lost = {1}
    assert executor._pick(set(), placed=1) == 2


def test_a_task_whose_actor_is_full_does_not_hold_back_the_tasks_behind_it():
    """The queue's first task waits for its own actor; the next, placed on an actor with room, goes meanwhile."""
    from collections import defaultdict, deque

    from tritongym.core.distributed.ray_executor import RayExecutor

    executor = object.__new__(RayExecutor)
    executor.actors, executor.lost, executor.slots, executor.concurrency = [None, None], set(), [2, 2], [1, 1]
    executor.busy = [2, 1]
    queue, placed, failed = deque([10, 11, 12]), {10: "0", 11: "0", 12: "1"}, defaultdict(set)
    assert executor._next(queue, failed, placed) == (2, 1)  # task 12, on its own actor 1
    executor.busy = [2, 2]
    assert executor._next(queue, failed, placed) is None  # every actor full
    executor.busy = [2, 0]
    queue = deque([10, 11])
    assert executor._next(queue, failed, placed) == (0, 1)  # actor 1 would idle: it takes actor 0's first task


def test_a_gpu_actor_is_sent_twice_what_its_pool_runs_at_once():
    """The rest wait in the actor's pool, their references built meanwhile, as in a local pool's queue."""
    from tritongym.core.distributed.ray_executor import actor_slots

    assert actor_slots(8, on_gpu=True, most=64, asked=None) == 16
    assert actor_slots(8, on_gpu=True, most=64, asked=8) == 8  # `ray.tasks_per_actor` stands
    assert actor_slots(48, on_gpu=True, most=64, asked=None) == 64
    assert actor_slots(4, on_gpu=False, most=1, asked=None) == 1  # a CPU actor: one task at a time


# A kernel that first says its process (the sandbox's candidate process) on a FIFO, then waits: for a byte on a second
# FIFO when `released` names one (the honest relu then runs), else for the kill.
WAITING = """import os, signal
fd = os.open({said!r}, os.O_WRONLY)
os.write(fd, str(os.getpid()).encode())
os.close(fd)
if {released!r}:
    os.read(os.open({released!r}, os.O_RDONLY), 1)
else:
    while True:
        signal.pause()
"""


def _waiting(tmp_path: Path, released: bool) -> tuple[str, Path, Path | None]:
    """The kernel behind `WAITING`, the FIFO it says its pid on and the one that releases it."""
    said, release = tmp_path / "said", tmp_path / "release" if released else None
    for fifo in (said, release):
        if fifo is not None:
            os.mkfifo(fifo)
    source = WAITING.format(said=str(said), released=str(release) if release else "") + RELU_KERNEL
    return source, said, release


def _said(fifo: Path) -> int:
    with open(fifo) as f:  # blocks until the kernel opens it
        return int(f.read())


# slow tier: a Ray cluster's start costs 9 s; the fast tier routes tasks to actors without one
@pytest.mark.slow
def test_a_task_whose_actors_both_die_is_the_backends_error_and_nothing_is_stored(ray_cluster, tmp_path):
    """Both actors killed under the task (from outside, as a lost node would end them): the infrastructure's
    failure, raised as the backend's error, never a `crashed` stored against the kernel (it was).  Each actor's
    sandbox dies with it (the lifeline): nothing of the task runs on."""
    source, said, _ = _waiting(tmp_path, released=False)
    registry = Registry(tmp_path / "registry.db")
    config = _config(executor="ray", ray={"max_restarts": 0}, skip_checks=["forbidden"])
    killed: list[tuple[int, int]] = []  # (actor, the candidate's process it ran)

    with Evaluator(config, registry=registry, host=_host()) as evaluator:
        executor = evaluator.executor

        def kill_the_actor_running_it() -> None:
            for _ in range(2):
                candidate = _said(said)
                (actor,) = [i for i, busy in executor.in_flight().items() if busy]
                ray.kill(executor.actors[actor], no_restart=True)
                killed.append((actor, candidate))

        killer = threading.Thread(target=kill_the_actor_running_it, daemon=True)
        killer.start()
        with pytest.raises(BackendUnavailable, match="InfrastructureFailure: the Ray actor evaluating this candidate"):
            evaluator.evaluate_many([(source, load_problem("relu"))])
        killer.join(60)
    assert sorted(actor for actor, _ in killed) == [0, 1] and executor.retried == 1
    assert all(process_gone(candidate) for _, candidate in killed)  # died with its actor
    assert registry.db.execute("select count(*) from evaluations").fetchone()[0] == 0
    registry.close()


# slow tier (9 s: a service started beside a real Ray actor): the fast tier starts one beside a process named as a
# Ray actor is in test_service.py's test_a_service_started_beside_a_ray_evaluation_leaves_its_sandbox_alone, and
# the Ray evaluations themselves are all in this tier
@pytest.mark.slow
def test_a_service_started_beside_a_ray_evaluation_leaves_its_sandbox_alone(ray_cluster, tmp_path):
    """A `tritongym serve` started while a Ray actor's sandbox runs a candidate: its start-up clean-up
    (`service/sandboxes.py`) once killed that sandbox (its parent, `ray::BackendActor.measure`, named no python),
    and the honest kernel in it was stored as `crashed`.  The sandbox is recorded with the actor as its live owner
    (`sandbox/owned.py`), so it runs on, and the kernel's verdict is `ok`, from its first run."""
    from tests.test_service import Served
    from tritongym.core.sandbox import owned

    source, said, release = _waiting(tmp_path, released=True)
    results: list = []
    with Evaluator(_config(executor="ray", skip_checks=["forbidden"]), host=_host()) as evaluator:
        executor = evaluator.executor
        judged = threading.Thread(
            target=lambda: results.extend(evaluator.evaluate_many([(source, load_problem("relu"))])), daemon=True
        )
        judged.start()
        candidate = _said(said)  # running in an actor's sandbox, waiting for the release
        actors = {facts["pid"] for facts in executor.facts}
        records = [json.loads(p.read_text()) for p in owned.records_dir().glob("*.json")]
        sandboxes = [r["pid"] for r in records if r["kind"] == "sandbox" and r["pid"] and r["owner"] in actors]
        assert len(sandboxes) == 1, records  # where the service looks, owned by the actor
        served = Served(tmp_path / "serve", "--lanes", "1")
        try:
            with served.client(token=None) as service:
                assert service.health().status == "healthy"  # its start, and its clean-up, have run
            assert process_alive(sandboxes[0]) and process_alive(candidate)
        finally:
            served.stop_gracefully()
        with open(release, "w") as f:
            f.write("x")
        judged.join(180)
        assert [r.status for r in results] == [Status.ok] and executor.retried == 0
