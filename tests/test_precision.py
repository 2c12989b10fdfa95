"""Precision classes (core/precision.py) and the reference baselines behind them (core/measure/gold.py).

The class bounds are worked by hand here from their definition: floors 1e-5 / 1e-3 (2.5e-4 where both TF32
baselines were measured) / 2e-2, a multiple of 4
of what the reference itself reaches in a class, and 2 of its error with matmul operands truncated to TF32.
The truncation emulation is held to what an H100 measured for Triton's default `tl.dot` on a float32 GEMM."""

from __future__ import annotations

import pytest
import torch

from tritongym.core.measure.compare import rel_err
from tritongym.core.measure.gold import exact_reference, truncated_tf32
from tritongym.core.precision import BELOW_HALF, classify, narrow_dtype, passing, worst


@pytest.mark.parametrize(
    ("err", "baselines", "expected"),
    [
        (2e-7, (1e-7,), "ieee"),  # float32 in another order
        (3e-4, (1e-7,), "tf32"),  # TF32 or float16 operands on one GEMM
        (3e-3, (1e-7,), "half"),  # bfloat16 operands
        (5e-2, (1e-7,), BELOW_HALF),  # wrong, not low-precision
        (1.5e-3, (5e-4,), "ieee"),  # a float16 problem: 4 x its own 5e-4 = 2e-3
        (3.5e-3, (1e-7, 1e-3), "tf32"),  # a chain whose torch TF32 reaches 1e-3: 4 x 1e-3 = 4e-3
        (4.5e-3, (1e-7, 1e-3), "half"),  # ...just past it
        (7e-3, (1e-7, 5e-4, None, 4e-3), "tf32"),  # Triton's truncating TF32 on an attention: 2 x 4e-3 = 8e-3
        (3e-2, (1e-7, None, 1e-2), "half"),  # bfloat16 autocast of the reference at 1e-2: 4 x 1e-2 = 4e-2
        # a problem TF32 does not touch (both TF32 runs of the reference exactly its exact run): `tf32` allows
        # what `ieee` does, so an elementwise kernel computed in float16 (3e-4) is `half`
        (3e-4, (1e-7, 1e-7, None, 1e-7), "half"),
        (3e-6, (1e-7, 1e-7, None, 1e-7), "ieee"),
        (3e-4, (1e-7, 1e-7, None, 4e-4), "tf32"),  # a GEMM on the CPU: torch's TF32 moves nothing, truncation does
        # both TF32 baselines measured and small (a row sum of a GEMM's sigmoids averages the rounding away): the
        # floor is 2.5e-4, so stop 50's surviving mutant (one input feature of 2,048 dropped, 4.9e-4) is `half`...
        (4.9e-4, (1e-7, 1.5e-5, None, 3e-5), "half"),
        (3.2e-5, (1e-7, 1.5e-5, None, 3e-5), "tf32"),  # ...and the honest kernel (3.2e-5) `tf32`
        (2.4e-4, (1e-7, 1.5e-5, None, 3e-5), "tf32"),  # a GELU epilogue's approximate exp beside it still passes
        (9.4e-4, (1e-6, 3.1e-4, None, 4.5e-4), "tf32"),  # attorch's linear+GELU on an H200: the baselines allow it
        (4.9e-4, (1e-7,), "tf32"),  # baselines not measured: the class's 1e-3 floor stands
    ],
)
def test_the_class_an_error_reaches(err, baselines, expected):
    assert classify(err, *baselines) == expected


def test_a_16_bit_outputs_own_rounding_is_no_summation_order():
    """A float16 GEMM (reference 3.6e-4 against gold, the output's own rounding): its output rounded to bfloat16 on
    the way out (3.2e-3, a surviving mutant on four H200s) is `half`, where a float32 reduction summed in another
    order than a cancelling reference keeps `NO_TF32_SLACK`'s room."""
    fp16_gemm = (3.6e-4, 3.6e-4, None, 3.6e-4)  # neither TF32 run moves a float16 product
    assert classify(3.2e-3, *fp16_gemm) == "tf32"  # read as a float32 sum's order, 32 x 3.6e-4 passes it
    assert classify(3.2e-3, *fp16_gemm, narrow=True) == "half"
    assert classify(4.0e-4, *fp16_gemm, narrow=True) == "ieee"  # as exact as the dtype allows
    assert classify(6e-4, 3.1e-5, 3.1e-5, None, 3.1e-5) == "tf32"  # FlagGems' vdot, float32
    assert narrow_dtype("torch.float16") and narrow_dtype("torch.bfloat16") and narrow_dtype("torch.float8_e4m3fn")
    assert not narrow_dtype("torch.float32") and not narrow_dtype(None)


def test_policies_pass_their_class_and_every_more_exact_one():
    assert passing("ieee") == ("ieee",)
    assert passing("tf32") == ("ieee", "tf32")
    assert passing("half") == ("ieee", "tf32", "half")
    assert worst(["ieee", None, "half", "tf32"]) == "half" and worst([None]) is None
    assert classify(None, 1e-7) is None


def test_truncated_tf32_reproduces_tritons_default_dot_and_leaves_the_flags_alone():
    """An H100 measured Triton's default `tl.dot` (TF32) on a float32 GEMM at 7.7e-4 against a float64 gold;
    torch's own float32 product is near 1e-7."""
    torch.manual_seed(0)
    a, b = torch.randn(256, 1024), torch.randn(1024, 256)
    gold = (a.double() @ b.double()).reshape(-1)
    before = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    with truncated_tf32():
        truncated = (a @ b).reshape(-1)
    with exact_reference():
        exact = (a @ b).reshape(-1)
    assert (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()) == before
    assert 7.0e-4 < rel_err(truncated, gold) < 8.5e-4
    assert rel_err(exact, gold) < 1e-6


