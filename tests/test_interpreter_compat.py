"""Production Triton idioms that Triton's interpreter did not run, judged on triton-cpu as the GPU judges them
(`core/worker/interpreter_libdevice.py`, `interpreter_float_args.py`, `interpreter_aliases.py`,
`interpreter_dtype_value.py`, `interpreter_comparisons.py`, and `not` in `interpreter_bool_ops.py`): libdevice's
math, a float argument's `.to`, a builtin under a module alias, a constexpr dtype's `.value`, a scalar comparison
splat into a mask, `not` on a tensor.  Each was a `runtime_error`
(or, for `not`, `incorrect`) on triton-cpu for honest kernels of Liger-Kernel, FlagGems and unsloth."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch

from tests.conftest import judged_in_batch
from tests.test_hostile import explain
from tritongym.core.models import Status
from tritongym.core.problems import load_problem
from tritongym.core.worker.interpreter_libdevice import resolve


def test_libdevice_symbols_compute_what_their_names_say():
    x = np.array([-2.5, -1.5, -0.4, 0.5, 1.5, 2.7], dtype=np.float32)
    fn, _ = resolve("__nv_tanhf")
    assert np.allclose(fn(x), np.tanh(x))
    fn, _ = resolve("__nv_roundf")  # half away from zero, as CUDA's round
    assert fn(x).tolist() == [-3.0, -2.0, -0.0, 1.0, 2.0, 3.0]
    fn, _ = resolve("__nv_rintf")  # half to even
    assert fn(x).tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 3.0]
    fn, mode = resolve("__nv_float2int_rz")
    assert mode == "rz"
    fn, _ = resolve("__nv_fast_expf")
    assert np.allclose(fn(x), np.exp(x))
    fn, _ = resolve("__nv_fdiv_rn")
    assert np.allclose(fn(x, np.float32(2)), x / 2)
    fn, _ = resolve("__nv_erfinvf")
    assert np.allclose(fn(np.array([0.5], dtype=np.float32)), torch.special.erfinv(torch.tensor([0.5])).numpy())
    for flag, want in (("__nv_isnanf", np.isnan), ("__nv_isinfd", np.isinf), ("__nv_finitef", np.isfinite)):
        fn, _ = resolve(flag)
        y = np.array([1.0, np.nan, np.inf], dtype=np.float32)
        assert fn(y).tolist() == want(y).tolist()
    with pytest.raises(KeyError):
        resolve("__nv_not_a_function")


PROBLEMS = {
    "rms_rows": """
import torch
import torch.nn as nn

ROWS = 6
COLS = 40


class Model(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
""",
    "gelu_tanh_rows": """
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 6
COLS = 40


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh"), torch.logical_not(x > 0), x.amax(dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
""",
    "gelu_rows": """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(6, 40)]


def get_init_inputs():
    return []
""",
    "double_batched": """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(3, 5, 40)]


def get_init_inputs():
    return []
""",
}

# FlagGems's kron masks its loads with a scalar comparison splat over a block (`... & (batch_id < batch_size)`),
# which the interpreter typed as its int64 operand: "mask has unsupported dtype"
DOUBLE_BATCHED = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def double_kernel(x_ptr, y_ptr, batch_size: tl.int64, M: tl.int64, N: tl.int64, BM: tl.constexpr,
                      BN: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        batch_id = pid // tl.cdiv(M, BM)
        offs_m = (pid % tl.cdiv(M, BM)) * BM + tl.arange(0, BM)
        offs_n = tl.arange(0, BN)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N) & (batch_id < batch_size)
        idx = batch_id * M * N + offs_m[:, None] * N + offs_n[None, :]
        tl.store(y_ptr + idx, tl.load(x_ptr + idx, mask=mask) * 2, mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.zeros_like(x)
            b, m, n = x.shape
            grid = (b * triton.cdiv(m, 2),)
            double_kernel[grid](x, y, b, m, n, BM=2, BN=triton.next_power_of_2(n))
            return y
    """
)

