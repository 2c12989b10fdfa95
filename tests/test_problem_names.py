"""Every command that names a problem takes what `eval --problem` takes (a name, a .py file, SOURCE#NAME), and a
mistyped name is bad input (exit 2) with the nearest known names offered, never 'no kernel stored'."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

import tritongym
from tritongym.cli.app import app
from tritongym.core.errors import ProblemNotFound
from tritongym.core.problems import did_you_mean, load_problem, resolve_names, suite_names
from tritongym.core.registry import Registry

runner = CliRunner()
SUITE = tritongym.__file__.rsplit("/", 1)[0] + "/problems"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_did_you_mean_offers_the_nearest_names():
    assert did_you_mean("sofmax", suite_names()) == "; did you mean 'softmax' or 'log_softmax'?"
    assert did_you_mean("zzzz", suite_names()) == ""
    with pytest.raises(ProblemNotFound, match="did you mean 'softmax'"):
        load_problem("sofmax")


def test_resolve_names_takes_files_and_refuses_unknown_names(tmp_path):
    copy = tmp_path / "myrelu.py"
    shutil.copy(f"{SUITE}/suite/relu.py", copy)
    assert resolve_names(["relu", str(copy), "relu"], [], "registry r.db") == ["relu", "myrelu"]
    assert resolve_names(["level1/19_ReLU"], ["level1/19_ReLU"], "registry r.db") == ["level1/19_ReLU"]
    with pytest.raises(ProblemNotFound, match="no problem 'sofmax' in registry r.db.*did you mean 'softmax'"):
        resolve_names(["sofmax"], ["relu"], "registry r.db")


@pytest.mark.parametrize(
    "argv",
    [
        ["best", "sofmax"],
        ["best", "relu", "sofmax"],
        ["best", "sofmax", "--export", "out"],
        ["tune", "sofmax", "--backend", "triton-cpu"],
        ["run", "--only", "sofmax", "--backend", "triton-cpu"],
        ["problems", "check", "--only", "sofmax", "--backend", "triton-cpu"],
        ["problems", "show", "sofmax"],
    ],
)
def test_a_mistyped_problem_is_bad_input_with_a_suggestion(argv, tmp_path):
    result = invoke(*argv, "--registry", str(tmp_path / "r.db")) if argv[0] != "problems" else invoke(*argv)
    assert result.exit_code == 2, result.output
    assert "did you mean 'softmax'" in result.stderr
    assert not (tmp_path / "out").exists()
    as_json = invoke(*argv, "--json", *(["--registry", str(tmp_path / "r.db")] if argv[0] != "problems" else []))
    assert as_json.exit_code == 2 and "did you mean 'softmax'" in json.loads(as_json.stdout)["error"]


def test_best_and_tune_take_the_file_eval_took(tmp_path):
    """`eval --problem path/p.py` stores the verdict under the file's problem; `best path/p.py` finds it, and so
    do the leaderboard, the export and `tune` (the kernel as written, answered by the registry)."""
    problem = tmp_path / "myrelu.py"
    shutil.copy(f"{SUITE}/suite/relu.py", problem)
    kernel = tmp_path / "kernel.py"
    shutil.copy(f"{SUITE}/solutions/relu.py", kernel)
    db = str(tmp_path / "r.db")
    judged = invoke("eval", str(kernel), "--problem", str(problem), "--backend", "triton-cpu", "--registry", db)
    assert judged.exit_code == 0, judged.output
    one = invoke("best", str(problem), "--registry", db, "--json")
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["problem_id"] == "myrelu"
    board = invoke("best", str(problem), "relu", "--registry", db, "--json")
    assert board.exit_code == 1 and json.loads(board.stdout)["missing"] == ["relu"]
    assert [k["problem_id"] for k in json.loads(board.stdout)["kernels"]] == ["myrelu"]
    exported = invoke("best", str(problem), "--registry", db, "--export", str(tmp_path / "out"), "--json")
    assert exported.exit_code == 0 and (tmp_path / "out" / "myrelu.py").is_file()
    tuned = invoke("tune", str(problem), "--budget", "0", "--backend", "triton-cpu", "--registry", db, "--json")
    assert [p["problem"] for p in json.loads(tuned.stdout)["problems"]] == ["myrelu"], tuned.output


def test_best_names_what_would_find_a_kernel(tmp_path):
    """An unknown run is bad input (exit 2) and nothing is exported; 'no kernel' suggests what would store one:
    `tritongym run` only where nothing is named, an eval of the named problem, or loosening the filters."""
    db = str(tmp_path / "r.db")
    Registry(db)  # an empty registry (a path with none is "no registry at", test_readme_walk.py)
    empty = invoke("best", "--registry", db)
    assert empty.exit_code == 1 and "`tritongym run`" in empty.stderr
    named = invoke("best", "softmax", "--registry", db)
    assert named.exit_code == 1 and "tritongym eval KERNEL.py --problem softmax" in named.stderr
    assert "tritongym run" not in named.stderr
    filtered = invoke("best", "softmax", "--precision", "tf32", "--registry", db)
    assert filtered.exit_code == 1 and "loosen" in filtered.stderr and "--precision tf32" in filtered.stderr
    run = invoke("best", "--run", "7", "--export", str(tmp_path / "out"), "--registry", db)
    assert run.exit_code == 2 and "no run 7" in run.stderr and "tritongym run" not in run.stderr
    assert not (tmp_path / "out").exists()
    nothing = invoke("best", "softmax", "--export", str(tmp_path / "out"), "--registry", db)
    assert nothing.exit_code == 1 and not (tmp_path / "out").exists()


def test_a_run_configs_mistyped_problem_gets_a_suggestion(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        f'name = "t"\noutput_dir = "{tmp_path}/runs"\n[model]\ntiny = {{ directory = "{tmp_path}/tiny" }}\n'
        '[rollout]\nproblems = ["sofmax"]\nsamples = 1\nprompts_per_step = 1\n[eval]\nbackend = "triton-cpu"\n'
    )
    result = invoke("tts", str(config), "--registry", str(tmp_path / "r.db"))
    assert result.exit_code == 2 and "did you mean 'softmax'" in result.stderr, result.output
