"""Precision by measurement: the classes an output's error against the float64 "gold" names, and the policy.

Source patterns cannot tell a precision downgrade from an honest idiom: Triton's own tutorial GEMM calls
`tl.dot(a, b)` (TF32 on float32 operands), 3xTF32 uses TF32 instructions to reach float32 accuracy, and a
float16 cast can be exact for the data at hand.  So the worker runs the reference once more in float64 (its
parameters and floating inputs upcast), the *gold*, and every output comparison carries two numbers on the same
sample of positions: the candidate's relative-norm error against gold, and the reference's own error at its
dtype (computed with TF32 off).  The error names a class:

| class  | error floor | what reaches it (measured on random data)                                  |
|--------|-------------|----------------------------------------------------------------------------|
| `ieee` | 1e-5        | float32 arithmetic in any order (1e-7 to 1e-6), split-K atomics, 3xTF32     |
| `tf32` | 1e-3 (*)    | TF32 or float16 operands with float32 accumulation (3e-4 to 5e-4)           |
| `half` | 2e-2        | bfloat16 operands or outputs (2e-3 to 4e-3), bfloat16 intermediates (1e-2)  |

and an error above the `half` bound is `below-half`.  (*) 2.5e-4 (`TF32_MEASURED_FLOOR`) where both TF32 runs
of the reference below were measured: a problem whose outputs average the products' rounding away (a row sum of
a GEMM's activations) costs TF32 little, and a dropped input feature must not hide in the gap.

A class's bound is its floor or `SLACK` times what the reference itself reaches in that class, whichever is
larger: the reference is also run with TF32 on (torch's
round-to-nearest, and with its matmul operands truncated as Triton's default `tl.dot` does) and under bfloat16
autocast, because what a class costs depends on the problem.  An H100 measured Triton's TF32 GEMM at 7.7e-4, a
chain of three at 1.5e-3 and an attention of four at 4.1e-3: truncation shrinks every product a little, so its
error adds up along a chain, where torch's TF32 (2.9e-4 for one GEMM, 5.1e-4 for the attention) does not.  On
a long chain truncated TF32 is measurably as inexact as bfloat16, and the class says what was measured.  On a
float16 problem (whose reference is itself at ~5e-4) a candidate as exact as the reference is `ieee`: "as
exact as the problem's dtype allows".  On a problem TF32 does not touch (no matmul, convolution or attention:
both TF32 runs of the reference come out exactly as its exact run, `tf32_in_play`) the `tf32` class allows only
`NO_TF32_FLOOR` (the GPU's approximate exp and tanh): a kernel that stores or computes an elementwise or
reduction problem in float16 is a precision downgrade, not TF32.

The output's own width is measured too (`core/measure/compare.py`): a float32 output whose values nearly all
fit float16's 11 significant bits (their low 13 mantissa bits zero) where the reference's do not was stored
at 16 bits or fewer (float16, bfloat16, float8), and reaches `half` at best whatever its error: the `tf32`
class is float32 outputs from products of 11-bit operands, never 11-bit outputs.

The evaluation's `precision` policy names the lowest class that passes: `ieee`, `tf32` (the default: what
KernelBench's harness and KernelGYM accept for float32 problems) or `half`.  The reference is timed in the
same class: with TF32 matmuls and convolutions on under `tf32` and `half`, off under `ieee`.
"""

from __future__ import annotations

from collections.abc import Iterable

CLASSES: tuple[str, ...] = ("ieee", "tf32", "half")
"""From most to least exact; a policy passes its own class and every class before it."""

BELOW_HALF = "below-half"

FLOORS: dict[str, float] = {"ieee": 1e-5, "tf32": 1e-3, "half": 2e-2}
"""Relative-norm error against gold that each class allows, whatever the reference's own error."""

SLACK = 4.0
"""A class also allows this multiple of the reference's own error: no candidate is asked to be more exact
than the reference itself is at the problem's dtype."""

