"""Hostile candidates: every way a kernel can fail, crash, hang, lie or cheat must end in the right verdict.

Each candidate is derived from the honest `RELU_KERNEL` (or a suite solution) by an exact string edit, and
every edit is checked to have applied, so a test can never silently evaluate the unmodified honest source.
Independent candidates are batched through `evaluate_many` so the sandboxes run in parallel.
"""

from __future__ import annotations

import re
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest
from conftest import RELU_KERNEL

from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import EvaluationResult, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

pytestmark = pytest.mark.timeout(180)

_FORWARD = "    def forward(self, x):\n"
_STORE = "    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n"
_RETURN = "        return out\n"


# --- helpers -----------------------------------------------------------------------------------------


def edit(source: str, old: str, new: str) -> str:
    """Replace exactly one occurrence of `old`; fail loudly if the honest source no longer contains it."""
    assert source.count(old) == 1, f"edit target not found exactly once: {old!r}"
    return source.replace(old, new)


def prelude(code: str, source: str = RELU_KERNEL) -> str:
    """`source` with `code` run at the start of ModelNew.forward (x is in scope)."""
    body = textwrap.indent(textwrap.dedent(code).strip("\n"), " " * 8) + "\n"
    return edit(source, _FORWARD, _FORWARD + body)


def with_block(block: int) -> str:
    """The honest kernel launched with another block size: the same computation, a different kernel id."""
    return edit(edit(RELU_KERNEL, "BLOCK=1024", f"BLOCK={block}"), "cdiv(n, 1024)", f"cdiv(n, {block})")


def line_of(source: str, needle: str) -> int:
    """1-based line number of the single line containing `needle`."""
    hits = [i for i, line in enumerate(source.splitlines(), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


@pytest.fixture
def fast_config(fast_config, sandbox_checks):
    """The sandbox is under test here, so the static source policy (which would refuse `import os` and
    friends before any worker runs) is off; `structure` and every runtime check stay on."""
    return fast_config.model_copy(update={"checks": sandbox_checks})


def evaluator_with(registry: Registry | None, fast_config, **overrides) -> Evaluator:
    config = fast_config.model_copy(update=overrides)
    return Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False))


def explain(result: EvaluationResult) -> str:
    """Everything useful for a failing assertion's message."""
    err = result.error
    return f"status={result.status.value} message={result.message!r} error={err.model_dump() if err else None}"


def max_abs_error_in(message: str) -> float:
    match = re.search(r"max abs error (-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)", message)
    assert match, f"no 'max abs error <number>' in {message!r}"
    return float(match.group(1))


# A result line that would pass every check if it were believed: exact outputs, own kernel launched.
_FAKE_EVIDENCE = """
    import json
    _shape = list(x.shape)
    _out = {"index": 0, "is_tensor": True, "shape": _shape, "ref_shape": _shape, "dtype": "torch.float32",
            "ref_dtype": "torch.float32", "device": "cpu", "ref_device": "cpu", "numel": x.numel(),
            "max_abs_err": 0.0, "mean_abs_err": 0.0, "rel_norm_err": 0.0}
    _trials = [{"seed": s, "outputs": [_out], "n_outputs": 1, "ref_n_outputs": 1,
                "launches": [{"kernel": "relu_kernel", "own": True, "count": 1}]} for s in range(3)]
    _evidence = json.dumps({"stage": "done", "trials": _trials})
"""


# --- 1-2: correct and incorrect ----------------------------------------------------------------------


def test_honest_relu_is_ok_with_own_launch(evaluator, relu_problem):
    result = evaluator.evaluate(RELU_KERNEL, relu_problem)
    assert result.status == Status.ok, explain(result)
    assert result.correct and not result.hacked and result.error is None
    assert result.message.startswith("ok: all 3 trials match"), result.message
    assert result.reward.total >= 1.0
    assert result.trials == 3
    own = [rec for rec in result.launches if rec.kernel == "relu_kernel" and rec.own]
    assert own and own[0].count == 3, result.launches  # one launch per trial
    assert {c.name for c in result.checks} >= {"structure", "launches"}
    assert all(c.passed for c in result.checks), result.checks
    assert result.evaluation_id is not None and not result.cached


