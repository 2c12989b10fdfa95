"""Best-kernel queries: `Registry.best/ranked/leaderboard/kernel_history`, `api.best/leaderboard/export_best/
kernel_history`, `tritongym best` and `tritongym kernel`, and the m009 precision migration.

The shared registry holds real verdicts: four triton-cpu evaluations of bundled solutions (relu, silu), a
correct relu variant and a broken one, with provenance from real runs (`api.run`, and `start_run`/`add_turn`
the way rollouts store turns).  triton-cpu does not time, so ordering by runtime or speedup and the
minimum-measurements filter are tested on rows built by hand (see `test_timed_ordering_and_filters`).
"""

from __future__ import annotations

import json

import pytest
from conftest import registry_before
from typer.testing import CliRunner

from tritongym import api
from tritongym.cli.app import app
from tritongym.core.config import EvalConfig
from tritongym.core.errors import TritonGymError
from tritongym.core.fingerprint import local_fingerprint
from tritongym.core.models import Candidate, EvaluationResult, Status, TimingReport, TimingStats
from tritongym.core.plugins import reset_host
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.registry.migrations import MIGRATIONS, migrate

runner = CliRunner()
GPU = "cuda:NVIDIA H100 80GB HBM3"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A registry with real evaluations: run 1 (`api.run`) judges the shipped relu and silu solutions; run 2
    (a rollouts-style run) produces a correct relu variant at step 0, sample 1, turn 2; a broken relu
    variant is judged directly, outside any run."""
    path = tmp_path_factory.mktemp("best") / "registry.db"
    config = EvalConfig(backend="triton-cpu", trials=2, timeout_s=60, workers=2, precision="ieee")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONGYM_LOAD_PLUGINS", "")
        mp.delenv("TRITONGYM_PLUGINS", raising=False)
        reset_host()
        reg = Registry(path)
        relu = load_problem("relu")
        first = api.run(only=["relu", "silu"], config=config, registry=reg)
        assert [r.status for r in first] == [Status.ok, Status.ok]
        run1 = reg.db.execute("SELECT max(id) FROM runs").fetchone()[0]

        variant = Candidate(source=relu.solution.replace("block = 1024", "block = 512"), origin="model")
        broken = Candidate(source=relu.solution.replace("tl.maximum(x, 0.0)", "x"), origin="model")
        assert variant.source != relu.solution and broken.source != relu.solution
        run2 = reg.start_run("rollouts", "relu search", {"name": "relu search", "eval": {"precision": "ieee"}})
        good = api.evaluate(variant, relu, config, reg)
        assert good.status == Status.ok
        reg.add_turn(run2, good, sample=1, turn=2, step=0, prompt="p", response="r")
        reg.finish_run(run2)
        bad = api.evaluate(broken, relu, config, reg)
        assert bad.status == Status.incorrect
        reset_host()
    yield {
        "path": path,
        "registry": reg,
        "run1": run1,
        "run2": run2,
        "solution": Candidate(source=relu.solution).kernel_id,
        "silu": first[1].kernel_id,
        "variant": good.kernel_id,
        "broken": bad.kernel_id,
    }
    reg.close()


def test_best_leaderboard_and_filters_on_real_verdicts(stored):
    reg: Registry = stored["registry"]
    assert reg.db["evaluations"].count == 4
    # untimed: the earliest correct kernel; the broken one never shows
    assert reg.best("relu")["kernel_id"] == stored["solution"]
    assert [r["kernel_id"] for r in reg.ranked("relu")] == [stored["solution"], stored["variant"]]
    board = reg.leaderboard()
    assert [(r["problem_name"], r["kernel_id"]) for r in board] == [
        ("relu", stored["solution"]),
        ("silu", stored["silu"]),
    ]
    assert [r["problem_name"] for r in reg.leaderboard({"silu", "softmax"})] == ["silu"]
    # a set of problems: the best over all of them
    assert reg.best(["relu", "silu"]) is not None
    # run id: the kernels that turns of that run produced
    assert reg.best("relu", run_id=stored["run2"])["kernel_id"] == stored["variant"]
    assert reg.best("silu", run_id=stored["run2"]) is None
    assert [r["problem_name"] for r in reg.leaderboard(run_id=stored["run1"])] == ["relu", "silu"]
    # device class, backend, size
    assert reg.best("relu", "cpu", "cpu", backend="triton-cpu")["kernel_id"] == stored["solution"]
    assert reg.best("relu", device_class=GPU) is None
    assert reg.best("relu", backend="triton-cuda") is None
    assert reg.best("relu", size="gpu") is None
    # precision: learned from the runs' configs, and by protocol for the evaluation outside any run
    precisions = {r["kernel_id"]: r["precision"] for r in reg.db["evaluations"].rows}
    assert set(precisions.values()) == {"ieee"} and stored["broken"] in precisions
    assert reg.best("relu", precision="ieee")["kernel_id"] == stored["solution"]
    assert reg.best("relu", precision="tf32") is None
    # nothing on the CPU backend is timed, so no evaluation has any measurement to count
    assert reg.best("relu", min_measurements=1) is None
    assert reg.best("relu", min_measurements=0) is not None


def test_api_best_leaderboard_and_run_ids(stored):
    found = api.best("relu", registry=stored["registry"])
    assert found.kernel_id == stored["solution"] and found.run_ids == [stored["run1"]]
    assert found.precision == "ieee" and found.runtime_ms is None and found.timing_samples is None
    variant = api.best("relu", registry=stored["registry"], run=stored["run2"])
    assert variant.kernel_id == stored["variant"] and variant.run_ids == [stored["run2"]]
    board = api.leaderboard(registry=stored["registry"], backend="triton-cpu", precision="ieee")
    assert [k.problem_id for k in board] == ["relu", "silu"]
    with pytest.raises(Exception, match="runtime"):
        api.best("relu", registry=stored["registry"], by="fastest")


def test_kernel_history_traces_a_kernel_to_its_turns(stored):
    history = api.kernel_history(stored["variant"][:10], registry=stored["registry"])
    assert history.kernel_id == stored["variant"] and "block = 512" in history.source
    assert [(e.problem, e.backend, e.device_class, e.status) for e in history.evaluations] == [
        ("relu", "triton-cpu", "cpu", "ok")
    ]
    (turn,) = history.turns
    assert (turn.run_id, turn.run_kind, turn.run_name) == (stored["run2"], "rollouts", "relu search")
    assert (turn.step, turn.sample, turn.turn, turn.problem) == (0, 1, 2, "relu")
    assert turn.evaluation_id == history.evaluations[0].evaluation_id
    broken = api.kernel_history(stored["broken"], registry=stored["registry"])
    assert [e.status for e in broken.evaluations] == ["incorrect"] and broken.turns == []
    assert api.kernel_history("f" * 16, registry=stored["registry"]) is None
    with pytest.raises(TritonGymError, match="ambiguous"):
        api.kernel_history("", registry=stored["registry"])


def test_cli_best_single_problem_keeps_its_behaviour(stored):
    db = str(stored["path"])
    data = json.loads(invoke("best", "relu", "--registry", db, "--json").stdout)
    assert data["kernel_id"] == stored["solution"] and "source" not in data and data["run_ids"] == [stored["run1"]]
    human = invoke("best", "relu", "--registry", db)
    assert human.exit_code == 0 and stored["solution"] in human.stdout and "ieee" in human.stdout
    code = invoke("best", "relu", "--registry", db, "--code", "--run", str(stored["run2"]))
    assert code.exit_code == 0 and "block = 512" in code.stdout
    missing = invoke("best", "relu", "--registry", db, "--precision", "tf32", "--json")
    assert missing.exit_code == 1
    assert json.loads(missing.stdout)["error"] == "no honest, correct kernel stored for 'relu'"
    none = invoke("best", "softmax", "--registry", db)
    assert none.exit_code == 1 and "No honest, correct kernel stored for 'softmax' yet" in none.stderr


def test_cli_leaderboard_and_missing_problems(stored):
    db = str(stored["path"])
    board = invoke("best", "--registry", db, "--json")
    assert board.exit_code == 0
    data = json.loads(board.stdout)
    assert [k["problem_id"] for k in data["kernels"]] == ["relu", "silu"] and data["missing"] == []
    assert all("source" not in k for k in data["kernels"])
    human = invoke("best", "--registry", db, "--device", "cpu", "--backend", "triton-cpu")
    assert human.exit_code == 0 and "relu" in human.stdout and "silu" in human.stdout
    some = invoke("best", "relu", "softmax", "--registry", db, "--json")
    assert some.exit_code == 1 and json.loads(some.stdout)["missing"] == ["softmax"]
    nothing = invoke("best", "--registry", db, "--min-measurements", "5")
    assert nothing.exit_code == 1 and "--min-measurements 5" in nothing.stderr


def test_cli_export_writes_kernels_that_evaluate_again(stored, tmp_path):
    out = tmp_path / "best"
    result = invoke("best", "--registry", str(stored["path"]), "--export", str(out), "--json")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert json.loads(result.stdout) == manifest
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "relu.py", "silu.py"]
    relu = next(k for k in manifest["kernels"] if k["problem"] == "relu")
    assert relu["kernel_id"] == stored["solution"] and relu["file"] == "relu.py"
    assert relu["run_ids"] == [stored["run1"]] and relu["backend"] == "triton-cpu" and relu["device_class"] == "cpu"
    assert {"evaluation_id", "speedup", "runtime_ms"} <= set(relu)
    # the exported file is the stored kernel: judging it again is a registry hit, not a new evaluation
    config = EvalConfig(backend="triton-cpu", trials=2, timeout_s=60, workers=2, precision="ieee")
    again = api.evaluate(out / "relu.py", "relu", config, stored["registry"])
    assert again.cached and again.status == Status.ok and again.kernel_id == stored["solution"]


def test_cli_kernel_history(stored):
    db = str(stored["path"])
    human = invoke("kernel", stored["variant"][:8], "--registry", db)
    assert human.exit_code == 0 and "relu search" in human.stdout and "rollouts" in human.stdout
    data = json.loads(invoke("kernel", stored["variant"], "--registry", db, "--json").stdout)
    assert data["turns"][0]["run_id"] == stored["run2"] and "source" not in data
    code = invoke("kernel", stored["broken"], "--registry", db, "--code")
    assert code.exit_code == 0 and "tl.store(out_ptr + offs, x, mask=mask)" in code.stdout
    missing = invoke("kernel", "ffffffff", "--registry", db, "--json")
    assert missing.exit_code == 1 and "error" in json.loads(missing.stdout)


def _timed(problem, kernel, runtime_ms, speedup, samples, precision="ieee", status=Status.ok, hacked=False):
    return EvaluationResult(
        problem_id=problem.name,
        problem_key=problem.key,
        kernel_id=kernel.kernel_id,
        backend="triton-cuda",
        device="cuda:0",
        device_class=GPU,
        size=problem.size,
        protocol=f"3-{precision}",
        status=status,
        correct=status == Status.ok,
        hacked=hacked,
        runtime_ms=runtime_ms,
        ref_runtime_ms=runtime_ms * speedup,
        speedup=speedup,
        timing=TimingReport(
            precision=precision,
            candidate=TimingStats(median_ms=runtime_ms, iqr_ms=0.001, samples=samples, mode="graph"),
        ),
        fingerprint=local_fingerprint(),
    )


def test_timed_ordering_and_filters(registry):
    """Rows built by hand with explicit runtime_ms, speedup and timing (this machine has no GPU): they test
    the query's ordering and its measurement and precision filters, and claim no measured GPU result."""
    relu, silu = load_problem("relu", "gpu"), load_problem("silu", "gpu")
    k = [Candidate(source=f"kernel = {i}\n") for i in range(6)]
    rows = [
        (relu, k[0], 1.00, 2.0, 100, "ieee"),  # well measured
        (relu, k[1], 0.90, 1.5, 3, "ieee"),  # lowest runtime, few samples, paired reference ran slower
        (relu, k[2], 0.50, 4.0, 100, "tf32"),  # fastest of all, but under TF32
        (silu, k[4], 2.00, 1.1, 50, "ieee"),
    ]
    for problem, kernel, ms, speedup, samples, precision in rows:
        registry.store(_timed(problem, kernel, ms, speedup, samples, precision), problem, kernel)
    registry.store(_timed(relu, k[3], 0.01, 100.0, 100, status=Status.hacked, hacked=True), relu, k[3])
    registry.store(_timed(silu, k[5], 0.02, 90.0, 100, status=Status.incorrect), silu, k[5])

    assert [r["kernel_id"] for r in registry.ranked("relu")] == [k[2].kernel_id, k[1].kernel_id, k[0].kernel_id]
    assert registry.best("relu", precision="ieee")["kernel_id"] == k[1].kernel_id
    assert registry.best("relu", precision="ieee", by="speedup")["kernel_id"] == k[0].kernel_id
    assert registry.best("relu", precision="ieee", min_measurements=10)["kernel_id"] == k[0].kernel_id
    assert registry.best("relu", precision="tf32")["kernel_id"] == k[2].kernel_id
    assert registry.best("relu", min_measurements=101) is None
    assert registry.best("relu", GPU, "gpu", backend="triton-cuda")["timing_samples"] == 100
    board = registry.leaderboard(device_class=GPU, precision="ieee", min_measurements=10)
    assert [(r["problem_name"], r["kernel_id"]) for r in board] == [("relu", k[0].kernel_id), ("silu", k[4].kernel_id)]
    assert [r["problem_name"] for r in registry.leaderboard(min_measurements=60)] == ["relu"]

    found = api.best("relu", GPU, registry=registry, precision="ieee", min_measurements=10)
    assert (found.runtime_ms, found.speedup, found.timing_samples) == (1.0, 2.0, 100)
    data = json.loads(
        invoke("best", "--registry", str(registry.path), "--by", "speedup", "--precision", "ieee", "--json").stdout
    )
    assert [(d["problem_id"], d["kernel_id"]) for d in data["kernels"]] == [
        ("relu", k[0].kernel_id),
        ("silu", k[4].kernel_id),
    ]