# FlagGems's exact GELU: erf through libdevice, which the interpreter computes with torch.special (not the candidate's
# torch work: the op tracer must not see it)
GELU_ERF = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
        tl.store(y_ptr + offs, 0.5 * x * (1 + tl.extra.cuda.libdevice.erf(x * 0.7071067811865476)), mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            y = torch.empty_like(x)
            gelu_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
            return y
    """
)

# Liger's RMSNorm idiom: rsqrt from the backend-neutral libdevice, and `eps.to(...)` on a float argument
RMS = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl
    from triton.language.extra.libdevice import rsqrt


    @triton.jit
    def rms_kernel(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        mean_square = tl.sum(x * x, axis=0) / n_cols
        tl.store(y_ptr + row * n_cols + cols, x * rsqrt(mean_square + eps.to(tl.float32)), mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            rms_kernel[(x.shape[0],)](x, y, x.shape[1], 1e-6, BLOCK=triton.next_power_of_2(x.shape[1]))
            return y
    """
)

# unsloth's alias (`triton_cast = tl.cast`), tanh through `tl.extra.cuda.libdevice`, `not` on a tensor, and
# FlagGems's dtype helper reading a constexpr dtype's `.value`
GELU_NOT_MAX = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl

    triton_cast = tl.cast


    @triton.jit
    def lowest(dtype: tl.constexpr):
        if dtype.value == tl.float32:
            return -3.4028234663852886e38
        return float("-inf")


    @triton.jit
    def rows_kernel(x_ptr, gelu_ptr, not_ptr, max_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = triton_cast(tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0), tl.float32)
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        gelu = 0.5 * x * (1.0 + tl.extra.cuda.libdevice.tanh(inner))
        tl.store(gelu_ptr + row * n_cols + cols, gelu, mask=mask)
        tl.store(not_ptr + row * n_cols + cols, not (x > 0), mask=mask)
        masked = tl.where(mask, x, lowest(tl.float32))
        tl.store(max_ptr + row, tl.max(masked, axis=0))


    class ModelNew(torch.nn.Module):
        def forward(self, x):
            x = x.contiguous()
            gelu, negated = torch.empty_like(x), torch.empty(x.shape, dtype=torch.bool, device=x.device)
            top = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
            block = triton.next_power_of_2(x.shape[1])
            rows_kernel[(x.shape[0],)](x, gelu, negated, top, x.shape[1], BLOCK=block)
            return gelu, negated, top
    """
)


def test_production_idioms_run_on_the_interpreter_and_a_wrong_one_is_still_refused(tmp_path, registry):
    problems = {}
    for name, source in PROBLEMS.items():
        (tmp_path / f"{name}.py").write_text(source)
        problems[name] = load_problem(str(tmp_path / f"{name}.py"))
    no_eps = RMS.replace("mean_square + eps.to(tl.float32)", "mean_square + eps.to(tl.float32) + 1.0")
    pairs = [(RMS, problems["rms_rows"]), (GELU_NOT_MAX, problems["gelu_tanh_rows"]), (no_eps, problems["rms_rows"])]
    pairs.append((GELU_ERF, problems["gelu_rows"]))
    pairs.append((DOUBLE_BATCHED, problems["double_batched"]))
    skips_last = DOUBLE_BATCHED.replace("(batch_id < batch_size)", "(batch_id < batch_size - 1)")
    pairs.append((skips_last, problems["double_batched"]))
    rms, gelu, wrong, erf, batched, short = judged_in_batch("triton-cpu", registry, pairs)
    assert batched.status == Status.ok, explain(batched)
    assert short.status == Status.incorrect, explain(short)  # its last batch never written
    assert rms.status == Status.ok, explain(rms)
    assert gelu.status == Status.ok, explain(gelu)
    assert wrong.status == Status.incorrect, explain(wrong)
    assert erf.status == Status.ok, explain(erf)
    weighed = next(c for c in erf.checks if c.name == "torch_compute")
    assert weighed.reason == "no torch compute", weighed.reason
