"""The command line: exit codes, --json on success and failure, and each command end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import RELU_KERNEL
from typer.testing import CliRunner

from tritongym.cli.app import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_console_script_help():
    proc = subprocess.run([sys.executable, "-m", "tritongym", "--help"], capture_output=True, text=True, check=True)
    for command in ("eval", "run", "best", "plugins", "problems", "registry"):
        assert command in proc.stdout


def test_eval_best_and_stats(tmp_path, write):
    db = str(tmp_path / "r.db")
    cand = write("relu_kernel.py", RELU_KERNEL)
    result = invoke("eval", str(cand), "--problem", "relu", "--registry", db, "--trials", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "ok" and data["problem_id"] == "relu" and data["cached"] is False
    assert data["stored"] is True and data["evaluation_id"] is not None
    for field in (
        "kernel_id",
        "backend",
        "device",
        "checks",
        "runtime_ms",
        "ref_runtime_ms",
        "speedup",
        "pr",
        "reward",
        "error",
        "fingerprint",
        "correct",
        "hacked",
    ):
        assert field in data

    human = invoke("eval", str(cand), "--problem", "relu", "--registry", db, "--trials", "2")
    assert human.exit_code == 0 and "(cached)" in human.stdout

    best = json.loads(invoke("best", "relu", "--registry", db, "--json").stdout)
    assert best["kernel_id"] == data["kernel_id"] and "source" not in best
    code = invoke("best", "relu", "--registry", db, "--code")
    assert code.exit_code == 0 and "relu_kernel" in code.stdout
    missing = invoke("best", "softmax", "--registry", db, "--json")
    assert missing.exit_code == 1 and "error" in json.loads(missing.stdout)

    stats = json.loads(invoke("registry", "stats", "--registry", db, "--json").stdout)
    assert stats["evaluations"] == 1 and stats["by_status"] == {"ok": 1}


def test_failing_candidate_exits_1(tmp_path, write):
    cand = write("wrong.py", RELU_KERNEL.replace("tl.maximum(x, 0.0)", "x"))
    result = invoke("eval", str(cand), "-p", "relu", "--registry", str(tmp_path / "r.db"), "--trials", "2", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["status"] == "incorrect" and "max abs error" in data["message"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["eval", "{cand}", "--problem", "no_such_problem"], "no problem 'no_such_problem'"),
        (["eval", "{missing}", "--problem", "relu"], "no such candidate file"),
        (["eval", "{cand}", "--problem", "relu", "--backend", "triton-tpu"], "no backend named 'triton-tpu'"),
        (["eval", "{cand}", "--problem", "relu", "--config", "{config}"], "trials"),
        (["run", "--only", "nope"], "no such problem"),
        (["eval", "{cand}", "--problem", "relu", "--skip-check", "no_such_check"], "skip_checks names no registered"),
    ],
)
def test_errors_are_one_line_and_json_on_request(tmp_path, write, args, needle):
    cand = write("c.py", RELU_KERNEL)
    config = write("bad.toml", "trials = 0\n")
    subs = {"{cand}": str(cand), "{missing}": str(tmp_path / "missing.py"), "{config}": str(config)}
    argv = [subs.get(a, a) for a in args] + ["--registry", str(tmp_path / "r.db")]
    plain = invoke(*argv)
    assert plain.exit_code == 2
    assert needle in plain.stderr and len(plain.stderr.strip().splitlines()) == 1
    as_json = json.loads(invoke(*argv, "--json").stdout)
    assert needle in as_json["error"] and as_json["exit_code"] == 2


def test_problems_list_and_show():
    listed = json.loads(invoke("problems", "list", "--json").stdout)
    assert len(listed) >= 24 and all(p["has_solution"] for p in listed)
    shown = invoke("problems", "show", "relu")
    assert "class Model" in shown.stdout
    solution = invoke("problems", "show", "relu", "--solution")
    assert "class ModelNew" in solution.stdout
    gpu = json.loads(invoke("problems", "show", "matmul", "--size", "gpu", "--json").stdout)
    assert gpu["size"] == "gpu" and gpu["sizes"]


def test_problems_check_flags_degenerate_problems(write, tmp_path):
    write(
        "screen/constant.py",
        """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.ones_like(x) * 2.0

        def get_inputs():
            return [torch.randn(64)]

        def get_init_inputs():
            return []
    """,
    )
    write(
        "screen/relu_on_positive.py",
        """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)

        def get_inputs():
            return [torch.rand(64)]

        def get_init_inputs():
            return []
    """,
    )
    write(
        "screen/honest.py",
        """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)

        def get_inputs():
            return [torch.randn(64)]

        def get_init_inputs():
            return []
    """,
    )
    result = invoke("problems", "check", "--problems", str(tmp_path / "screen"), "--trials", "2", "--json")
    assert result.exit_code == 1
    verdicts = {r["problem_id"]: r for r in json.loads(result.stdout)["results"]}
    assert verdicts["constant"]["passing_controls"] == ["other_seed_output"]
    assert verdicts["relu_on_positive"]["passing_controls"] == ["identity"]
    assert verdicts["honest"]["ok"] and not verdicts["honest"]["degenerate"]


def test_run_records_a_run_and_prints_a_table(tmp_path, write):
    db = str(tmp_path / "r.db")
    result = invoke("run", "--only", "relu", "--only", "softmax", "--registry", db, "--trials", "2")
    assert result.exit_code == 0, result.output
    assert "2/2 ok" in result.stdout and "softmax" in result.stdout
    stats = json.loads(invoke("registry", "stats", "--registry", db, "--json").stdout)
    assert stats["runs"] == 1 and stats["turns"] == 2

    cands = tmp_path / "cands"
    write("cands/relu.py", RELU_KERNEL.replace("tl.maximum(x, 0.0)", "x"))
    bad = invoke("run", "--only", "relu", "--candidates", str(cands), "--registry", db, "--trials", "2", "--json")
    assert bad.exit_code == 1
    data = json.loads(bad.stdout)
    assert data["ok"] == 0 and data["results"][0]["status"] == "incorrect"


def test_skip_check_switches_one_check_off(tmp_path, write):
    """A use of `os` is refused by the source policy; with `forbidden` skipped the same kernel runs and is ok."""
    cand = write("os_user.py", "import os\n" + RELU_KERNEL + "\nHERE = os.getcwd()\n")
    db = str(tmp_path / "r.db")
    refused = json.loads(invoke("eval", str(cand), "-p", "relu", "--registry", db, "--trials", "2", "--json").stdout)
    assert refused["status"] == "rejected" and "forbidden" in refused["message"]
    argv = ["eval", str(cand), "-p", "relu", "--registry", db, "--trials", "2", "--skip-check", "forbidden", "--json"]
    allowed = invoke(*argv)
    assert allowed.exit_code == 0, allowed.stdout
    data = json.loads(allowed.stdout)
    assert data["status"] == "ok" and "forbidden" not in {c["name"] for c in data["checks"]}