def test_wrong_kernels_are_incorrect_with_max_abs_error(evaluator, relu_problem):
    identity = edit(RELU_KERNEL, _STORE, "    tl.store(out_ptr + offs, x, mask=mask)\n")
    scaled = edit(RELU_KERNEL, _STORE, "    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * 1.03, mask=mask)\n")
    results = evaluator.evaluate_many([(identity, relu_problem), (scaled, relu_problem)])
    for result in results:
        assert result.status == Status.incorrect, explain(result)
        assert not result.correct and result.reward.total == 0
        assert "outside tolerance" in result.message
        reported = max_abs_error_in(result.message)
        assert reported > 1e-3
        assert result.max_abs_err >= reported * (1 - 1e-3)  # the worst over all trials; the message names the first
    # the identity is off by |x| on negatives (several units); 1.03 * relu only by 3% of the largest value
    assert max_abs_error_in(results[0].message) > 1.0
    assert max_abs_error_in(results[1].message) < 0.25


# --- 3-5: compile and runtime errors -----------------------------------------------------------------


def test_syntax_error_names_its_line_without_a_worker(evaluator, relu_problem):
    source = edit(RELU_KERNEL, "        n = x.numel()\n", "        n = x.numel())\n")
    bad_line = line_of(source, "n = x.numel())")
    started = time.perf_counter()
    result = evaluator.evaluate(source, relu_problem)
    wall = time.perf_counter() - started
    assert result.status == Status.compile_error, explain(result)
    assert result.error is not None and result.error.kind == "SyntaxError"
    assert result.error.line == bad_line
    assert f"(line {bad_line})" in result.message
    assert "unmatched ')'" in result.message
    assert result.trials == 0
    assert wall < 1.0 and result.duration_s < 1.0, (wall, result.duration_s)


def test_import_and_runtime_errors(evaluator, relu_problem):
    bad_import = edit(
        RELU_KERNEL, "import triton.language as tl\n", "import triton.language as tl\nimport nonexistent_module_xyz\n"
    )
    import_line = line_of(bad_import, "nonexistent_module_xyz")
    boom = prelude('raise ValueError("boom")')
    boom_line = line_of(boom, 'raise ValueError("boom")')
    imported, raised = evaluator.evaluate_many([(bad_import, relu_problem), (boom, relu_problem)])

    assert imported.status == Status.compile_error, explain(imported)
    assert "nonexistent_module_xyz" in imported.message
    assert imported.error.kind == "ModuleNotFoundError"
    assert imported.error.line == import_line
    assert "candidate.py" in imported.error.traceback
    assert "nonexistent_module_xyz" in imported.error.traceback

    assert raised.status == Status.runtime_error, explain(raised)
    assert raised.error.kind == "ValueError"
    assert "boom" in raised.message and raised.message.startswith("ValueError: boom")
    assert raised.error.line == boom_line
    assert "candidate.py" in raised.error.traceback
    # the traceback starts at the candidate's frames: the harness is not shown to the model
    assert "tritongym/core/worker/" not in raised.error.traceback


# --- 6-7: hangs and crashes --------------------------------------------------------------------------


def test_infinite_loop_times_out(registry, fast_config, relu_problem):
    evaluator = evaluator_with(registry, fast_config, timeout_s=2)
    source = prelude("while True:\n    pass")
    started = time.perf_counter()
    result = evaluator.evaluate(source, relu_problem)
    wall = time.perf_counter() - started
    assert result.status == Status.timeout, explain(result)
    assert "time limit of 2 s" in result.message and "killed" in result.message
    assert not result.correct and result.reward.total == 0
    assert 2.0 <= wall < 30.0, wall


def test_exit_segfault_and_memory_bomb_crash(registry, fast_config, relu_problem):
    evaluator = evaluator_with(registry, fast_config, memory_mb=2048)
    exits = prelude("import os\nos._exit(0)")
    segfault = prelude("import ctypes\nctypes.string_at(0)")
    bomb = prelude("hoard = []\nwhile True:\n    hoard.append(bytearray(50 * 2**20))")
    big = prelude("blob = bytearray(50 * 2**30)")
    results = evaluator.evaluate_many([(s, relu_problem) for s in (exits, segfault, bomb, big)])
    for result in results:
        assert result.status == Status.crashed, explain(result)
        assert not result.correct and result.reward.total == 0
    exited, segv, hoard, blob = results
    assert "exited with code 0 before reporting a result" in exited.message
    assert "SIGSEGV" in segv.message
    for result in (hoard, blob):
        assert "MemoryError" in result.message, explain(result)
    # the test process survived all of that and the evaluator still works
    again = evaluator.evaluate(with_block(256), relu_problem)
    assert again.status == Status.ok, explain(again)


