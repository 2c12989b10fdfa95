"""`run_report` and `tritongym report`: Fast@p of runs stored in a real registry, from real evaluations."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tritongym.cli.app import app
from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry
from tritongym.core.reports.fast_p import P_VALUES, p_key
from tritongym.core.reports.run_report import plot_report, run_report

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A registry with two real triton-cpu evaluations of the bundled relu problem (the solution: correct and
        untimed; a kernel returning its input: incorrect) and a GPU-timed copy of the solution's verdict (1.5x over
    eager, 1.2x over torch.compile),
        plus the runs the tests read (the registry is only read after this)."""
    folder = tmp_path_factory.mktemp("report")
    registry = Registry(folder / "r.db")
    relu, softmax = load_problem("relu"), load_problem("softmax")
    evaluator = Evaluator(
        EvalConfig(backend="triton-cpu", trials=1), registry=registry, host=PluginHost(load_entry_points=False)
    )
    with evaluator:
        correct = evaluator.evaluate(relu.solution, relu)
        broken = evaluator.evaluate(relu.solution.replace("tl.maximum(x, 0.0)", "x"), relu)
    assert correct.honest_and_correct and correct.speedup is None and correct.evaluation_id is not None
    assert not broken.correct and broken.status.value == "incorrect" and broken.evaluation_id is not None
    timed = correct.model_copy(
        update={
            "backend": "triton-cuda",
            "device_class": "NVIDIA H100",
            "speedup": 1.5,
            "runtime_ms": 0.01,
            "compile_ref_runtime_ms": 0.012,
            "compile_speedup": 1.2,
        }
    )
    timed.evaluation_id = registry.store(timed, relu, Candidate(source=relu.solution))

    def no_code(run_id, sample, turn, problem=relu, step=None):
        registry.add_turn(run_id, None, sample=sample, turn=turn, problem=problem, step=step, status="no_code")

    # test-time scaling on the CPU: (A) no code, incorrect, correct; (B) correct at once, stops; (C) incorrect x3
    tts = registry.start_run("tts", "relu tts", {"backend": "triton-cpu", "turns": 3})
    no_code(tts, 0, 1, step=0)
    registry.add_turn(tts, broken, sample=0, turn=2, step=0)
    registry.add_turn(tts, correct, sample=0, turn=3, step=0)
    registry.add_turn(tts, correct, sample=1, turn=1, step=0)
    for turn in (1, 2, 3):
        registry.add_turn(tts, broken, sample=2, turn=turn, step=0)

    # the same on a GPU (timed): (A) incorrect, then 1.5x; (B) 1.5x, then no code; (C) softmax, no code once
    gpu = registry.start_run("tts", "gpu tts", {})
    registry.add_turn(gpu, broken, sample=0, turn=1)
    registry.add_turn(gpu, timed, sample=0, turn=2)
    registry.add_turn(gpu, timed, sample=1, turn=1)
    no_code(gpu, 1, 2)
    no_code(gpu, 2, 1, problem=softmax)

    # training: turns from 0, two steps; step 1 was stored twice for sample 3 (a resume), the later row wins
    output_dir = folder / "train-out"
    output_dir.mkdir()
    (output_dir / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": 0.1 * s, "turn1/correct": 0.5}) + "\n" for s in (0, 1))
    )
    train = registry.start_run("train", "demo", {"output_dir": str(output_dir)})
    registry.add_turn(train, broken, sample=0, turn=0, step=0)
    registry.add_turn(train, broken, sample=1, turn=0, step=0)
    registry.add_turn(train, broken, sample=2, turn=0, step=1)
    registry.add_turn(train, timed, sample=2, turn=1, step=1)
    registry.add_turn(train, broken, sample=3, turn=0, step=1)
    registry.add_turn(train, timed, sample=3, turn=0, step=1)

    empty = registry.start_run("eval", "nothing", {})
    yield {"registry": registry, "path": folder / "r.db", "tts": tts, "gpu": gpu, "train": train, "empty": empty}
    registry.close()


def fast(row, best: bool = False) -> list:
    values = row.fast_best if best else row.fast
    return [values[p_key(p)] for p in P_VALUES]