GOLD_SAMPLE = 1 << 16
"""Positions per output at which gold is kept and errors are measured (all of them in a smaller output)."""


NO_TF32_FLOOR = 1e-4
"""What the `tf32` class allows on a problem TF32 does not touch (`tf32_in_play`): more than `ieee`'s floor, for the
GPU's approximate transcendental functions (Triton's `tl.exp` is `ex2.approx`): on an H200 honest float32 kernels
of the field corpus measured 1.9e-5 (FlagGems' elu), 2.6e-5 (attorch's selu), 3.2e-5 (FlagGems' celu) and 5e-5
(attorch's tanh) against gold, and were refused at `ieee`'s 1e-5; less than a float16 computation's 2e-4 to 6e-4."""

NO_TF32_SLACK = 32.0
"""...and this multiple of the reference's own error there: a float32 reduction summed in another order than the
reference's differs from gold by up to ~20x what the reference does where the sum cancels (FlagGems' vdot, a
two-stage blocked sum: 6e-4 against cuBLAS's 3.1e-5 on an H200), while a float16 computation is ~2^13 times
further off than float32."""

TF32_MEASURED_FLOOR = 2.5e-4
"""What the `tf32` class allows at least where TF32 is in play and both TF32 baselines of the reference were
measured (`tf32_in_play`), in place of the class's 1e-3 floor: there the baselines say what TF32 costs on this
problem, and on some it costs little.  A row sum of 1,537 sigmoids of a 2,048-deep GEMM differs from gold by
3.2e-5 with Triton's TF32 (an H200, the honest `gemm_sigmoid_rowsum_atomic`): the row sum averages the products'
rounding away.  Its mutant that drops the last input feature from every product (`k < K - 1`) is 3.2e-4 off at
the problem's shape and 4.9e-4 at a 769-deep shape set, inside the 1e-3 floor (a survivor of the mutation
benchmark, `benchmarks/mutation.py`; `incorrect` on four H200s under this floor).  The floor keeps 2.5x
`NO_TF32_FLOOR` for the GPU's approximate exp and tanh beside the products (a GEMM with a GELU epilogue); honest
kernels where TF32 costs more (one GEMM: 7.7e-4 truncated) pass on the baselines' multiples, as before."""

TRUNCATED_SLACK = 2.0
"""What the `tf32` class allows beyond the reference's error with its matmul operands truncated to TF32, the way
Triton's default `tl.dot` computes: a looser baseline than torch's own TF32, so a smaller multiple of it."""


def bound(
    cls: str,
    ref_err: float | None,
    ref_tf32_err: float | None = None,
    ref_half_err: float | None = None,
    ref_tf32_trunc_err: float | None = None,
    *,
    narrow: bool = False,
) -> float:
    """The largest error against gold that `cls` allows: its floor, or a multiple of what the reference itself
    reaches in that class or a more exact one (its own error at its dtype; with TF32 on, torch's or Triton's
    truncating kind; under bfloat16 autocast), whichever is larger.  Where both TF32 baselines were measured the
    `tf32` class's floor is the lower `TF32_MEASURED_FLOOR`: the baselines, not a guess, say what TF32 costs.

    `narrow`: the reference's output is 16 bits wide (float16, bfloat16).  Its own error is then the output's
    rounding, not a float32 sum's order, so `NO_TF32_SLACK` (for another summation order) does not apply: on a
    float16 GEMM (the reference at 3.6e-4) it let an output rounded to bfloat16 (3.2e-3) pass as `tf32`."""
    reorder = SLACK if narrow else NO_TF32_SLACK
    allowed = [FLOORS[cls], SLACK * (ref_err or 0.0)]
    if cls == "tf32" and not tf32_in_play(ref_err, ref_tf32_err, ref_tf32_trunc_err):
        allowed = [NO_TF32_FLOOR, reorder * (ref_err or 0.0)]
    elif cls == "tf32" and ref_tf32_err is not None and ref_tf32_trunc_err is not None:
        # what TF32 costs here is measured below; another summation order than the reference's is allowed as where
        # TF32 is not in play
        allowed = [TF32_MEASURED_FLOOR, reorder * (ref_err or 0.0)]
    if cls in ("tf32", "half"):
        allowed += [SLACK * (ref_tf32_err or 0.0), TRUNCATED_SLACK * (ref_tf32_trunc_err or 0.0)]
    if cls == "half":
        allowed.append(SLACK * (ref_half_err or 0.0))
    return max(allowed)