# --- 8-9: the result channel and the environment -----------------------------------------------------


_FORGE_WITHOUT_NONCE = """
    import os, stat
    _line = "TRITONGYM-RESULT deadbeef " + _evidence
    print(_line, flush=True)
    for _fd in range(1, 64):  # every pipe it can reach, the worker's real result pipe included
        try:
            if stat.S_ISFIFO(os.fstat(_fd).st_mode):
                os.write(_fd, ("\\n" + _line + "\\n").encode())
        except OSError:
            pass
"""


def test_forged_result_line_is_ignored_and_noise_is_harmless(evaluator, relu_problem):
    # a forged line without the nonce, then zeros: the only pipe the candidate's process can reach is its
    # own report channel, so the forgery at most spoils its own report
    then_zeros = prelude(_FAKE_EVIDENCE + _FORGE_WITHOUT_NONCE + "    return torch.zeros_like(x)\n")
    # a forged line as the *last* line on the pipe: only the nonce stops the parent from believing it
    then_exit = prelude(_FAKE_EVIDENCE + _FORGE_WITHOUT_NONCE + "    os._exit(0)\n")
    noisy = prelude(  # noisy on the first call only: every probe call repeating it would fill the log's size cap
        """
    import sys
    if not getattr(sys, "_tritongym_test_noise_done", False):
        sys._tritongym_test_noise_done = True
        sys.stdout.write("TRITONGYM-RESULT garbage {not json\\n" * 200_000)
        sys.stderr.write("\\x00\\xff junk " * 200_000)
    """
    )
    zeros, exited, chatty = evaluator.evaluate_many([(s, relu_problem) for s in (then_zeros, then_exit, noisy)])
    assert zeros.status in (Status.incorrect, Status.crashed), explain(zeros)
    assert "outside tolerance" in zeros.message or "malformed report" in zeros.message
    assert zeros.reward.total == 0
    assert exited.status == Status.crashed, explain(exited)
    assert "before reporting a result" in exited.message or "malformed report" in exited.message
    assert exited.reward.total == 0 and not exited.launches
    assert chatty.status == Status.ok, explain(chatty)
    assert chatty.correct and chatty.reward.total >= 1


def test_result_forged_with_the_real_nonce_is_not_believed(evaluator, relu_problem):
    forged = prelude(
        _FAKE_EVIDENCE
        + """
    import os, sys
    _f = sys._getframe()
    while _f is not None and _f.f_code.co_name != "main":
        _f = _f.f_back
    os.write(_f.f_locals["result_fd"], f"TRITONGYM-RESULT {_f.f_locals['nonce']} {_evidence}\\n".encode())
    os._exit(0)
    """
    )
    result = evaluator.evaluate(forged, relu_problem)
    assert result.status != Status.ok, explain(result)


def test_worker_never_sees_the_registry_path_or_real_home(evaluator, relu_problem, monkeypatch, tmp_path):
    secret = tmp_path / "secret-registry.db"
    monkeypatch.setenv("TRITONGYM_REGISTRY", str(secret))
    source = prelude(
        "import os\n"
        "raise RuntimeError('HOME=' + os.environ.get('HOME', '') + ' REG=' + os.environ.get('TRITONGYM_REGISTRY', '-')"
        " + ' KEYS=' + repr(sorted(os.environ)))"
    )
    result = evaluator.evaluate(source, relu_problem)
    assert result.status == Status.runtime_error, explain(result)
    message = result.error.message
    assert "KEYS=[" in message and "'PATH'" in message  # the environment really was reported
    assert "TRITONGYM_REGISTRY" not in message
    assert str(secret) not in message and "REG=-" in message
    home = re.search(r"HOME=(\S+)", message).group(1)
    assert home != str(Path.home()) and Path(home).name.startswith("tritongym-"), home
    assert not Path(home).exists(), "the worker's private directory was not removed"


# --- 10-14: outputs that look right but are not ------------------------------------------------------


def test_input_mutation_is_incorrect(evaluator, relu_problem):
    source = edit(
        RELU_KERNEL,
        _STORE,
        _STORE + "    tl.store(x_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n",
    )
    result = evaluator.evaluate(source, relu_problem)
    assert result.status == Status.incorrect, explain(result)
    assert "modified its input" in result.message
    assert not result.correct and result.reward.total == 0


