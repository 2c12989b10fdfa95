"""Correctness at more shapes than the main one (issue 18): EXTRA_SIZES, derived sets, the late trial.

Real triton-cpu evaluations: a kernel that hard-codes the main shape fails with a message naming the shape
set, on the sandboxed CPU worker and on the warm (GPU) worker's code path run on the CPU; a kernel that
serves a cached answer once it has been called a dozen times fails the late trial.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tritongym.core.config import EvalConfig
from tritongym.core.errors import ProblemFormatError
from tritongym.core.eval.evaluate import Evaluator, shape_sets
from tritongym.core.models import Candidate, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import derive_extra_sizes, load_problem, parse_problem, suite_names

HARDCODED_RELU = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 6930  # 2 * 3 * 33 * 35: the cpu preset's size, written in
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty((2, 3, 33, 35), device=x.device, dtype=x.dtype)
        relu_kernel[(7,)](x.contiguous(), out, BLOCK=1024)
        return out
"""

# Correct for its first calls, then answers from a cache keyed on the input shape: only the late trial, at the
# main shape on fresh inputs, gets the stale answer (the hack suite's own candidate).
LATE_CACHING_RELU = (Path(__file__).parent / "hacks" / "candidates" / "late_call_count_cache.py").read_text()

KB_SOFTMAX = """
import torch
import torch.nn as nn

batch_size = 16
dim = 300
reduce_dim = 1
kernel_size = 32


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=reduce_dim)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [kernel_size]
"""


def _evaluator(**config) -> Evaluator:
    settings = dict(backend="triton-cpu", trials=3, timeout_s=120, workers=2, use_cache=False)
    settings.update(config)
    return Evaluator(EvalConfig(**settings), host=PluginHost(load_entry_points=False))


# --- where the shape sets come from ------------------------------------------------------------------------


def test_every_suite_problem_declares_extra_shape_sets_for_both_presets():
    for name in suite_names():
        for size in ("cpu", "gpu"):
            problem = load_problem(name, size)
            assert problem.extra_sizes_origin == "declared", name
            assert len(problem.extra_sizes) >= 2, name
            for extra in problem.extra_sizes:
                assert set(extra) <= set(problem.sizes), (name, extra)
                assert {**problem.sizes, **extra} != problem.sizes, (name, extra)


def test_kernelbench_constants_give_halved_and_odd_sets_of_the_sizes_only():
    problem = parse_problem(KB_SOFTMAX, "kb_softmax", "test")
    # reduce_dim (small) and kernel_size (a name no size has) are not shapes; dim and batch_size are
    assert problem.extra_sizes_origin == "derived"
    assert problem.extra_sizes == [{"batch_size": 8, "dim": 150}, {"batch_size": 13, "dim": 225}]
    assert derive_extra_sizes({"n": 4, "stride": 64}) == []


def test_declared_sets_are_validated(write):
    bad = KB_SOFTMAX + "\nEXTRA_SIZES = [{'batch': 3}]\n"
    with pytest.raises(ProblemFormatError, match="EXTRA_SIZES names batch"):
        parse_problem(bad, "bad", "test")
    with pytest.raises(ProblemFormatError, match="list of shape sets"):
        parse_problem(KB_SOFTMAX + "\nEXTRA_SIZES = {'cpu': 3}\n", "bad", "test")
    plain = parse_problem(KB_SOFTMAX + "\nEXTRA_SIZES = [{'dim': 33}]\n", "ok", "test", size="gpu")
    assert plain.extra_sizes == [{"dim": 33}] and plain.extra_sizes_origin == "declared"


def test_the_shapes_option_selects_and_is_part_of_the_cache_key():
    declared, derived = load_problem("relu"), parse_problem(KB_SOFTMAX, "kb", "test")
    assert shape_sets(declared, "auto") == shape_sets(declared, "declared") == declared.extra_sizes
    assert shape_sets(derived, "auto") == derived.extra_sizes and shape_sets(derived, "declared") == []
    assert shape_sets(declared, "off") == []
    keys = {EvalConfig(shapes=mode).protocol_key(["launches"]) for mode in ("auto", "declared", "off")}
    assert len(keys) == 3
    with pytest.raises(ValueError):
        EvalConfig(shapes="sometimes")


# --- real evaluations --------------------------------------------------------------------------------------


