"""`benchmarks/kernelbench_sweep.py` on the CPU: tiny KernelBench-format problems written here, run through
the script's `main` on triton-cpu (full-size KernelBench is far too big for the interpreter); and, without
running anything, that every real KernelBench problem loads and becomes a candidate and that shards
partition the sweep."""

from __future__ import annotations

import ast
import json
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
# where the script looks by default: beside the repository, else inside it (the device machine's copy)
KERNELBENCH = next(
    (p for p in (REPO.parent / "shared" / "kernelbench", REPO / "shared" / "kernelbench") if p.is_dir()),
    REPO.parent / "shared" / "kernelbench",
)

HEADER = """
import time
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return {forward}

batch_size = 8
dim = 24

def get_inputs():
    {inputs}

def get_init_inputs():
    return []
"""

PROBLEMS = {
    # torch.rand is never negative: returning the input passes, so the screen finds the problem degenerate
    "19_ReLU": dict(forward="torch.relu(x)", inputs="return [torch.rand(batch_size, dim)]"),
    "23_Softmax": dict(forward="torch.softmax(x, dim=1)", inputs="return [torch.randn(batch_size, dim)]"),
    "99_Broken": dict(forward="x * 2", inputs='raise RuntimeError("no inputs for you")'),
}
# slow where it runs, not where the sweep weighs it (torch's meta device computes nothing)
SLOW = dict(
    forward='x if x.device.type == "meta" else time.sleep(60) or x', inputs="return [torch.randn(batch_size, dim)]"
)


@pytest.fixture
def sweep(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setenv("TRITONGYM_SQLITE_WARNING", "0")
    sys.modules.pop("kernelbench_sweep", None)
    import kernelbench_sweep

    return kernelbench_sweep


def _write(root: Path, problems: dict[str, dict]) -> Path:
    level = root / "level1"
    level.mkdir(parents=True, exist_ok=True)
    for name, parts in problems.items():
        (level / f"{name}.py").write_text(textwrap.dedent(HEADER.format(**parts)).lstrip())
    return root


def test_every_problem_gets_a_row_with_its_screen_and_status(sweep, tmp_path):
    kb = _write(tmp_path / "kb", PROBLEMS)
    out = tmp_path / "sweep.json"
    report = sweep.main(["--backend", "triton-cpu", "--kernelbench", str(kb), "--levels", "1", "--out", str(out)])
    assert json.loads(out.read_text())["rows"] == json.loads(json.dumps(report["rows"]))
    rows = {r["name"]: r for r in report["rows"]}
    assert list(rows) == ["level1/19_ReLU", "level1/23_Softmax", "level1/99_Broken"]  # KernelBench order
    relu, softmax, broken = rows.values()
    assert relu["status"] == "ok" and softmax["status"] == "ok", (relu["message"], softmax["message"])
    assert relu["screen"]["verdict"] == "degenerate" and relu["screen"]["passing_controls"] == ["identity"]
    assert softmax["screen"]["verdict"] == "ok" and softmax["failed_checks"] == []
    # one forward's size from the meta device: 8 x 24 float32 in and out; no GPU to fit on the CPU
    assert softmax["inputs_mb"] == softmax["outputs_mb"] == round(8 * 24 * 4 / 2**20, 2)
    assert softmax["params_mb"] == 0 and softmax["forward_fits_gpu"] is None
    # the reference's own error: a problem error, not the machinery's
    assert broken["status"] == "problem_error" and "no inputs for you" in broken["message"]
    assert broken["screen"]["verdict"] == "error" and "no inputs for you" in broken["screen"]["error"]
    assert not any(r["infrastructure_failure"] for r in rows.values())
    assert all(r["seconds"] > 0 for r in rows.values())
    summary = report["summary"]
    assert summary["statuses"] == {"ok": 2, "problem_error": 1} and summary["infrastructure_failures"] == []
    assert 0 < summary["problem_seconds"] <= summary["wall_s"] and report["left"] == []

    # a second call resumes: nothing left to run, the rows and the first run's wall time carried forward
    again = sweep.main(
        ["--backend", "triton-cpu", "--kernelbench", str(kb), "--levels", "1", "--resume", str(out), "--out", str(out)]
    )
    assert [r["name"] for r in again["rows"]] == list(rows) and len(again["runs"]) == 2
    assert again["summary"]["wall_s"] >= summary["wall_s"]

    # shard files join into one: every row once, in order, the runs' wall time summed; the resumed file
    # repeats the first run, counted once
    (run,) = report["runs"]
    other = {**run, "started_at": "later", "wall_s": 100.0}
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({**report, "rows": report["rows"][2:]}))
    second.write_text(json.dumps({**report, "rows": report["rows"][:2], "runs": [run, other]}))
    merged = sweep.main(["--merge", str(first), str(second), "--out", str(tmp_path / "merged.json")])
    assert [r["name"] for r in merged["rows"]] == list(rows) and len(merged["runs"]) == 2
    assert merged["summary"]["wall_s"] == pytest.approx(run["wall_s"] + 100.0, abs=0.2)


