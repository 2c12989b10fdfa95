"""Problem loading: the bundled suite, KernelBench files and directories, JSONL and parquet rows."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tritongym.core.errors import ProblemFormatError, ProblemNotFound
from tritongym.core.problems import load_problem, load_problems, suite_names, suite_problems

KB_RELU = '''
import torch
import torch.nn as nn

batch_size = 16
dim = 256


class Model(nn.Module):
    """Simple ReLU, as in a KernelBench level-1 file."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_suite_covers_the_required_categories():
    problems = suite_problems("cpu")
    assert len(problems) >= 24
    categories = Counter(p.category for p in problems)
    for category in ("elementwise", "reduction", "softmax_norm", "gemm", "gemm_epilogue", "convolution", "block"):
        assert categories[category] >= 1, category
    assert {"mlp", "attention", "conv2d"} <= set(suite_names())
    for p in problems:
        assert p.solution and "triton.jit" in p.solution, p.name
        assert p.description, p.name


def test_size_presets_give_both_cpu_and_gpu_shapes():
    for name in suite_names():
        cpu, gpu = load_problem(name, "cpu"), load_problem(name, "gpu")
        assert cpu.sizes and set(cpu.sizes) == set(gpu.sizes), name
        assert cpu.key != gpu.key, f"{name}: the two presets must be different problems in the registry"
    with pytest.raises(ProblemFormatError, match="size preset"):
        load_problems(None, "huge")


def test_kernelbench_file_and_directory(write, tmp_path):
    path = write("level1/19_ReLU.py", KB_RELU)
    write("level1/20_Other.py", KB_RELU.replace("torch.relu(x)", "torch.sigmoid(x)"))
    problem = load_problem(str(path))
    assert problem.name == "19_ReLU" and problem.sizes == {} and problem.solution is None
    everything = load_problems(str(tmp_path))
    assert [p.name for p in everything] == ["level1/19_ReLU", "level1/20_Other"]
    assert load_problem(f"{tmp_path}#20_Other").source.count("sigmoid") == 1
    with pytest.raises(ProblemNotFound, match="#NAME"):
        load_problem(str(tmp_path))


def test_jsonl_rows(tmp_path):
    rows = [{"name": "relu", "level": 1, "code": KB_RELU}, {"problem_id": 7, "reference": KB_RELU}]
    path = tmp_path / "problems.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    problems = load_problems(str(path))
    assert [p.name for p in problems] == ["level1/relu", "7"]
    assert load_problem(f"{path}#relu").origin == f"{path}#0"


def test_parquet_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "kb.parquet"
    pq.write_table(pa.table({"code": [KB_RELU], "name": ["19_ReLU"], "level": [1]}), path)
    (problem,) = load_problems(str(path))
    assert problem.name == "level1/19_ReLU" and "torch.relu" in problem.source


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ("def broken(:\n", "does not parse"),
        ("import torch\ndef get_inputs(): return []\n", "no Model, get_init_inputs"),
        (KB_RELU + "\nSIZES = {'cpu': make_sizes()}\n", "SIZES must be a literal"),
        (KB_RELU + "\nSIZES = {'gpu': {'dim': 4}}\n", "no size preset 'cpu'"),
    ],
)
def test_malformed_problems_are_named_errors(write, source, match):
    path = write("bad.py", source)
    with pytest.raises(ProblemFormatError, match=match):
        load_problem(str(path))


def test_bad_rows_and_unknown_names(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"name": "x"}\n')
    with pytest.raises(ProblemFormatError, match="no reference code"):
        load_problems(str(path))
    path.write_text('{"name": "x", "code": "pass"}\nnot json\n')
    with pytest.raises(ProblemFormatError, match=r"bad.jsonl:2: not valid JSON"):
        load_problems(str(path))
    with pytest.raises(ProblemNotFound, match="problems list"):
        load_problem("no_such_problem")


def test_sizes_allow_integer_arithmetic(write):
    path = write("arith.py", KB_RELU + "\nSIZES = {'cpu': {'dim': 2 * 64}, 'gpu': {'dim': 1 << 20}}\n")
    assert load_problem(str(path), "gpu").sizes == {"dim": 1 << 20}