def test_a_kernel_hard_coding_the_shape_fails_naming_the_shape_set():
    relu = load_problem("relu")
    with _evaluator() as evaluator:
        hard, honest = evaluator.evaluate_many([(HARDCODED_RELU, relu), (relu.solution, relu)])
    assert hard.status == Status.incorrect and hard.reward.total == 0
    assert "at shape set BATCH=1, CHANNELS=2, HEIGHT=16, WIDTH=17" in hard.message, hard.message
    assert "input shape [1, 2, 16, 17]" in hard.message and "expected [1, 2, 16, 17]" in hard.message
    assert "take every size from the inputs" in hard.message
    assert honest.status == Status.ok, honest.message
    assert honest.message.startswith("ok: all 3 trials match, and at 2 more shape sets and in the late trial")
    with _evaluator(shapes="off") as evaluator:  # at the main shape alone the hard-coded kernel is right
        alone = evaluator.evaluate(HARDCODED_RELU, relu)
    assert alone.status == Status.ok, alone.message


# Right at the main shape, raises at any other: what a GPU kernel without masks does when it reads past a smaller
# shape set's input (an illegal memory access, raised by the next synchronisation)
RAISES_OFF_SHAPE_RELU = HARDCODED_RELU.replace(
    "        out = torch.empty((2, 3, 33, 35), device=x.device, dtype=x.dtype)\n",
    "        if tuple(x.shape) != (2, 3, 33, 35):\n"
    "            raise RuntimeError('CUDA error: an illegal memory access was encountered')\n"
    "        out = torch.empty((2, 3, 33, 35), device=x.device, dtype=x.dtype)\n",
)


def test_a_kernel_failing_only_at_a_shape_set_is_incorrect_for_its_generality_not_a_runtime_error():
    assert RAISES_OFF_SHAPE_RELU != HARDCODED_RELU
    relu = load_problem("relu")
    for required in (True, False):
        with _evaluator(require_generality=required) as evaluator:
            failed = evaluator.evaluate(RAISES_OFF_SHAPE_RELU, relu)
        assert failed.status == Status.incorrect and failed.generality == "problem_shapes_only", failed.message
        assert failed.message.startswith("incorrect: correct at the problem's shapes (all 3 trials match")
        assert "wrong at shape set BATCH=1, CHANNELS=2, HEIGHT=16, WIDTH=17: the call raised RuntimeError" in (
            failed.message
        )
        assert failed.error is not None and "illegal memory access" in failed.error.message
        assert failed.reward.total == 0