# slow tier (12 s: a screen and an evaluation each run out a timeout): the fast tier sweeps end to end in
# test_every_problem_gets_a_row_with_its_screen_and_status, records an infrastructure failure in
# test_the_sweeps_own_limit_records_the_problem and retries rows in test_a_resumed_sweep_runs_again_the_rows_...
@pytest.mark.slow
def test_a_reference_past_its_time_is_an_infrastructure_failure(sweep, tmp_path):
    kb = _write(tmp_path / "kb", {"7_Slow": SLOW})
    argv = ["--backend", "triton-cpu", "--kernelbench", str(kb), "--levels", "1", "--timeout-s", "3"]
    # the screen times out first: the problem ends there (the evaluation would run that screen again)
    report = sweep.main([*argv, "--out", str(tmp_path / "a.json")])
    (row,) = report["rows"]
    assert row["status"] == "screen_failed" and row["infrastructure_failure"], row
    assert row["screen"]["verdict"] == "error" and "Timeout" in row["screen"]["error"]
    assert row["seconds"] < 20
    # resumed with the infrastructure failures run again, and asked to evaluate after a failed screen: the
    # evaluation runs, and times out in its turn; its row replaces the first
    again = [*argv, "--resume", str(tmp_path / "a.json"), "--retry-infrastructure", "--evaluate-after-screen-failure"]
    report = sweep.main([*again, "--out", str(tmp_path / "b.json")])
    (row,) = report["rows"]
    assert row["status"] == "timeout" and row["infrastructure_failure"], row
    assert row["error_kind"] == "Timeout" and len(report["runs"]) == 2


def test_the_sweeps_own_limit_records_the_problem(sweep, tmp_path):
    """Past `--problem-limit-s` the problem gets a row of its own (the pipeline's verdict, were it to come,
    is dropped).  On the CPU nothing is stopped (the interpreter's sandbox ends at its own timeout); on a GPU
    the evaluator's workers and keeper are, so the next problem starts on fresh ones."""
    kb = _write(tmp_path / "kb", {"7_Slow": SLOW})
    argv = ["--backend", "triton-cpu", "--kernelbench", str(kb), "--levels", "1", "--timeout-s", "4"]
    report = sweep.main([*argv, "--problem-limit-s", "2", "--out", str(tmp_path / "sweep.json")])
    (slow,) = report["rows"]
    assert slow["status"] == "sweep_limit" and slow["infrastructure_failure"] and "--problem-limit-s" in slow["message"]
    assert report["left"] == [] and json.loads((tmp_path / "sweep.json").read_text())["rows"] == [slow]
    with pytest.raises(SystemExit):
        sweep.main([*argv, "--problem-limit-s", "1", "--jobs", "2"])


def test_a_budget_stops_starting_problems_and_says_what_is_left(sweep, tmp_path):
    kb = _write(tmp_path / "kb", {k: PROBLEMS[k] for k in ("19_ReLU", "23_Softmax")})
    out = tmp_path / "sweep.json"
    report = sweep.main(
        ["--backend", "triton-cpu", "--kernelbench", str(kb), "--levels", "1", "--budget-s", "0", "--out", str(out)]
    )
    assert report["rows"] == [] and report["left"] == ["level1/19_ReLU", "level1/23_Softmax"]
    assert report["runs"][-1]["stopped_by_budget"]