def tf32_in_play(ref_err: float | None, ref_tf32_err: float | None, ref_tf32_trunc_err: float | None) -> bool:
    """Whether TF32 touches the problem at all: False only where both TF32 runs of the reference (torch's, and
    with its matmul and attention operands truncated) were measured and came out *exactly* as the exact run did,
    i.e. no product of the reference multiplies in TF32.  There the `tf32` class allows only `NO_TF32_FLOOR`
    (approximate exp and tanh): an elementwise or reduction kernel that stores or computes in float16 (2e-4 to
    1e-3) is no TF32 kernel.  A baseline not measured, or one that moved (a GEMM, a convolution, or an op torch
    runs nondeterministically), keeps the class's floor."""
    if ref_tf32_err is None or ref_tf32_trunc_err is None:
        return True
    return not (ref_tf32_err == ref_err and ref_tf32_trunc_err == ref_err)


def classify(
    err: float | None,
    ref_err: float | None,
    ref_tf32_err: float | None = None,
    ref_half_err: float | None = None,
    ref_tf32_trunc_err: float | None = None,
    *,
    narrow: bool = False,
) -> str | None:
    """The most exact class an error reaches (None when it was not measured); `narrow` as in `bound`."""
    if err is None:
        return None
    for cls in CLASSES:
        if err <= bound(cls, ref_err, ref_tf32_err, ref_half_err, ref_tf32_trunc_err, narrow=narrow):
            return cls
    return BELOW_HALF


SHORT_SHARE = 0.5
"""A float32 output at least this share of whose values fit float16's significand ..."""
REFERENCE_SHORT_SHARE = 0.1
"""... where at most this share of the reference's do, was stored at 16 bits or fewer (`stored_short`)."""


NARROW_DTYPES = ("torch.float16", "torch.bfloat16", "float16", "bfloat16")
"""Output dtypes 16 bits wide or fewer, by the name `OutputComparison.ref_dtype` records (`bound`'s `narrow`)."""


def narrow_dtype(dtype: str | None) -> bool:
    """Whether an output of this dtype (as `OutputComparison` names it) is 16 bits wide or fewer."""
    return dtype is not None and (dtype in NARROW_DTYPES or "float8" in dtype)


def stored_short(short: float | None, ref_short: float | None) -> bool:
    """Whether a float32 output was stored at 16 bits or fewer: most of its values fit float16's 11 significant
    bits (an honest float32 value does once in 8192) where the reference's do not (a copy of inputs that are
    short themselves is as short as the reference)."""
    if short is None or ref_short is None:
        return False
    return short >= SHORT_SHARE and ref_short <= REFERENCE_SHORT_SHARE


def passing(policy: str) -> tuple[str, ...]:
    """The classes a policy accepts: its own and every more exact one."""
    return CLASSES[: CLASSES.index(policy) + 1]


def worst(classes: Iterable[str | None]) -> str | None:
    """The least exact of several classes (None ignored; None when none was measured)."""
    order = {c: i for i, c in enumerate((*CLASSES, BELOW_HALF))}
    measured = [c for c in classes if c is not None]
    return max(measured, key=order.__getitem__) if measured else None


def tf32_enabled(policy: str) -> bool:
    """Whether torch's float32 matmuls and convolutions may use TF32 under this policy (the reference is
    timed so; a candidate's own torch calls run as torch leaves them: `task_runner.configure_precision`)."""
    return policy != "ieee"
