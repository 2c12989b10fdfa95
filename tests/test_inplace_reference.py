"""A reference that updates its input in place (`x.add_(y); return x`, as fused residual adds do): the candidate is
held to make the same update, not refused for making it.  It was `incorrect` ("the candidate modified its input(s)
[0]"), since the candidate's inputs were held to their values before the forward, not to the reference's after it.

CPU only for now: on a GPU the keeper's record does not yet keep the reference's updated inputs (DEVELOPERS.md)."""

import textwrap

from tests.conftest import judged_in_batch
from tests.test_hostile import explain
from tritongym.core.models import Status
from tritongym.core.problems import load_problem

IN_PLACE_PROBLEM = """
import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def forward(self, x, y):
        x.add_(y)  # the residual stream updated in place
        return x * 2.0


def get_inputs():
    return [torch.randn(4, N), torch.randn(4, N)]


def get_init_inputs():
    return []
"""

ADD_IN_PLACE = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def add_double_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        s = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
        tl.store(x_ptr + offs, s, mask=mask)
        tl.store(out_ptr + offs, s * 2.0, mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x, y):
            out = torch.empty_like(x)
            n = x.numel()
            add_double_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
            return out
    """
)


def test_an_in_place_update_the_reference_makes_is_required_not_refused(tmp_path, registry):
    """The honest kernel (updates `x`, returns twice the sum) is ok; one that leaves `x` alone (right output, the
    update skipped: less memory traffic) and one that writes into `y` instead are refused, each saying why."""
    path = tmp_path / "in_place.py"
    path.write_text(IN_PLACE_PROBLEM)
    problem = load_problem(str(path))
    skipped = ADD_IN_PLACE.replace("tl.store(x_ptr + offs, s, mask=mask)", "pass")
    into_y = ADD_IN_PLACE.replace("tl.store(x_ptr + offs, s, mask=mask)", "tl.store(y_ptr + offs, s, mask=mask)")
    assert ADD_IN_PLACE not in (skipped, into_y)
    honest, lazy, wrong = judged_in_batch(
        "triton-cpu", registry, [(ADD_IN_PLACE, problem), (skipped, problem), (into_y, problem)]
    )
    assert honest.status == Status.ok, explain(honest)
    assert lazy.status == Status.incorrect and "updates its input(s) [0] in place" in lazy.message, explain(lazy)
    assert wrong.status == Status.incorrect and "modified its input(s) [1]" in wrong.message, explain(wrong)