def test_a_candidates_torch_calls_run_as_torch_leaves_them_and_the_reference_is_timed_in_the_policys_class():
    """Under `tf32` the keeper times the reference with TF32 on (no TF32 kernel timed against an exact float32
    baseline), while the candidate's own torch matmuls start exact, as in KernelBench's harness: forced into TF32,
    the reference itself failed KernelBench's tolerance on level 2's 14 and 18 (on an H100)."""
    from tritongym.core.worker.task_runner import configure_precision
    from tritongym.core.worker_task import WorkerTask

    def flags():
        backends = torch.backends
        return backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32, torch.get_float32_matmul_precision()

    saved = flags()

    try:
        task = WorkerTask(problem_name="p", problem_source="", precision="tf32")
        configure_precision(task, candidate=True)
        assert flags() == (False, True, "highest")  # torch's own defaults
        configure_precision(task)
        assert flags() == (True, True, "high")
        ieee = task.model_copy(update={"precision": "ieee"})
        for candidate in (True, False):
            configure_precision(ieee, candidate=candidate)
            assert flags() == (False, False, "highest")
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


def test_an_output_stored_at_16_bits_is_measured_as_such():
    """A float32 output rounded to float16 (or bfloat16) has its low 13 mantissa bits zero everywhere; the
    reference's almost nowhere.  Measured on the output, not read from the source."""
    from tritongym.core.measure.compare import compare_output
    from tritongym.core.precision import stored_short
    from tritongym.core.worker_task import Tolerance

    torch.manual_seed(0)
    ref = torch.randn(4096)
    tolerances = {"torch.float32": Tolerance(atol=1e-2, rtol=1e-2, rel_norm=1e-2)}
    for dtype in (torch.float16, torch.bfloat16):
        short = compare_output(0, ref.to(dtype).float(), ref, tolerances)
        assert short.short_significands == 1.0 and short.ref_short_significands < 0.01
        assert stored_short(short.short_significands, short.ref_short_significands)
    honest = compare_output(0, ref * (1 + 1e-7 * torch.randn(4096)), ref, tolerances)
    assert honest.short_significands < 0.01
    assert not stored_short(honest.short_significands, honest.ref_short_significands)
    # inputs that are short themselves make the reference's outputs short: a copy of them is no downgrade
    coarse = ref.half().float()
    copied = compare_output(0, coarse.clone(), coarse, tolerances)
    assert not stored_short(copied.short_significands, copied.ref_short_significands)
    # too few values to say anything
    assert compare_output(0, ref[:8].half().float(), ref[:8], tolerances).short_significands is None


def test_a_fused_attention_has_a_tf32_cost():
    """torch's fused attention runs its products inside one op: its operands are truncated too, so an attention
    problem keeps the `tf32` class's floor (`tf32_in_play`)."""
    from torch.nn.functional import scaled_dot_product_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32) for _ in range(3))
    gold = scaled_dot_product_attention(q.double(), k.double(), v.double()).reshape(-1)
    with exact_reference():
        exact = scaled_dot_product_attention(q, k, v).reshape(-1)
    with truncated_tf32():
        truncated = scaled_dot_product_attention(q, k, v).reshape(-1)
    assert rel_err(exact, gold) < 1e-5 < rel_err(truncated, gold)


def _trial(gold_err: float, sizes: dict | None = None):
    from tritongym.core.models import OutputComparison, TrialEvidence

    out = OutputComparison(index=0, is_tensor=True, gold_err=gold_err, ref_gold_err=1e-7, ref_tf32_err=1e-7)
    return TrialEvidence(seed=1, sizes=sizes, outputs=[out])


@pytest.mark.parametrize("shape_set_err", [5e-3, 0.05])
def test_a_downgrade_at_the_problems_own_shape_is_named_whatever_a_shape_set_reached(shape_set_err):
    """A softmax of bfloat16 inputs (tests/hacks' `bf16_cast_alias`) is in the `half` class at the problem's own
    shape; at a wider shape set its error is sometimes beyond every class (0.02 of 1,100 columns), which alone
    says "wrong there, for the correctness verdict".  The check judges the problem's own shape alone when that is
    below the policy, so the downgrade is named either way (it passed once in CI when the shape set's error was
    the worst of all and beyond every class)."""
    from tritongym.core.models import Candidate, Evidence
    from tritongym.core.problems import load_problem
    from tritongym.plugins.checks.precision import PrecisionCheck

    evidence = Evidence(stage="done", trials=[_trial(5e-3), _trial(shape_set_err, {"ROWS": 3, "COLS": 1100})])
    verdict = PrecisionCheck().judge(evidence, Candidate(source="x = 1"), load_problem("softmax"))
    assert not verdict.passed, verdict.reason
    assert "precision class half" in verdict.reason and "at shape set" not in verdict.reason, verdict.reason
    assert not verdict.other_shapes_only


def test_a_shortfall_only_a_shape_set_shows_is_marked_so():
    from tritongym.core.models import Candidate, Evidence
    from tritongym.core.problems import load_problem
    from tritongym.plugins.checks.precision import PrecisionCheck

    evidence = Evidence(stage="done", trials=[_trial(1e-7), _trial(5e-3, {"ROWS": 3, "COLS": 1100})])
    verdict = PrecisionCheck().judge(evidence, Candidate(source="x = 1"), load_problem("softmax"))
    assert not verdict.passed and verdict.other_shapes_only, verdict.reason
    assert "at shape set ROWS=3, COLS=1100" in verdict.reason, verdict.reason
