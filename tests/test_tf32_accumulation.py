"""The `tf32` class's truncated baseline counts the tensor cores' accumulation over a long reduction.

An honest Triton GEMM (default `tl.dot`, fp32 accumulator) of KernelBench's "large K" shape measured 4.4e-3 against
the float64 gold on an H200, where truncating its operands to TF32 explains 6e-4: the rest is the accumulation
inside the tensor cores, rounding toward zero once per 8-deep step.  It was `incorrect` (precision class half)."""

from __future__ import annotations

import torch

from tritongym.core.measure import gold
from tritongym.core.precision import classify


def test_the_truncated_run_records_the_deepest_reduction():
    with gold.truncated_tf32():
        torch.rand(4, 300) @ torch.rand(300, 5)
        torch.nn.functional.linear(torch.rand(3, 100), torch.rand(7, 100), torch.rand(7))
        torch.nn.functional.conv2d(torch.rand(1, 3, 8, 8), torch.rand(4, 3, 3, 3))
    assert gold.TRUNCATED_DEPTH["deepest"] == 300
    with gold.truncated_tf32():
        torch.nn.functional.conv2d(torch.rand(1, 64, 8, 8), torch.rand(4, 64, 3, 3))
    assert gold.TRUNCATED_DEPTH["deepest"] == 64 * 9  # reset per run


def test_a_large_k_gemms_truncated_baseline_includes_the_accumulation():
    class MatMul(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    k = 1 << 16
    inputs = [torch.rand(4, k), torch.rand(k, 4)]
    model = MatMul()
    refs = [model(*inputs)]
    (sample,) = gold.gold_samples(model, inputs, refs, torch.Generator().manual_seed(0), ref_model=model)
    assert sample.ref_tf32_trunc_err >= gold.accumulation_loss(k) == k / 8 * 2.0**-24
    # the H200's measured error at K = 524288 is tf32 under that baseline, half without the accumulation term
    trunc_alone = 6e-4
    measured = 4.4e-3
    big = trunc_alone + gold.accumulation_loss(524288)
    assert classify(measured, 1.9e-7, 1.1e-4, None, big) == "tf32"
    assert classify(measured, 1.9e-7, 1.1e-4, None, trunc_alone) == "half"


def test_a_reduction_summed_in_another_order_is_tf32_and_float16_is_half():
    """FlagGems' vdot (a two-stage blocked sum) measured 6e-4 against gold where cuBLAS's dot measured 3.1e-5: the
    sum cancels, and another order is ~20x off; a float16 computation of an elementwise problem stays `half`."""
    assert classify(6e-4, 3.1e-5, 3.1e-5, None, 3.1e-5) == "tf32"
    assert classify(3e-4, 3e-8, 3e-8, None, 3e-8) == "half"


def test_a_boolean_answer_the_same_for_other_inputs_is_not_specific():
    """FlagGems' isnan of finite inputs: every answer is all False; the ghost replay's match says nothing."""
    from tritongym.core.models import OutputComparison, ProbeCall
    from tritongym.core.verdict import probe_is_the_answer
    from tritongym.core.worker.probes import decoy_distance

    same = torch.zeros(64, dtype=torch.bool)
    varying = torch.arange(64) % 3 == 0
    assert decoy_distance(same, same.clone()) == 0.0
    assert decoy_distance(varying, ~varying) == 1.0
    matched = OutputComparison(
        index=0, is_tensor=True, shape=[64], ref_shape=[64], dtype="torch.bool", ref_dtype="torch.bool", numel=64
    )

    def call(decoy):
        return ProbeCall(probe="ghost", trial=-1, outputs=[matched], n_outputs=1, ref_n_outputs=1, decoy_errs=[decoy])

    assert not probe_is_the_answer(call(0.0))
    assert probe_is_the_answer(call(1.0))
