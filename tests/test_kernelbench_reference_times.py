"""`benchmarks/kernelbench_reference_times.py` end to end on the CPU: a tiny KernelBench (three level-1 problems and a
published timing file in KernelBench's layout), timed both ways, split over two runs with `--limit` and `--resume`;
and the format of KernelBench's real published H100 times where `../shared/kernelbench` is present."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
KERNELBENCH = next(
    (p for p in (REPO.parent / "shared" / "kernelbench", REPO / "shared" / "kernelbench") if p.is_dir()),
    REPO.parent / "shared" / "kernelbench",
)

PROBLEMS = {
    "1_Tiny_matmul.py": "torch.matmul(a, b)",
    "2_Tiny_conv.py": "self.conv(a)",
    "3_Tiny_relu.py": "torch.relu(a)",
}


def _problem(expression: str) -> str:
    return textwrap.dedent(
        f"""
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(2, 2, 3)

            def forward(self, a, b):
                return {expression}


        def get_inputs():
            return [torch.randn(2, 2, 8, 8), torch.randn(2, 2, 8, 8)]


        def get_init_inputs():
            return []
        """
    )


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    sys.modules.pop("kernelbench_reference_times", None)
    import kernelbench_reference_times

    return kernelbench_reference_times


def test_the_reference_times_of_a_tiny_kernelbench_both_ways(bench, tmp_path):
    root = tmp_path / "kb"
    (root / "level1").mkdir(parents=True)
    for name, expression in PROBLEMS.items():
        (root / "level1" / name).write_text(_problem(expression))
    timing = root / "results" / "timing" / "H100_Modal"
    timing.mkdir(parents=True)
    published = {"level1": {n: {"mean": 0.5, "hardware": "NVIDIA H100 80GB HBM3"} for n in list(PROBLEMS)[:2]}}
    (timing / "baseline_time_torch.json").write_text(json.dumps(published))
    out = tmp_path / "times.json"
    common = ["--kernelbench", str(root), "--levels", "1", "--cpu", "--out", str(out)]

    first = bench.main([*common, "--limit", "2"])
    assert [r["problem"] for r in first["rows"]] == ["1_Tiny_matmul.py", "2_Tiny_conv.py"]
    assert json.loads(out.read_text())["rows"] == first["rows"]  # written as it goes
    report = bench.main([*common, "--resume"])
    rows = {r["problem"]: r for r in report["rows"]}
    assert list(rows) == list(PROBLEMS) and all(r["status"] == "ok" for r in rows.values())
    assert [rows[n]["family"] for n in PROBLEMS] == ["matmul", "conv", "other"]
    assert {"bmm", "mm"} & set(rows["1_Tiny_matmul.py"]["fp32_ops"])
    for row in rows.values():
        assert row["own_ms"] > 0 and row["field_ms"] > 0
        assert row["differs"] is False  # on the CPU the two conventions are one
    matmul = rows["1_Tiny_matmul.py"]
    assert matmul["kernelbench_ms"] == 0.5 and matmul["field_ratio"] == pytest.approx(matmul["field_ms"] / 0.5)
    assert rows["3_Tiny_relu.py"]["kernelbench_ms"] is None and rows["3_Tiny_relu.py"]["own_ratio"] is None
    summary = report["summary"]
    assert summary["overall"]["problems"] == 2 and summary["no_published_time"] == 1 and summary["errors"] == 0
    assert summary["matmul"]["median_field_ratio"] == pytest.approx(matmul["field_ratio"])
    assert report["timer"] == "wall-clock median (CPU)" and report["baseline_hardware"] == "NVIDIA H100 80GB HBM3"


def test_a_broken_problem_is_its_own_row(bench, tmp_path):
    root = tmp_path / "kb"
    (root / "level1").mkdir(parents=True)
    (root / "level1" / "1_Broken.py").write_text(_problem("a.nonexistent()"))
    timing = root / "results" / "timing" / "H100_Modal"
    timing.mkdir(parents=True)
    (timing / "baseline_time_torch.json").write_text(json.dumps({"level1": {}}))
    report = bench.main(["--kernelbench", str(root), "--levels", "1", "--cpu", "--out", str(tmp_path / "o.json")])
    (row,) = report["rows"]
    assert row["status"] == "error" and "nonexistent" in row["message"] and report["summary"]["errors"] == 1


@pytest.mark.skipif(not (KERNELBENCH / "results" / "timing").is_dir(), reason="no ../shared/kernelbench here")
def test_kernelbench_publishes_h100_eager_times_for_its_problems(bench):
    times, hardware = bench.published_times(KERNELBENCH, "H100_Modal")
    assert hardware.startswith("NVIDIA H100") and {"level1", "level2", "level3"} <= set(times)
    files = bench.problem_files(KERNELBENCH, [1, 2])
    named = [p.name for level, p in files if p.name in times[f"level{level}"]]
    assert len(named) >= 0.9 * len(files)
    assert times["level1"]["1_Square_matrix_multiplication_.py"] > 0