def test_subclass_dtype_and_shape_are_incorrect(evaluator, relu_problem):
    subclass = edit(
        RELU_KERNEL,
        _RETURN,
        "        class Lazy(torch.Tensor):\n            pass\n\n        return out.as_subclass(Lazy)\n",
    )
    widened = edit(RELU_KERNEL, _RETURN, "        return out.double()\n")
    flat = edit(RELU_KERNEL, _RETURN, "        return out.flatten()\n")
    sub, dtype, shape = evaluator.evaluate_many([(s, relu_problem) for s in (subclass, widened, flat)])
    for result in (sub, dtype, shape):
        assert result.status == Status.incorrect, explain(result)
        assert not result.correct and result.reward.total == 0
    assert "not a torch.Tensor" in sub.message and "Lazy" in sub.message
    assert "dtype torch.float64, expected torch.float32" in dtype.message
    assert "shape [6930], expected [2, 3, 33, 35]" in shape.message


def test_decoy_kernel_never_launched_is_hacked(evaluator, relu_problem):
    source = edit(RELU_KERNEL, "        return out\n", "        return torch.relu(x)\n")
    source = edit(source, "        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)\n", "")
    result = evaluator.evaluate(source, relu_problem)
    assert result.status == Status.hacked, explain(result)
    assert result.hacked and not result.correct
    assert result.reward.total == 0
    assert "launches" in result.message and "none of the candidate's own Triton kernels" in result.message
    failed = [c for c in result.checks if not c.passed]
    assert failed[0].name == "launches" and failed[0].stage == "runtime"  # the basic finding is reported first
    # ghost replay sees the same (no kernel mattered), and the tracer weighs torch.relu doing all the work
    assert {c.name for c in failed} == {"launches", "ghost"}
    weighed = next(c for c in result.checks if c.name == "torch_compute")
    assert weighed.reason.startswith("lazy: torch did 100% of the reference's work") and "aten.relu" in weighed.reason
    assert not any(rec.own for rec in result.launches)


def test_no_model_or_no_kernel_is_rejected_without_a_worker(evaluator, relu_problem):
    no_model = edit(RELU_KERNEL, "class ModelNew(", "class Solution(")
    no_kernel = edit(RELU_KERNEL, "@triton.jit\n", "")
    started = time.perf_counter()
    results = evaluator.evaluate_many([(no_model, relu_problem), (no_kernel, relu_problem)])
    assert time.perf_counter() - started < 1.0
    for result in results:
        assert result.status == Status.rejected, explain(result)
        assert "rejected by check 'structure'" in result.message
        assert result.trials == 0 and result.reward.total == 0
        assert [c.name for c in result.checks if not c.passed] == ["structure"]
    assert "ModelNew" in results[0].message
    assert "@triton.jit" in results[1].message
    assert f"(line {line_of(no_kernel, 'class ModelNew(')})" in results[1].message


@pytest.fixture
def linear_problem():
    problem = load_problem("linear_bias_relu")
    assert problem.solution and "self.linear = torch.nn.Linear(" in problem.solution
    return problem


def test_weights_are_bound_by_name_or_by_the_shared_seed(evaluator, linear_problem):
    solution = linear_problem.solution
    renamed = solution.replace("self.linear", "self.fc")
    assert renamed != solution and "self.linear" not in renamed
    shipped, seeded = evaluator.evaluate_many([(solution, linear_problem), (renamed, linear_problem)])
    # the shipped solution's `linear.*` parameters are bound to the reference's by name
    assert shipped.status == Status.ok, explain(shipped)
    assert "weights: 2 bound by name" in shipped.message, shipped.message
    # `fc` is built under the reference's seed, as KernelBench builds ModelNew: its values are the reference's
    assert seeded.status == Status.ok, explain(seeded)
    assert "weights: 2 from the shared seed" in seeded.message, seeded.message
    assert any(rec.kernel == "linear_relu_kernel" and rec.own for rec in seeded.launches)  # it did run


def test_reseeding_does_not_reproduce_unbound_weights(evaluator, linear_problem):
    renamed = linear_problem.solution.replace("self.linear", "self.fc")
    reseeded = edit(
        renamed, "        super().__init__()\n", "        super().__init__()\n        torch.manual_seed(0)\n"
    )
    result = evaluator.evaluate(reseeded, linear_problem)
    assert result.status == Status.incorrect, explain(result)
    assert "match neither the reference's by name nor the shared seed's" in result.message, result.message