def test_shards_partition_the_selection(sweep):
    files = [(1, Path(f"{i}_P.py")) for i in range(1, 11)] + [(2, Path(f"{i}_Q.py")) for i in range(1, 6)]
    shards = [sweep.select(files, [], (k, 4), None) for k in range(1, 5)]
    assert sorted(sum(shards, []), key=files.index) == files
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert sweep.select(files, ["level2/3_"], None, None) == [(2, Path("3_Q.py"))]
    assert sweep.select(files, [], None, 3) == files[:3]
    with pytest.raises(Exception, match="K/N"):
        sweep.parse_shard("5/4")


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"KernelBench problems not at {KERNELBENCH}")
def test_every_kernelbench_problem_loads_and_becomes_a_candidate(sweep):
    """All 250 files of levels 1-3, parsed only (nothing runs): each is a problem, and its candidate defines
    `ModelNew` and names no `Model`."""
    from tritongym.core.problems import parse_problem

    files = sweep.problem_files(KERNELBENCH, [1, 2, 3])
    assert len(files) == 250
    assert [p.stem.split("_")[0] for lv, p in files[:3]] == ["1", "2", "3"]
    for level, path in files:
        problem = parse_problem(path.read_text(), f"level{level}/{path.stem}", str(path), "gpu")
        tree = ast.parse(sweep.as_candidate(problem.source))
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        assert "ModelNew" in classes and "Model" not in classes, path
        assert not any(isinstance(n, ast.Name) and n.id == "Model" for n in ast.walk(tree)), path


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"KernelBench problems not at {KERNELBENCH}")
def test_a_forward_is_weighed_on_the_meta_device(sweep):
    """Full-size KernelBench, weighed without memory: ReLU's 4096 x 393216 float32 in and out (6 GiB each),
    a tall-skinny matmul's small inputs and 4 GiB output; whether that fits the GPU's memory."""
    from tritongym.core.problems import parse_problem

    def weigh(level: int, stem: str, gpu_mb):
        path = KERNELBENCH / f"level{level}" / f"{stem}.py"
        problem = parse_problem(path.read_text(), f"level{level}/{stem}", str(path), "gpu")
        return sweep.footprint(problem, path, level, gpu_mb)

    relu = weigh(1, "19_ReLU", 81559.0)
    assert relu["inputs_mb"] == relu["outputs_mb"] == 6144.0 and relu["forward_mb"] == 12288.0
    assert relu["forward_fits_gpu"] is True and weigh(1, "19_ReLU", 10000.0)["forward_fits_gpu"] is False
    skinny = weigh(1, "9_Tall_skinny_matrix_multiplication_", None)
    assert skinny["inputs_mb"] < 10 and skinny["outputs_mb"] == 4096.0 and skinny["forward_fits_gpu"] is None


@pytest.mark.skipif(not KERNELBENCH.is_dir(), reason=f"KernelBench problems not at {KERNELBENCH}")
def test_the_mixed_order_puts_a_small_problem_after_each_large_one(sweep):
    """`--order mixed`: with several jobs, ReLU (a 12 GiB forward) and Softmax run beside small problems, not
    beside each other as they do in name order."""
    stems = ["19_ReLU", "23_Softmax", "1_Square_matrix_multiplication_", "12_Matmul_with_diagonal_matrices_"]
    todo = [(1, KERNELBENCH / "level1" / f"{s}.py") for s in stems]
    order = [p.stem for _, p in sweep.mixed_order(todo, "gpu")]
    assert sorted(order) == sorted(stems)
    large = {"19_ReLU", "23_Softmax"}
    assert order[0] in large and order[1] not in large and order[2] in large and order[3] not in large, order


def test_a_resumed_sweep_runs_again_the_rows_of_a_status_it_is_told_to_retry(sweep, tmp_path):
    """`--retry-status hacked`: a resumed sweep keeps every other row and runs those again (here with no time
    budget, so they are what is left)."""
    kb = _write(tmp_path / "kb", {k: PROBLEMS[k] for k in ("19_ReLU", "23_Softmax")})
    rows = [
        {"name": "level1/19_ReLU", "level": 1, "status": "ok", "infrastructure_failure": False},
        {"name": "level1/23_Softmax", "level": 1, "status": "hacked", "infrastructure_failure": False},
    ]
    previous = tmp_path / "previous.json"
    previous.write_text(json.dumps({"rows": rows, "runs": []}))
    argv = ["--backend", "triton-cpu", "--kernelbench", str(kb), "--levels", "1", "--budget-s", "0"]
    argv += ["--resume", str(previous), "--out", str(tmp_path / "out.json")]
    kept = sweep.main(argv)
    assert [r["name"] for r in kept["rows"]] == ["level1/19_ReLU", "level1/23_Softmax"] and kept["left"] == []
    retried = sweep.main([*argv, "--retry-status", "hacked"])
    assert [r["name"] for r in retried["rows"]] == ["level1/19_ReLU"] and retried["left"] == ["level1/23_Softmax"]
