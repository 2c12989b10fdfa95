"""An output that is one of the forward's own inputs (a residual passed on unchanged: `return x + y, x`, as the
reference returns it) is judged as what the forward returned, not as what the probes later refilled that input
with: the CPU worker's last trial kept such an output by reference, the probes refilled its inputs in place, and the
kernel was refused as `incorrect` with side work "still being written after forward returned"."""

import textwrap

from tests.conftest import ON_CPU_AND_GPU, judged_in_batch
from tests.test_hostile import explain
from tritongym.core.models import Status
from tritongym.core.problems import load_problem

RESIDUAL_PROBLEM = """
import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def forward(self, x, y):
        return x + y, x  # the residual passed on unchanged


def get_inputs():
    return [torch.randn(4, N), torch.randn(4, N)]


def get_init_inputs():
    return []
"""

ADD_PASSING_X_ON = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x, y):
            out = torch.empty_like(x)
            n = x.numel()
            add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
            return out, x
    """
)


@ON_CPU_AND_GPU
def test_an_input_returned_as_an_output_is_judged_as_returned(backend, tmp_path, registry):
    """The honest kernel is ok; one that adds into `x` in place and returns it twice changed its input and
    returns the sum where the reference returns `x` as it was: refused."""
    path = tmp_path / "residual.py"
    path.write_text(RESIDUAL_PROBLEM)
    problem = load_problem(str(path))
    in_place = ADD_PASSING_X_ON.replace(
        "add_kernel[(triton.cdiv(n, 1024),)](x, y, out,", "add_kernel[(triton.cdiv(n, 1024),)](x, y, x,"
    )
    in_place = in_place.replace("return out, x", "return x, x")
    assert in_place != ADD_PASSING_X_ON
    honest, summed = judged_in_batch(backend, registry, [(ADD_PASSING_X_ON, problem), (in_place, problem)])
    assert honest.status == Status.ok, explain(honest)
    assert not any("side work" in c.reason or "still being written" in c.reason for c in honest.checks)
    assert summed.status != Status.ok, explain(summed)