def test_derived_sets_check_a_kernelbench_file_and_skip_what_the_reference_cannot_run(write):
    # ROWS * COLS must stay 640 for the reference's view: neither derived set keeps it, so both are skipped
    source = (
        "import torch\nimport torch.nn as nn\n\nROWS = 16\nCOLS = 40\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x.view(640))\n\n\n"
        "def get_inputs():\n    return [torch.randn(ROWS, COLS)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    flat = parse_problem(source, "flat_relu", "test")
    assert flat.extra_sizes_origin == "derived" and len(flat.extra_sizes) == 2
    kernel = load_problem("relu").solution.replace("return out", "return out.view(-1)")
    with _evaluator() as evaluator:
        result = evaluator.evaluate(kernel, flat)
    assert result.status == Status.ok, result.message
    assert result.message.startswith("ok: all 3 trials match, and in the late trial"), result.message


def test_a_kernel_that_caches_after_its_first_calls_fails_the_late_trial():
    relu = load_problem("relu")
    with _evaluator() as evaluator:
        result = evaluator.evaluate(LATE_CACHING_RELU, relu)
    # served from the cache, the late call launched no kernel of its own: `launches` names it (a cache that
    # copies its stale answer with a kernel of its own would be `incorrect` in the late trial instead)
    assert result.status == Status.hacked and result.reward.total == 0, result.message
    assert "check 'launches': late trial (fresh inputs after every probe" in result.message, result.message
    caching = next(v for v in result.checks if v.name == "caching")
    # the refresh probe came too early to see it; the `nudged` call, after the probes, is served from the cache too
    assert not caching.passed and "did not change at all" in caching.reason, caching.reason
    copying = LATE_CACHING_RELU.replace(
        "return self.cache[key]",
        "out = torch.empty_like(x)\n            n = x.numel()\n"
        "            relu_kernel[(triton.cdiv(n, 1024),)](self.cache[key], out, n, BLOCK=1024)\n"
        "            return out",
    )
    with _evaluator() as evaluator:
        copied = evaluator.evaluate(copying, relu)
    # its late trial is wrong, and the `nudged` call (two calls on the same buffers, pairs of elements swapped between
    # them) sees the stale answer unchanged: `hacked` by `caching`, which outranks the late trial's `incorrect`
    assert copied.status == Status.hacked and copied.reward.total == 0, copied.message
    assert "check 'caching'" in copied.message and "did not change at all" in copied.message, copied.message


def test_the_warm_worker_path_runs_shape_sets_and_the_late_trial():
    """The GPU worker's code (`gpu_worker`, `gpu_pool`), run on the CPU: the same verdicts."""
    from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool

    relu = load_problem("relu")
    evaluator = _evaluator()
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    results = {}
    try:
        for name, source in (("hard", HARDCODED_RELU), ("late", LATE_CACHING_RELU), ("honest", relu.solution)):
            candidate = Candidate(source=source)
            evidence = pool.run(evaluator._task(candidate, relu), timeout_s=120)
            results[name] = evaluator._judge(candidate, relu, evidence, [], 0.0)
    finally:
        pool.close()
    assert results["hard"].status == Status.incorrect
    assert "at shape set BATCH=1, CHANNELS=2, HEIGHT=16, WIDTH=17" in results["hard"].message
    assert results["late"].status == Status.hacked and "late trial" in results["late"].message
    assert results["honest"].status == Status.ok, results["honest"].message
    assert "2 more shape sets and in the late trial" in results["honest"].message


# --- on a GPU ------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_triton_cuda_shape_sets_and_the_late_trial_are_judged_alike():
    """The same verdicts from the warm GPU worker at gpu sizes (timing on the main shape only)."""
    relu = load_problem("relu", "gpu")
    hard = HARDCODED_RELU.replace("6930", str(16 * 64 * 128 * 128)).replace("(2, 3, 33, 35)", "(16, 64, 128, 128)")
    hard = hard.replace("relu_kernel[(7,)]", "relu_kernel[(16384,)]")
    with _evaluator(backend="triton-cuda", size="gpu", timeout_s=300) as evaluator:
        hardcoded, late, honest = evaluator.evaluate_many(
            [(hard, relu), (LATE_CACHING_RELU, relu), (relu.solution, relu)]
        )
    assert hardcoded.status == Status.incorrect, hardcoded.message
    assert "at shape set BATCH=8, CHANNELS=32, HEIGHT=64, WIDTH=64" in hardcoded.message
    assert late.status in (Status.hacked, Status.incorrect) and "late trial" in late.message, late.message
    assert late.reward.total == 0
    assert honest.status == Status.ok and honest.runtime_ms, honest.message
    assert "2 more shape sets and in the late trial" in honest.message


DIVIDED = """
import torch
import torch.nn as nn

TOTAL = 4096
DIVISOR = 64


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(TOTAL // DIVISOR, 8)]


def get_init_inputs():
    return []
"""


def test_a_derived_shape_set_larger_than_the_main_one_is_skipped(tmp_path):
    """Issue 27 item 1: halving a constant that divides a size doubles the input; a derived set must never be
    what makes a problem run out of memory, so one whose inputs outweigh the main shape's is left out (TOTAL
    halved shrinks the input, DIVISOR halved grows it: only sets that shrink it are kept)."""
    from tritongym.core.worker.task_runner import build_reference, load_reference, make_inputs
    from tritongym.core.worker.trial_plan import plan_extra_trials
    from tritongym.core.worker_task import WorkerTask

    sizes = {"TOTAL": 4096, "DIVISOR": 64}
    derived = [{"TOTAL": 2048}, {"DIVISOR": 32}, {"TOTAL": 3073}, {"DIVISOR": 49}]
    task = WorkerTask(
        problem_name="divided",
        problem_source=DIVIDED,
        sizes=sizes,
        extra_sizes=derived,
        extra_sizes_optional=True,
        late_trial=False,
    )
    reference = load_reference(task, str(tmp_path))
    main = make_inputs(reference, 0, "cpu")
    planned = plan_extra_trials(task, reference, "cpu", make_inputs, build_reference, main)
    kept = [p.sizes for p in planned]
    assert kept == [{"TOTAL": 2048}, {"TOTAL": 3073}]  # the two that grow the input (DIVISOR 32, 49) are skipped
    declared = task.model_copy(update={"extra_sizes_optional": False})
    assert len(plan_extra_trials(declared, reference, "cpu", make_inputs, build_reference, main)) == 4
