"""The keeper's one-pass comparison (`measure/fused_stats.py`) reports what the torch passes report.

Run through Triton's interpreter on the CPU (a subprocess: the interpreter is chosen when the kernel is defined):
counts, NaN and infinity handling, the float32 significand widths, a reference parked elsewhere and brought over a
chunk at a time, every floating dtype.  Counts and the maximum must be equal; the float64 sums may differ only in
their last bits (another order of additions).  On a GPU the same comparison is `tests/test_gpu.py`'s
`test_the_fused_comparison_matches_torchs_on_the_gpu`."""

from __future__ import annotations

import pytest
from interpreted import run_interpreted

SCRIPT = """
import json
import math

import torch

from tritongym.core.measure import compare, fused_stats
from tritongym.core.measure.compare import compare_output
from tritongym.core.worker_task import Tolerance

g = torch.Generator().manual_seed(0)
tol = Tolerance(atol=1e-3, rtol=1e-2, rel_norm=0.0)
found = []
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
    ref = torch.randn(5000, generator=g).to(dtype)
    out = (ref.double() + 1e-2 * torch.randn(5000, generator=g, dtype=torch.float64)).to(dtype)
    out[:7], ref[3:9] = float("nan"), float("nan")        # NaN on one side, both, the other
    out[20], ref[20] = float("inf"), float("inf")         # the same infinity: a match
    out[21], ref[21] = float("-inf"), float("inf")        # opposite infinities: a mismatch
    out[30:40], ref[35:45] = 0.0, 0.0
    if dtype == torch.float32:                            # 200 values a float16 could hold: short significands
        out[100:300] = out[100:300].half().float()
    for chunk in (1 << 25, 777):  # whole, and as a parked reference comes over
        torch_stats = compare._float_stats(out, ref, tol)
        fused = fused_stats.float_stats(out, ref, tol.atol, tol.rtol, chunk)
        found.append({"dtype": str(dtype), "chunk": chunk, "torch": torch_stats, "fused": fused})
    table = {str(dtype): tol}
    compare.fused_stats_usable = lambda out, ref: True  # on a GPU only, in use; the interpreter runs it here
    plain = compare_output(0, out, ref, table)
    one_pass = compare_output(0, out, ref, table, fused=True)
    found.append({"dtype": str(dtype), "plain": plain.model_dump(), "one_pass": one_pass.model_dump()})
print(json.dumps(found))
"""

EXACT = ("mismatched", "finite", "nan_differs", "max_abs", "out_nonzero", "out_short", "ref_nonzero", "ref_short")


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    return run_interpreted(SCRIPT, tmp_path_factory.mktemp("fused"), "fused_stats_check.py")


def test_the_one_pass_sums_are_torchs(compared):
    sums = [c for c in compared if "torch" in c]
    assert len(sums) == 8
    for case in sums:
        torch_stats = case["torch"]
        assert torch_stats["mismatched"] >= 10 and torch_stats["nan_differs"] >= 5, case  # the data has them
        fused = case["fused"]
        for name in EXACT:
            assert fused[name] == torch_stats[name], (case["dtype"], case["chunk"], name)
        for name in ("sum_abs", "sum_sq", "ref_sq"):
            assert fused[name] == pytest.approx(torch_stats[name], rel=1e-12), (case["dtype"], case["chunk"], name)
    widths = [c["torch"] for c in sums if c["dtype"] == "torch.float32"]
    assert all(w["out_short"] >= 200 and w["out_nonzero"] > w["out_short"] for w in widths)


def test_compare_output_reports_the_same_with_the_fused_pass(compared):
    outputs = [c for c in compared if "plain" in c]
    assert len(outputs) == 4
    for case in outputs:
        plain, one_pass = case["plain"], case["one_pass"]
        for name in ("mismatched", "max_abs_err", "note", "short_significands", "ref_short_significands"):
            assert one_pass[name] == plain[name], (case["dtype"], name)
        for name in ("mean_abs_err", "rel_norm_err"):
            assert one_pass[name] == pytest.approx(plain[name], rel=1e-12), (case["dtype"], name)