def test_cpu_tts_run_against_hand_computed_values(stored):
    report = run_report(stored["registry"], stored["tts"])
    assert (report.kind, report.name, report.config) == ("tts", "relu tts", {"backend": "triton-cpu", "turns": 3})
    assert report.turns_stored == 7 and report.steps == [0] and report.scope == "all steps" and report.turn_base == 1
    assert report.backends == ["triton-cpu @ cpu"] and report.by_step == []
    assert [p.problem for p in report.problems] == ["relu"] and report.problems[0].table == report.overall
    table = report.overall
    assert table.samples == 3 and len(table.turns) == 3 and table.untimed_correct == 2
    t1, t2, t3 = table.turns
    third = pytest.approx(1 / 3)
    assert (t1.active, t1.correct, t1.correct_best, t1.hacked, t1.no_code) == (3, third, third, 0.0, third)
    # turn 2: B stopped but carries its correct turn; A's turn is incorrect now
    assert (t2.active, t2.correct, t2.correct_best, t2.no_code) == (2, third, third, 0.0)
    assert (t3.active, t3.correct, t3.correct_best, t3.no_code) == (2, pytest.approx(2 / 3), pytest.approx(2 / 3), 0.0)
    # every correct kernel ran on triton-cpu, which does not time: Fast@p is unknown, not 0
    for row in table.turns:
        assert fast(row) == [None] * 4 and fast(row, best=True) == [None] * 4


def test_timed_run_and_per_problem_tables(stored):
    report = run_report(stored["registry"], stored["gpu"])
    assert report.backends == ["triton-cpu @ cpu", "triton-cuda @ NVIDIA H100"]
    assert report.steps == [0]  # add_turn without a step: counted as step 0
    t1, t2 = report.overall.turns
    third, two_thirds = pytest.approx(1 / 3), pytest.approx(2 / 3)
    assert report.overall.samples == 3 and report.overall.untimed_correct == 0
    assert (t1.correct, t1.no_code) == (third, third)
    assert fast(t1) == [third, third, third, 0.0] and fast(t1, best=True) == [third, third, third, 0.0]
    # turn 2: A reaches 1.5x, B's turn has no code (last turn fails, history keeps its 1.5x); C stays no-code
    assert (t2.active, t2.correct, t2.correct_best, t2.no_code) == (2, third, two_thirds, two_thirds)
    assert fast(t2) == [third, third, third, 0.0]
    assert fast(t2, best=True) == [two_thirds, two_thirds, two_thirds, 0.0]
    problems = {p.problem: p.table for p in report.problems}
    assert set(problems) == {"relu", "softmax"}
    assert problems["relu"].samples == 2 and fast(problems["relu"].at(2), best=True) == [1.0, 1.0, 1.0, 0.0]
    assert problems["softmax"].samples == 1 and len(problems["softmax"].turns) == 1
    assert problems["softmax"].at(1).no_code == 1.0 and fast(problems["softmax"].at(1)) == [0.0] * 4


def test_fast_p_against_the_torch_compile_reference(stored):
    """The same run against the compiled baseline: the timed kernel is 1.2x there, so it meets p = 1 and 1.2
    but not 1.5; correct kernels with no compiled timing (triton-cpu) leave Fast@p unknown."""
    report = run_report(stored["registry"], stored["gpu"], reference="compile")
    assert report.reference == "compile"
    t1, t2 = report.overall.turns
    third, two_thirds = pytest.approx(1 / 3), pytest.approx(2 / 3)
    assert fast(t1) == [third, third, 0.0, 0.0]
    assert fast(t2, best=True) == [two_thirds, two_thirds, 0.0, 0.0]
    assert (t2.correct, t2.correct_best) == (third, two_thirds)  # correctness does not depend on the baseline
    cpu = run_report(stored["registry"], stored["tts"], reference="compile")
    assert all(fast(row) == [None] * 4 for row in cpu.overall.turns)
    with pytest.raises(ConfigError, match="--reference must be one of eager, compile"):
        run_report(stored["registry"], stored["gpu"], reference="inductor")


