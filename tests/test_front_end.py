"""Triton's front end on the CPU (`worker/front_end.py`): a kernel no GPU compiles is refused under the interpreter.

The end-to-end case is `tests/hacks` (`plain_python_helper_gelu[all]`: `compile_error` on triton-cpu); these check
the front end itself on kernels defined here, real Triton, no GPU."""

from __future__ import annotations

import math

import pytest
import torch
import triton
import triton.language as tl

from tritongym.core.worker.front_end import CompilationError, FrontEnd


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def gelu(x):  # a plain Python helper: the interpreter calls it, the compiler refuses it
    return 0.5 * x * (1.0 + tl.math.erf(x * (1.0 / math.sqrt(2.0))))


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, gelu(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, HAS_SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if HAS_SCALE:
        x = x * scale
    tl.store(out_ptr + offs, x, mask=mask)


@pytest.fixture
def front_end():
    found = FrontEnd()
    if not found.available:
        pytest.skip("this Triton has no front end reachable without a GPU (ASTSource, the CUDA backend)")
    return found


def test_a_kernel_that_compiles_passes_and_is_checked_once_per_types_and_constexprs(front_end):
    x, out = torch.randn(100), torch.empty(100)
    front_end.check(relu_kernel, (x, out, 100), {"BLOCK": 128})
    front_end.check(relu_kernel, (x, out, 57), {"BLOCK": 128})  # another size, the same types: not built again
    assert len(front_end._seen) == 1
    front_end.check(relu_kernel, (x, out, 100), {"BLOCK": 64, "num_warps": 4})  # a new constexpr; an option ignored
    front_end.check(relu_kernel, (x.half(), out.half(), 100), {"BLOCK": 64})  # float16 pointers
    assert len(front_end._seen) == 3 and not any(front_end._seen.values())


def test_a_kernel_calling_a_plain_python_helper_is_refused_in_tritons_words(front_end):
    x, out = torch.randn(100), torch.empty(100)
    with pytest.raises(CompilationError, match="refuses kernel 'gelu_kernel'.*Cannot access global variable gelu"):
        front_end.check(gelu_kernel, (x, out, 100), {"BLOCK": 128})
    with pytest.raises(CompilationError):  # remembered: refused again without building the IR again
        front_end.check(gelu_kernel, (x, out, 100), {"BLOCK": 128})
    assert len(front_end._seen) == 1


def test_scalars_and_constexpr_branches_are_typed_as_triton_types_them(front_end):
    x, out = torch.randn(100), torch.empty(100)
    front_end.check(scale_kernel, (x, out, 100, 2.5), {"HAS_SCALE": True, "BLOCK": 128})
    front_end.check(scale_kernel, (x, out, 100, None), {"HAS_SCALE": False, "BLOCK": 128})  # None: a constexpr
    assert not any(front_end._seen.values())
