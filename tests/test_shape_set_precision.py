"""The precision class is measured at the shape sets too, not only at the problem's own shape.

The mutation benchmark on an H200 (`benchmarks/results/mutation-triton-cuda-h200.json`) found one survivor: the
suite's log-softmax with its masked lanes loaded as 0.0 instead of -inf.  At the problem's 2048 columns no lane is
masked and the kernel is exact; at the 1537-column shape set the padding's exp() is summed in and the answer is
~1e-3 off (0.0129 at most), inside the 1e-2 tolerance, and the float64 gold was kept for the main trials only.
Here the same fault on the CPU: exact at 1024 columns, off by up to ~1e-2 at 769 (255 lanes of padding)."""

from __future__ import annotations

import textwrap

from tests.conftest import ON_CPU_AND_GPU, judged_in_batch
from tests.test_hostile import explain
from tritongym.core.models import Status
from tritongym.core.problems import load_problem

PROBLEM = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    ROWS = 4
    COLS = 1024
    SIZES = {"cpu": {"ROWS": 4, "COLS": 1024}, "gpu": {"ROWS": 4, "COLS": 1024}}
    EXTRA_SIZES = {"cpu": [{"ROWS": 3, "COLS": 769}], "gpu": [{"ROWS": 3, "COLS": 769}]}


    class Model(nn.Module):
        def forward(self, x):
            return torch.log_softmax(x, dim=-1)


    def get_inputs():
        return [torch.randn(ROWS, COLS) * 3.0]


    def get_init_inputs():
        return []
    """
)


@ON_CPU_AND_GPU
def test_a_log_softmax_that_sums_its_padding_is_refused_at_the_shape_set_where_it_is_off(backend, tmp_path, registry):
    """On the GPU the keeper keeps the shape set's gold, and Triton's approximate exp is within the class's floor."""
    path = tmp_path / "log_softmax_pow2.py"
    path.write_text(PROBLEM)
    problem = load_problem(str(path))
    honest = load_problem("log_softmax").solution
    padded = honest.replace('mask=mask, other=float("-inf"))', "mask=mask, other=0.0)")
    assert padded != honest
    right, wrong = judged_in_batch(backend, registry, [(honest, problem), (padded, problem)])
    assert right.status == Status.ok, explain(right)
    assert wrong.status == Status.incorrect, explain(wrong)
    said = " ".join(c.reason for c in wrong.checks if c.name == "precision" and not c.passed)
    assert "at shape set ROWS=3, COLS=769" in said, explain(wrong)
    assert "while at the problem's own shape it reached ieee" in said, said  # a fault there, not a downcast
    # a matter of generality, as wrong outputs at a shape set are: the result says so, and the config decides it
    assert wrong.generality == "problem_shapes_only", explain(wrong)
    assert "right at the problem's own shapes (ROWS=4, COLS=1024)" in wrong.message, wrong.message
    assert "generality is required" in wrong.message, wrong.message
    assert right.generality == "general", explain(right)
    (lenient,) = judged_in_batch(backend, registry, [(padded, problem)], require_generality=False)
    assert lenient.status == Status.ok, explain(lenient)
    assert lenient.generality == "problem_shapes_only", explain(lenient)
    assert "`require_generality` is off" in lenient.message, lenient.message
