"""A candidate's `torch.library.triton_op` is seen through by the worker's dispatch modes (`worker/custom_ops.py`):
its body's torch work is traced and its allocations poisoned as anywhere else in the forward."""

from __future__ import annotations

import math

import torch
from torch.library import triton_op

from tritongym.core.worker.custom_ops import python_body
from tritongym.core.worker.op_trace import traced_call
from tritongym.core.worker.scrub import poisoned_allocations


@triton_op("tritongym_test::matmul_plus_one", mutates_args={})
def matmul_plus_one(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b) + 1


@triton_op("tritongym_test::fresh_buffer", mutates_args={})
def fresh_buffer(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def test_only_a_candidates_operator_has_a_body_to_run():
    assert python_body(torch.ops.aten.mm.default) is None
    assert python_body(torch.ops.tritongym_test.matmul_plus_one.default) is not None


def test_the_op_trace_counts_the_torch_work_inside_a_triton_op():
    """Opaque, the operator hid its GEMM: the lazy hack wrapped in a `triton_op` was weighed as no torch work."""
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    for call in (matmul_plus_one, torch.ops.tritongym_test.matmul_plus_one):  # the function, or the registry's op
        out, ops, work = traced_call(call, a, b)
        assert torch.allclose(out, a @ b + 1)
        contraction = {name: w for name, w in work.items() if name in ("mm", "matmul")}
        assert contraction and sum(contraction.values()) == 16 * 8 * 32, (ops, work)
        assert "matmul_plus_one" not in ops  # the body's ops are counted, not the wrapper


def test_allocations_inside_a_triton_op_are_poisoned():
    """An honest operator's fresh output buffer holds no stale answer while the `precomputed` probe watches."""
    x = torch.randn(64)
    with poisoned_allocations():
        out = fresh_buffer(x)
    assert all(math.isnan(v) for v in out.tolist())


@torch.library.custom_op("tritongym_test::twice_on_cpu", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_kernel("cpu")
def _(x):
    return torch.matmul(x.unsqueeze(0), torch.eye(x.numel()) * 2).squeeze(0)


def test_the_kernel_registered_for_the_device_is_the_one_traced():
    """What the timed calls run (no mode: the dispatcher picks the device's kernel) is what is judged and weighed."""
    x = torch.randn(8)
    out, ops, work = traced_call(twice, x)
    assert torch.allclose(out, x * 2)
    assert any(name in ops for name in ("mm", "matmul")), ops  # the CPU kernel's GEMM, not the body's multiply
