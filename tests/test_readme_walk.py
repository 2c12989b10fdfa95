"""What a new user walking the README met (issue 42 item 6), each as the README has it: one problem whatever
name or path reaches it, `run`'s id, reading commands that leave no registry behind and load nothing of the
judge, the configuration example verbatim, `tune`'s suggestions and `--budget 0`, and `advantages` on the
README's own rows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RELU_KERNEL
from typer.testing import CliRunner

from tritongym.cli.app import app
from tritongym.core.problems import SUITE_DIR

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_best_and_registry_stats_in_an_empty_folder_leave_no_registry(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRITONGYM_REGISTRY", raising=False)
    for argv in (["best", "relu"], ["best"], ["registry", "stats"], ["registry", "stats", "--json"]):
        result = invoke(*argv)
        assert result.exit_code == 1, (argv, result.output)
        assert f"no registry at {tmp_path / 'registry.db'}" in result.output.replace("\n", ""), result.output
    assert list(tmp_path.iterdir()) == []


def test_registry_stats_loads_nothing_of_the_judge(tmp_path):
    """Counting rows needs the registry, not the evaluation API, the evaluator or torch."""
    script = f"""
import sys
from tritongym.core.registry import Registry
Registry({str(tmp_path / "r.db")!r})
from typer.testing import CliRunner
from tritongym.cli.app import app
result = CliRunner().invoke(app, ["registry", "stats", "--registry", {str(tmp_path / "r.db")!r}, "--json"])
assert result.exit_code == 0, result.output
heavy = ("tritongym.api.evaluation", "tritongym.core.eval.evaluate", "tritongym.core.sandbox", "torch", "triton")
print(sorted(m for m in sys.modules if m in heavy))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def _readme_config() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Configuration") :]
    start = section.index("```toml\n") + len("```toml\n")
    return section[start : section.index("```", start)]


def test_the_readme_configuration_example_works_verbatim(tmp_path):
    """Validated as `eval --config` validates it (every check named must exist); its judge line, uncommented,
    too, and the line says what the judge needs."""
    from tritongym import api

    block = _readme_config()
    path = tmp_path / "tritongym.toml"
    path.write_text(block)
    evaluator = api.make_evaluator(path, registry=False)
    assert evaluator.config.skip_checks
    judge = next(line for line in block.splitlines() if "enable_checks" in line)
    path.write_text(block.replace(judge, judge.lstrip("# ")))
    assert "llm-judge" in api.make_evaluator(path, registry=False).config.enable_checks
    assert "unjudged" in block and "never stored" in block


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """One `run` of the suite's relu (its own solution), as the README walks it: the registry and the output."""
    where = tmp_path_factory.mktemp("walk")
    db = str(where / "r.db")
    text = invoke("run", "--only", "relu", "--registry", db, "--trials", "1", "--backend", "triton-cpu")
    assert text.exit_code == 0, text.output
    as_json = invoke("run", "--only", "relu", "--registry", db, "--trials", "1", "--backend", "triton-cpu", "--json")
    assert as_json.exit_code == 0, as_json.output
    return where, db, text.stdout, json.loads(as_json.stdout)


def test_run_says_its_run_id(stored):
    where, db, text, data = stored
    assert "run id 1" in text and "tritongym report 1" in text
    assert data["run_id"] == 2
    assert invoke("report", "2", "--registry", db).exit_code == 0
    found = invoke("best", "--run", "1", "--registry", db, "--json")
    assert found.exit_code == 0, found.output


def test_a_problem_reached_by_any_name_or_path_finds_its_kernels(stored):
    """Stored by `run` under the suite's name; found through a copy of its file under another name and folder
    (`best kb/19_ReLU.py` after `run --problems kb`), and through SOURCE#NAME."""
    where, db, _, data = stored
    kernel_id = data["results"][0]["kernel_id"]
    (where / "kb").mkdir(exist_ok=True)
    copy = where / "kb" / "19_ReLU.py"
    shutil.copy(SUITE_DIR / "relu.py", copy)
    for spec in ("relu", str(copy), f"{where / 'kb'}#19_ReLU"):
        found = invoke("best", spec, "--registry", db, "--json")
        assert found.exit_code == 0, (spec, found.output)
        assert json.loads(found.stdout)["kernel_id"] == kernel_id, spec
    board = invoke("best", str(copy), "--registry", db, "--json")
    assert json.loads(board.stdout)["kernel_id"] == kernel_id
    other = where / "other.py"  # another computation under a name nothing stored: not found
    other.write_text((SUITE_DIR / "relu.py").read_text().replace("torch.relu(x)", "torch.relu(x) * 2"))
    assert invoke("best", str(other), "--registry", db).exit_code == 1


def test_tune_with_budget_0_says_nothing_was_measured(stored):
    _, db, _, _ = stored
    result = invoke("tune", "relu", "--budget", "0", "--backend", "triton-cpu", "--registry", db, "--json")
    assert result.exit_code == 1, result.output
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["status"] == "nothing_measured" and "nothing was tuned" in problem["message"]
    text = invoke("tune", "relu", "--budget", "0", "--backend", "triton-cpu", "--registry", db)
    assert "0/1 problem(s) tuned" in text.stdout and "measured no variant" in text.stdout


def test_tune_of_a_file_with_nothing_stored_suggests_commands_that_take_the_file(stored, tmp_path):
    _, db, _, _ = stored
    problem = tmp_path / "twice.py"
    problem.write_text((SUITE_DIR / "relu.py").read_text().replace("torch.relu(x)", "torch.relu(x) * 2"))
    result = invoke("tune", str(problem), "--backend", "triton-cpu", "--registry", db)
    assert result.exit_code == 1
    said = result.output.replace("\n", "")
    assert f"tritongym eval KERNEL.py --problem {problem}" in said
    assert f"tritongym tune --file KERNEL.py --problem {problem}" in said
    assert "run --only" not in said  # a file is no suite name
    kernel = tmp_path / "kernel.py"
    kernel.write_text(RELU_KERNEL)
    tuned = invoke("tune", "--file", str(kernel), "--problem", str(problem), "--budget", "1", "--registry", db)
    assert "problem(s) tuned" in tuned.output, tuned.output  # the suggestion runs (the kernel is wrong there)


def test_advantages_on_the_readmes_rows(tmp_path):
    """The README's row format (group, trajectory, turn, reward): the demo config's `mrs` filter says it needs
    log-probs, and the same rows with the filters that do not need them give advantages."""
    rows = [{"group": 0, "trajectory": t, "turn": 1, "reward": float(t)} for t in range(4)]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    demo = str(ROOT / "configs" / "demo.toml")
    refused = invoke("advantages", str(path), "-c", demo)
    assert refused.exit_code == 2
    said = refused.output.replace("\n", "")
    assert "'mrs'" in said and "rollout_logprobs" in said and "--filter prs" in said
    shown = invoke("advantages", str(path), "-c", demo, "--filter", "prs", "--json")
    assert shown.exit_code == 0, shown.output
    assert len(json.loads(shown.stdout)["rows"]) == 4