def test_training_run_reports_its_last_step_and_every_step(stored, tmp_path):
    report = run_report(stored["registry"], stored["train"])
    assert report.training and report.steps == [0, 1] and report.scope == "last step (1)" and report.turn_base == 0
    assert report.metrics_file and report.metrics_file.endswith("metrics.jsonl") and report.metrics_plot is None
    # last step: sample 2 (incorrect, then 1.5x) and sample 3 (its turn 0 stored twice: the later 1.5x wins)
    t1, t2 = report.overall.turns
    assert report.overall.samples == 2
    assert fast(t1) == [0.5, 0.5, 0.5, 0.0] and fast(t2) == [1.0, 1.0, 1.0, 0.0] and t2.active == 1
    assert [s.step for s in report.by_step] == [0, 1] and report.by_step[1].table == report.overall
    step0 = report.by_step[0].table
    assert step0.samples == 2 and len(step0.turns) == 1 and step0.at(1).correct == 0.0
    files = plot_report(report, tmp_path / "plots" / "train.png")
    assert files.fast_p.read_bytes().startswith(PNG_MAGIC)
    assert files.metrics == tmp_path / "plots" / "train.metrics.png" and files.metrics.read_bytes()[:8] == PNG_MAGIC


def test_unknown_and_empty_runs(stored):
    with pytest.raises(ConfigError, match=r"no run 999 .*latest runs: 4 \(eval 'nothing'\), 3 \(train 'demo'\)"):
        run_report(stored["registry"], 999)
    report = run_report(stored["registry"], stored["empty"])
    assert report.overall.samples == 0 and report.overall.turns == [] and report.problems == []
    assert report.turn_base is None


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_cli_json_table_plot_and_errors(stored, tmp_path):
    db = str(stored["path"])
    result = invoke("report", str(stored["gpu"]), "--registry", db, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == run_report(stored["registry"], stored["gpu"]).model_dump(mode="json")

    human = invoke("report", str(stored["tts"]), "--registry", db)
    assert human.exit_code == 0, human.output
    for text in ("run 1", "best F@1.2", "F@2", "no code", "–", "2 correct kernel(s) were not timed"):
        assert text in human.stdout
    gpu = invoke("report", str(stored["gpu"]), "--registry", db)
    assert "per problem" in gpu.stdout and "softmax" in gpu.stdout and "33.3" in gpu.stdout and "66.7" in gpu.stdout

    compiled = invoke("report", str(stored["gpu"]), "--registry", db, "--reference", "compile", "--json")
    assert json.loads(compiled.stdout) == run_report(stored["registry"], stored["gpu"], "compile").model_dump(
        mode="json"
    )
    assert (
        "vs the torch.compile reference"
        in invoke("report", str(stored["gpu"]), "--registry", db, "--reference", "compile").stdout
    )
    bad = invoke("report", str(stored["gpu"]), "--registry", db, "--reference", "inductor")
    assert bad.exit_code == 2 and "--reference must be one of eager, compile" in bad.stderr

    png = tmp_path / "out" / "tts.png"
    plotted = invoke("report", str(stored["tts"]), "--registry", db, "--plot", str(png), "--json")
    assert plotted.exit_code == 0 and png.read_bytes().startswith(PNG_MAGIC)
    assert json.loads(plotted.stdout)["plot_files"] == {"fast_p": str(png), "metrics": None}

    unknown = invoke("report", "999", "--registry", db)
    assert unknown.exit_code == 2 and "no run 999" in unknown.stderr and "latest runs: 4" in unknown.stderr
    as_json = json.loads(invoke("report", "999", "--registry", db, "--json").stdout)
    assert as_json["exit_code"] == 2 and as_json["error_type"] == "ConfigError"
    missing = invoke("report", "1", "--registry", str(tmp_path / "none.db"))
    assert missing.exit_code == 2 and "no registry" in missing.stderr and not (tmp_path / "none.db").exists()

    help_text = invoke("report", "--help").stdout
    assert "best-of-history" in help_text and "--plot" in help_text and "--json" in help_text
    assert "--reference" in help_text
