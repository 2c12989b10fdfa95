"""The field's convention for timing a reference, and whether it differs from the reference's own class.

tritongym times the reference in the precision class its policy allows (`task_runner.configure_precision`): under
the default `tf32` policy torch's float32 matmuls run in TF32, so an honest TF32 kernel is never timed against an
exact float32 baseline.  The field times it otherwise.  KernelBench's published eager baselines
(`results/timing/*/baseline_time_torch.json`, the H100 ones included) and the papers that report Fast@p against
them (Dr. Kernel, KernelGYM) time the reference as torch leaves it:

* float32 matmuls exact: `torch.backends.cuda.matmul.allow_tf32 = False`, matmul precision `highest` (torch's
  defaults since 1.12; KernelBench's harness never sets them);
* cuDNN's float32 convolutions in TF32: `torch.backends.cudnn.allow_tf32 = True` (torch's default, which the
  harness does not change either).

That is `FIELD_SWITCHES`.  On a fp32 GEMM our reference then runs about 6x faster than KernelBench's published H100
time, while on its convolutions (TF32 in both) the two agree: a speedup against our reference and one against the
field's cannot be set side by side.  So the keeper times the reference a second time under the field's switches
(`Keeper.time_reference`), and a verdict carries both speedups (`EvaluationResult.speedup` and `speedup_field`).

Only where the switches can change what runs: under the `tf32` and `half` policies they differ from the field's in
the matmul switch alone, under `ieee` in cuDNN's alone (`differing_switches`), and a switch matters only to a
float32 op of its family.  Which ops one forward runs, at which dtypes, is measured (`sensitive_ops`: one forward
traced at the dispatcher), not read from the source: an fp16 GEMM, a softmax or a reduction pays for no second
timing.  Ops that run GEMMs inside one dispatcher call (fused attention, `cdist`, cuDNN's RNNs, the linear algebra
of `linalg`) are counted as their family's, whatever they do inside: a second timing that measures the same
kernels costs time, never a wrong number.  On the CPU torch has no TF32: the two conventions are one there.
"""

from __future__ import annotations

import contextlib
from typing import Any

FIELD_SWITCHES: dict[str, bool] = {"matmul": False, "cudnn": True}
"""torch's TF32 switches as the field times the reference (torch's defaults): float32 matmuls exact
(`torch.backends.cuda.matmul.allow_tf32`, matmul precision `highest`), cuDNN's convolutions in TF32
(`torch.backends.cudnn.allow_tf32`)."""

FIELD_CONVENTION = "fp32 eager, torch's defaults: matmuls TF32 off (precision 'highest'), cuDNN convolutions TF32 on"
"""The field's convention in words, as reports print it."""

MATMUL_OPS = frozenset(
    {
        # the GEMMs cuBLAS runs for float32 under `torch.backends.cuda.matmul.allow_tf32`
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "addbmm",
        "matmul",
        "linear",
        "dot",
        "vdot",
        "mv",
        "addmv",
        "_addmm_activation",
        "einsum",
        "tensordot",
        # one dispatcher call with GEMMs inside (the trace cannot see them): counted, see the module's docstring
        "_cdist_forward",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_cudnn_attention",
        "_efficient_attention_forward",
        "_native_multi_head_attention",
        "_transformer_encoder_layer_fwd",
        "triangular_solve",
        "linalg_solve_triangular",
        "linalg_solve",
        "linalg_inv_ex",
        "linalg_lstsq",
        "linalg_qr",
        "linalg_cholesky_ex",
    }
)
"""ATen ops whose float32 work the matmul switch can move to TF32."""

CUDNN_OPS = frozenset(
    {
        "convolution",
        "_convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "cudnn_convolution",
        "cudnn_convolution_transpose",
        "_cudnn_rnn",
        "lstm",
        "gru",
        "rnn_tanh",
        "rnn_relu",
    }
)
"""ATen ops whose float32 work cuDNN's switch can move to TF32 (its convolutions and RNNs)."""

FAMILIES = {"matmul": MATMUL_OPS, "cudnn": CUDNN_OPS}


def own_switches(policy: str) -> dict[str, bool]:
    """torch's TF32 switches as the reference is timed in its own class (`task_runner.configure_precision`)."""
    from tritongym.core.precision import tf32_enabled

    allow = tf32_enabled(policy)
    return {"matmul": allow, "cudnn": allow}


def differing_switches(policy: str) -> list[str]:
    """The switches whose setting in the policy's own class is not the field's: `["matmul"]` under `tf32` and
    `half`, `["cudnn"]` under `ieee`."""
    own = own_switches(policy)
    return [name for name, value in FIELD_SWITCHES.items() if own[name] != value]


@contextlib.contextmanager
def field_switches():
    """torch's TF32 switches set to the field's (`FIELD_SWITCHES`) for the duration, then put back as they were."""
    import torch

    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    precision = torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = FIELD_SWITCHES["matmul"]
    torch.backends.cudnn.allow_tf32 = FIELD_SWITCHES["cudnn"]
    torch.set_float32_matmul_precision("highest" if not FIELD_SWITCHES["matmul"] else "high")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
        torch.set_float32_matmul_precision(precision)


def _single_precision(values: Any) -> bool:
    import torch

    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            if value.dtype in (torch.float32, torch.complex64):
                return True
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return False


def sensitive_ops(forward, inputs: list, switches: list[str]) -> list[str]:
    """The ATen ops one call of `forward(*inputs)` runs on float32 (or complex64) operands in the families of
    `switches` (`FAMILIES`), sorted: empty when no switch that differs can change what runs.  Traced at the
    dispatcher like `op_trace.traced_call`, under `no_grad`; the call's outputs are dropped."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    watched = frozenset().union(*(FAMILIES[s] for s in switches)) if switches else frozenset()
    if not watched:
        return []
    found: set[str] = set()

    class Watch(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # see op_trace.py: the dynamo guard's import would change torch.manual_seed

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if name in watched and _single_precision(list(args) + list(kwargs.values())):
                found.add(name)
            return func(*args, **kwargs)

    with torch.no_grad(), Watch():
        forward(*inputs)
    return sorted(found)
