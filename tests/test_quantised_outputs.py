"""An int8 output one step from the reference's at rounding boundaries (`measure/rounding.py`): a per-token int8
quantisation written as vLLM and SGLang write it (`x * (127 / absmax)`, rounded half away from zero) differs from
torch's `round(x / scale)` only where a float sits at a half, and is the same answer; a kernel that truncates,
or that leaves a row unwritten, stays wrong."""

import textwrap

import torch

from tests.conftest import ON_CPU_AND_GPU, judged_in_batch
from tests.test_hostile import explain
from tritongym.core.measure import rounding
from tritongym.core.measure.compare import compare_output
from tritongym.core.models import Status
from tritongym.core.problems import load_problem
from tritongym.core.worker_task import Tolerance

TOLERANCES = {"torch.float32": Tolerance(atol=1e-5, rtol=1e-5, rel_norm=1e-4)}


def _quantised(n: int = 100_000) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n)
    ref = torch.round(x / (x.abs().max() / 127)).to(torch.int8)
    return x, ref


def _stepped(ref: torch.Tensor, positions: list[int], step: int = 1) -> torch.Tensor:
    out = ref.clone()
    for p in positions:
        out[p] = out[p] + (step if out[p] < 0 else -step)  # towards zero: never past the int8 range
    return out


def test_a_few_steps_of_one_at_large_values_are_roundings_and_say_so():
    x, ref = _quantised()
    big = (ref.abs() >= 3).nonzero().flatten()[:5].tolist()
    compared = compare_output(0, _stepped(ref, big), ref, TOLERANCES, inputs=[x])
    assert compared.mismatched == 0 and compared.rounded == 5 and "rounding boundaries" in compared.note
    # the inputs are made only when a quantised value differs, once
    asked = []
    compare_output(0, ref.clone(), ref, TOLERANCES, inputs=lambda: asked.append(1) or [x])
    assert not asked
    assert compare_output(0, _stepped(ref, big), ref, TOLERANCES, inputs=lambda: asked.append(1) or [x]).rounded == 5
    assert asked == [1]


def test_what_is_no_rounding_stays_a_mismatch():
    x, ref = _quantised()
    big = (ref.abs() >= 3).nonzero().flatten()
    assert compare_output(0, _stepped(ref, big[:5].tolist(), 2), ref, TOLERANCES, inputs=[x]).mismatched == 5
    too_many = big[: int(rounding.SHARE * ref.numel()) + 1].tolist()  # more than one in 10^4
    assert compare_output(0, _stepped(ref, too_many), ref, TOLERANCES, inputs=[x]).mismatched == len(too_many)
    # a zero where the reference has +-1: a value never stored (a dropped tail), not a rounding
    ones = (ref.abs() == 1).nonzero().flatten()[:3].tolist()
    assert compare_output(0, _stepped(ref, ones), ref, TOLERANCES, inputs=[x]).mismatched == 3
    # integers rounded from no float: off by one is wrong
    ints = torch.randint(-100, 100, (100_000,), dtype=torch.int8)
    assert compare_output(0, _stepped(ints, [0, 1]), ints, TOLERANCES, inputs=[ints]).mismatched == 2
    # wider integers are indices or counts; without the inputs nothing is excused
    wide = ref.to(torch.int32)
    assert compare_output(0, _stepped(wide, big[:2].tolist()), wide, TOLERANCES, inputs=[x]).mismatched == 2
    assert compare_output(0, _stepped(ref, big[:2].tolist()), ref, TOLERANCES).mismatched == 2


QUANT_PROBLEM = """
import torch
import torch.nn as nn

ROWS = 128
COLS = 1024


class Model(nn.Module):
    def forward(self, x):
        absmax = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-10)
        scale = absmax / 127
        return torch.round(x / scale).clamp(-128, 127).to(torch.int8), scale


def get_inputs():
    x = torch.randint(-120, 120, (ROWS, COLS)).float() + 0.25  # a quarter from every rounding boundary
    x[:, 0] = 127.0  # each row's absmax: its scale is exactly 1
    if x.numel() >= 1 << 17:  # three values at a half: torch rounds them to even, the kernel away from zero
        x.view(-1)[[7, x.numel() // 2 + 9, x.numel() - 5]] = torch.tensor([2.5, 4.5, -6.5])
    return [x]


def get_init_inputs():
    return []
"""

PER_TOKEN_QUANT = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _per_token_quant_int8(x_ptr, xq_ptr, scale_ptr, stride_x, stride_xq, N, BLOCK: tl.constexpr):
        row_id = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row_id * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        absmax = tl.maximum(tl.max(tl.abs(x)), 1e-10)
        scale_x = absmax / 127
        x_q = x * (127 / absmax)
        x_q = tl.where(x_q >= 0, tl.floor(x_q + 0.5), tl.ceil(x_q - 0.5)).to(tl.int8)
        tl.store(xq_ptr + row_id * stride_xq + cols, x_q, mask=mask)
        tl.store(scale_ptr + row_id, scale_x)


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            x = x.contiguous()
            M, N = x.numel() // x.shape[-1], x.shape[-1]
            x_q = torch.empty_like(x, dtype=torch.int8)
            scales = torch.empty(x.shape[:-1] + (1,), device=x.device, dtype=torch.float32)
            _per_token_quant_int8[(M,)](x, x_q, scales, N, N, N, BLOCK=triton.next_power_of_2(N))
            return x_q, scales
    """
)


@ON_CPU_AND_GPU
def test_a_quantisation_that_rounds_ties_away_from_zero_is_ok_and_one_that_truncates_is_not(
    backend, tmp_path, registry
):
    """End to end (the pool, its keeper, every default check): the kernel rounds the planted halves away from zero
    where torch rounds them to even; a truncating kernel, and one whose grid leaves the last row at zero, fail."""
    path = tmp_path / "per_token_quant.py"
    path.write_text(QUANT_PROBLEM)
    problem = load_problem(str(path))
    rounded = "tl.where(x_q >= 0, tl.floor(x_q + 0.5), tl.ceil(x_q - 0.5)).to(tl.int8)"
    truncating = PER_TOKEN_QUANT.replace(rounded, "x_q.to(tl.int8)")
    short_grid = PER_TOKEN_QUANT.replace("torch.empty_like(x, dtype", "torch.zeros_like(x, dtype")
    short_grid = short_grid.replace("_per_token_quant_int8[(M,)]", "_per_token_quant_int8[(M - 1,)]")
    assert PER_TOKEN_QUANT not in (truncating, short_grid)
    ok, truncated, short = judged_in_batch(
        backend, registry, [(PER_TOKEN_QUANT, problem), (truncating, problem), (short_grid, problem)]
    )
    assert ok.status == Status.ok, explain(ok)
    assert "quantised values are one step from the reference's, at rounding boundaries" in ok.message, ok.message
    for wrong in (truncated, short):
        assert wrong.status == Status.incorrect and "compared exactly" in wrong.message, explain(wrong)