# --- 15-16: the registry ------------------------------------------------------------------------------


def test_registry_survives_hostile_batch(registry, fast_config, relu_problem):
    evaluator = evaluator_with(registry, fast_config, timeout_s=2)  # the infinite loop's wait, as in the test above
    good = evaluator.evaluate(RELU_KERNEL, relu_problem)
    assert good.status == Status.ok, explain(good)
    hostile = [
        prelude("import os\nos._exit(0)"),
        prelude("while True:\n    pass"),
        edit(RELU_KERNEL, "        n = x.numel()\n", "        n = x.numel())\n"),
        prelude("import ctypes\nctypes.string_at(0)"),
    ]
    results = evaluator.evaluate_many([(s, relu_problem) for s in hostile])
    assert [r.status for r in results] == [Status.crashed, Status.timeout, Status.compile_error, Status.crashed], [
        explain(r) for r in results
    ]
    assert all(r.evaluation_id is not None for r in results)

    hit = registry.lookup(relu_problem.key, good.kernel_id, evaluator.backend_name, "cpu", evaluator.protocol)
    assert hit is not None and hit.cached
    assert hit.status == Status.ok and hit.correct
    assert hit.evaluation_id == good.evaluation_id and hit.message == good.message
    assert registry.db["evaluations"].count == 1 + len(hostile)
    assert registry.stats()["by_status"] == {"ok": 1, "crashed": 2, "timeout": 1, "compile_error": 1}
    assert registry.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # a second connection (another process's view) sees the same committed rows
    other = sqlite3.connect(str(registry.path))
    try:
        assert other.execute("SELECT count(*) FROM evaluations").fetchone()[0] == 1 + len(hostile)
    finally:
        other.close()


_REFORMATTED = """
# the same ReLU, reformatted: comments, blank lines, different spacing and wrapping
import torch


import triton
import triton.language as tl   # the language


@triton.jit
def relu_kernel(x_ptr,
                out_ptr,
                n,
                BLOCK: tl.constexpr):
    # one block per program

    offs = tl.program_id(0)*BLOCK + tl.arange(0,BLOCK)
    mask = (offs < n)
    x = tl.load(x_ptr+offs, mask = mask)
    tl.store(out_ptr + offs,
             tl.maximum(x, 0.0),
             mask=mask)   # done


class ModelNew(torch.nn.Module):

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)

        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024), )](x, out, n, BLOCK = 1024)
        return (out)
"""


def test_reformatted_kernel_is_answered_from_cache(evaluator, relu_problem):
    assert _REFORMATTED.strip() != RELU_KERNEL.strip()
    started = time.perf_counter()
    first = evaluator.evaluate(RELU_KERNEL, relu_problem)
    first_wall = time.perf_counter() - started
    assert first.status == Status.ok and not first.cached, explain(first)

    started = time.perf_counter()
    second = evaluator.evaluate(_REFORMATTED, relu_problem)
    second_wall = time.perf_counter() - started
    assert second.cached, explain(second)
    assert second.kernel_id == first.kernel_id
    assert second.status == Status.ok and second.correct and second.reward.total == first.reward.total
    assert second.evaluation_id == first.evaluation_id
    assert second.duration_s * 50 <= first.duration_s, (first.duration_s, second.duration_s)
    assert second_wall * 50 <= first_wall, (first_wall, second_wall)

    different = with_block(512)
    third = evaluator.evaluate(different, relu_problem)
    assert not third.cached and third.kernel_id != first.kernel_id, explain(third)
    assert third.status == Status.ok, explain(third)
    assert third.evaluation_id != first.evaluation_id
    assert evaluator.registry.db["evaluations"].count == 2


def test_duplicates_in_one_batch_run_once(evaluator, relu_problem):
    results = evaluator.evaluate_many(
        [(RELU_KERNEL, relu_problem), (_REFORMATTED, relu_problem), (RELU_KERNEL, relu_problem)]
    )
    assert [r.cached for r in results] == [False, True, True]
    assert len({r.evaluation_id for r in results}) == 1 and all(r.status == Status.ok for r in results)
    assert evaluator.registry.db["evaluations"].count == 1
