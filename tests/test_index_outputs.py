"""An index output (topk's, argmax's) is compared exactly, and a refusal says so in its own words: "elements
outside tolerance; non-finite values" (the float wording, with no error to size) read as if the kernel had
written NaN where it had returned two other indices."""

import textwrap

import torch

from tests.conftest import ON_CPU_AND_GPU, judged_in_batch
from tests.test_hostile import explain
from tritongym.core.measure.compare import compare_output
from tritongym.core.measure.ties import MAX_ELEMENTS
from tritongym.core.models import Status, TrialEvidence
from tritongym.core.problems import load_problem
from tritongym.core.verdict import judge_trials
from tritongym.core.worker_task import Tolerance

TOLERANCES = {"torch.float32": Tolerance(atol=1e-5, rtol=1e-5, rel_norm=1e-4)}


def judged(outputs: list[torch.Tensor], refs: list[torch.Tensor]):
    compared = [compare_output(i, out, ref, TOLERANCES) for i, (out, ref) in enumerate(zip(outputs, refs))]
    trial = TrialEvidence(seed=7, late=True, outputs=compared, n_outputs=len(outputs), ref_n_outputs=len(refs))
    return judge_trials([trial])


def test_two_swapped_indices_are_named_as_values_that_differ_not_as_non_finite_errors():
    x = torch.randn(4, 64)
    values, indices = torch.topk(x, 8)
    swapped = indices.clone()
    swapped[2, [3, 4]] = swapped[2, [4, 3]]
    judgement = judged([values, swapped], [values, indices])
    assert not judgement.correct
    assert "output 1: 2 of 32 values differ (torch.int64, compared exactly)" in judgement.message, judgement.message
    assert "non-finite" not in judgement.message
    assert judged([values, indices.clone()], [values, indices]).correct


def test_a_float_output_keeps_its_error_sizes():
    ref = torch.randn(16)
    judgement = judged([ref + 1.0], [ref])
    assert "16 of 16 elements outside tolerance" in judgement.message and "max abs error 1" in judgement.message


def test_indices_that_differ_only_at_tied_values_are_the_same_answer():
    x = torch.tensor([[3.0, 1.0, 3.0, 0.0, 2.0], [1.0, 4.0, 4.0, 4.0, 0.0]])
    values, indices = torch.topk(x, 3)
    swapped = indices.clone()
    swapped[0, [0, 1]] = swapped[0, [1, 0]]  # the two 3.0s, the other way round
    compared = compare_output(1, swapped, indices, TOLERANCES, inputs=[x])
    assert compared.mismatched == 0 and compared.ties == 2 and "tie" in compared.note
    # the inputs are made only when an index differs: a callable is asked then, and only then
    asked = []
    compare_output(1, indices.clone(), indices, TOLERANCES, inputs=lambda: asked.append(1) or [x])
    assert not asked
    assert compare_output(1, swapped, indices, TOLERANCES, inputs=lambda: asked.append(1) or [x]).ties == 2
    assert asked == [1]
    # a mask is no index (a bool output that differs is wrong), and one too large is not examined: neither makes inputs
    mask = x > 2.0
    assert compare_output(0, ~mask, mask, TOLERANCES, inputs=lambda: asked.append(2) or [x]).mismatched == 10
    big = torch.zeros(MAX_ELEMENTS + 1, dtype=torch.int32)
    other = big.clone()
    other[0] = 1
    assert compare_output(0, other, big, TOLERANCES, inputs=lambda: asked.append(3) or [x]).mismatched == 1
    assert asked == [1]


def test_an_index_that_points_to_another_value_or_names_an_element_twice_stays_wrong():
    x = torch.tensor([[3.0, 1.0, 3.0, 0.0, 2.0]])
    _, indices = torch.topk(x, 3)  # 0 and 2 (the 3.0s), then 4 (2.0)
    wrong = indices.clone()
    wrong[0, 2] = 1  # 1.0, not 2.0
    assert compare_output(0, wrong, indices, TOLERANCES, inputs=[x]).mismatched == 1
    twice = indices.clone()
    twice[0, 1] = twice[0, 0]  # the same 3.0 named twice: the values agree, the answer does not
    assert compare_output(0, twice, indices, TOLERANCES, inputs=[x]).mismatched == 1
    out_of_range = indices.clone()
    out_of_range[0, 2] = 7
    assert compare_output(0, out_of_range, indices, TOLERANCES, inputs=[x]).mismatched == 1
    # without the inputs nothing is excused
    swapped = indices.clone()
    swapped[0, [0, 1]] = swapped[0, [1, 0]]
    assert compare_output(0, swapped, indices, TOLERANCES).mismatched == 2


def test_argmax_with_and_without_a_dimension():
    x = torch.tensor([[1.0, 5.0, 5.0], [2.0, 2.0, 0.0]])
    last = torch.tensor([2, 1])  # the last maximum of each row, where torch returns the first
    assert compare_output(0, last, x.argmax(dim=1), TOLERANCES, inputs=[x]).ties == 2
    assert compare_output(0, last.unsqueeze(1), x.argmax(dim=1, keepdim=True), TOLERANCES, inputs=[x]).ties == 2
    assert compare_output(0, torch.tensor(2), x.argmax(), TOLERANCES, inputs=[x]).ties == 1
    assert compare_output(0, torch.tensor(0), x.argmax(), TOLERANCES, inputs=[x]).mismatched == 1


ARGMAX_PROBLEM = """
import torch
import torch.nn as nn

ROWS = 16
COLS = 32


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randint(0, 4, (ROWS, COLS)).float()]  # small integers: every row ties


def get_init_inputs():
    return []
"""

LAST_ARGMAX = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def last_argmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        top = tl.max(x, axis=0)
        last = tl.max(tl.where((x == top) & mask, cols, -1), axis=0)  # torch names the first maximum, this the last
        tl.store(out_ptr + row, last.to(tl.int64))


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            x = x.contiguous()
            out = torch.empty(x.shape[0], dtype=torch.int64, device=x.device)
            last_argmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
            return out
    """
)


@ON_CPU_AND_GPU
def test_an_argmax_kernel_that_breaks_ties_the_other_way_is_ok_and_one_off_by_one_is_not(backend, tmp_path, registry):
    """End to end (the pool, its keeper, every default check; on the GPU the keeper makes the inputs again there):
    the kernel names the last of equal maxima where torch names the first, in every row."""
    path = tmp_path / "argmax_ties.py"
    path.write_text(ARGMAX_PROBLEM)
    problem = load_problem(str(path))
    off_by_one = LAST_ARGMAX.replace("tl.store(out_ptr + row, last.to", "tl.store(out_ptr + row, (last + 1).to")
    assert off_by_one != LAST_ARGMAX
    tied, wrong = judged_in_batch(backend, registry, [(LAST_ARGMAX, problem), (off_by_one, problem)])
    assert tied.status == Status.ok, explain(tied)
    assert "returned indices differ from the reference's only at tied values" in tied.message, tied.message
    assert wrong.status == Status.incorrect and "compared exactly" in wrong.message, explain(wrong)