def test_m009_backfills_precision_and_samples(tmp_path):
    """A registry from before m009: precision comes from the timing report, else a linked run's config, else
    another evaluation under the same protocol; what nothing tells stays unknown."""
    db = registry_before(tmp_path / "old.db", "m009")
    names = [m.__name__ for m in MIGRATIONS]
    relu = load_problem("relu", "gpu")
    db["problems"].insert({"key": relu.key, "name": relu.name, "size": relu.size, "source": relu.source})
    kernels = [Candidate(source=f"k = {i}\n") for i in range(4)]
    timed = _timed(relu, kernels[0], 1.0, 2.0, 40, precision="tf32")
    untimed = [
        EvaluationResult(
            problem_id="relu",
            problem_key=relu.key,
            kernel_id=kernel.kernel_id,
            backend="triton-cpu",
            device="cpu",
            device_class="cpu",
            size="gpu",
            protocol=protocol,
            status=Status.ok,
            correct=True,
            fingerprint=local_fingerprint(),
        )
        for kernel, protocol in ((kernels[1], "3-aaaa"), (kernels[2], "3-aaaa"), (kernels[3], "3-bbbb"))
    ]
    ids = []
    for result in [timed, *untimed]:
        db["kernels"].insert({"id": result.kernel_id, "source": "x"})
        row = {k: getattr(result, k) for k in ("problem_key", "kernel_id", "backend", "device_class", "protocol")}
        ids.append(
            db["evaluations"]
            .insert({**row, "problem_name": "relu", "status": "ok", "result": result.model_dump_json()})
            .last_pk
        )
    run = db["runs"].insert({"kind": "train", "name": "t", "config": json.dumps({"eval": {"precision": "ieee"}})})
    db["turns"].insert({"run_id": run.last_pk, "kernel_id": kernels[1].kernel_id, "evaluation_id": ids[1]})

    assert migrate(db) == names[names.index("m009_evaluation_precision_and_samples") :]
    got = {r["id"]: (r["precision"], r["timing_samples"]) for r in db["evaluations"].rows}
    assert got == {ids[0]: ("tf32", 40), ids[1]: ("ieee", None), ids[2]: ("ieee", None), ids[3]: (None, None)}
