"""The reference's float64 "gold" (core/precision.py), kept on a sample of positions, and exact reference runs.

Trusted code only, run before the candidate exists on the GPU and after its child exited on the CPU.  The gold
is the reference module deep-copied to float64 (its floating parameters and buffers) and called on the same
inputs upcast to float64; per output only `GOLD_SAMPLE` secret positions are kept, with the reference's own
errors there: exact at its dtype (TF32 off), with TF32 on (torch's, and Triton's truncating kind), and under
bfloat16 autocast, which say how much
each class of arithmetic costs *this* problem (a chain of GEMMs or a softmax after one amplifies an operand
rounding that a single GEMM does not), so the class bounds follow the problem (core/precision.py).  The
full float64 outputs are freed at once: an output of several GiB costs its float64 copy for one forward,
never for the whole evaluation.  A reference that cannot run in float64 (an op without a
double kernel) has no gold: its outputs' precision is then not measured, and the verdict says so.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

from tritongym.core.precision import GOLD_SAMPLE


@dataclass
class GoldSample:
    """One output's gold at `positions` (None = every element, in order) and the reference's errors there."""

    positions: object  # a LongTensor on the output's device, or None
    values: object  # float64 tensor
    ref_err: float | None  # the reference at its dtype, TF32 off
    ref_tf32_err: float | None = None  # ...with TF32 matmuls and convolutions on (torch's, rounded to nearest)
    # ...with matmul operands truncated to TF32 (Triton's default tl.dot), plus its accumulation (`accumulation_loss`)
    ref_tf32_trunc_err: float | None = None
    ref_half_err: float | None = None  # ...under bfloat16 autocast


@contextlib.contextmanager
def _tf32(allow: bool):
    """torch's TF32 switches set for the duration, then put back as they were."""
    import torch

    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    precision = torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
        torch.set_float32_matmul_precision(precision)


def tf32_reference():
    """TF32 on for the duration: the reference as torch's `tf32` class computes it."""
    return _tf32(True)


_TF32_OPS = frozenset({"mm", "bmm", "addmm", "baddbmm", "addbmm", "convolution", "_convolution", "mv", "dot"})
_ATTENTION_OPS = ("scaled_dot_product", "_flash_attention", "_efficient_attention")
"""Fused attention (torch's CPU flash kernel, CUDA's memory-efficient one) runs its GEMMs inside one op: its
float32 operands are truncated too, so an attention problem has a TF32 cost (`core/precision.tf32_in_play`)
as a Triton attention with default `tl.dot`s has."""


def _truncates(name: str) -> bool:
    return name in _TF32_OPS or any(part in name for part in _ATTENTION_OPS)


TRUNCATED_DEPTH = {"deepest": 0}
"""The longest reduction (a GEMM's K, a convolution's in-channels x kernel size) the last `truncated_tf32` run met."""

ACCUMULATION_STEP = 8
"""The depth one tensor-core TF32 instruction adds up before it adds into the accumulator (Hopper's wgmma k8)."""


def accumulation_loss(depth: int) -> float:
    """The relative error a tensor core's own accumulation adds over a reduction of `depth`: it adds each 8-deep
    partial product into the float32 accumulator rounding toward zero, about half a unit in the last place of
    the running sum per step, all of one sign.  Over a short reduction it is nothing; over K = 524288 (a KernelBench
    "large K" matmul) it is 65536 steps, 3.9e-3, and one honest Triton GEMM measured 4.4e-3 on an H200, where the
    operands' truncation alone (`truncated_tf32`) explains 6e-4."""
    return depth / ACCUMULATION_STEP * 2.0**-24


def _reduction_depth(name: str, args) -> int:
    """How many products one output element of this matmul or convolution adds up (0 where it cannot tell)."""
    import math

    import torch

    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if name in ("convolution", "_convolution") and len(tensors) >= 2 and tensors[1].dim() >= 3:
        weight = tensors[1]
        return int(weight.shape[1] * math.prod(weight.shape[2:]))
    operand = tensors[1] if name.startswith(("addmm", "baddbmm", "addbmm", "addmv")) and len(tensors) > 2 else None
    operand = operand if operand is not None else (tensors[0] if tensors else None)
    return int(operand.shape[-1]) if operand is not None and operand.dim() >= 1 else 0


@contextlib.contextmanager
def truncated_tf32():
    """Every matmul and convolution of the reference with its float32 operands rounded toward zero to TF32's 10
    mantissa bits, then multiplied exactly: TF32 as Triton's default `tl.dot` computes it on a Hopper GPU.
    Its error is coherent (each product shrinks a little), so over a chain of GEMMs it grows with the chain,
    unlike torch's round-to-nearest TF32: an H100 measured one Triton TF32 GEMM at 7.7e-4 against torch's
    2.9e-4, and an attention of four at 4.1e-3 against torch's 5.1e-4."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    TRUNCATED_DEPTH["deepest"] = 0

    def truncate(value):
        if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
            return (value.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).view(value.shape)
        return value

    class Truncating(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # see op_trace.py: the dynamo guard's import would change torch.manual_seed

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if _truncates(func.overloadpacket.__name__):
                depth = _reduction_depth(func.overloadpacket.__name__, args)
                TRUNCATED_DEPTH["deepest"] = max(TRUNCATED_DEPTH["deepest"], depth)
                args = tuple(truncate(a) for a in args)
            return func(*args, **(kwargs or {}))

    with exact_reference(), Truncating():
        yield


def exact_reference():
    """TF32 off for the duration: the reference's outputs are computed exactly at its dtype under every policy
    (the policy only decides how the reference is *timed*)."""
    return _tf32(False)


def gold_model(ref_model):
    """The reference module in float64, or None (with the reason in the worker's log) when it cannot be."""
    import sys

    import torch

    try:
        return copy.deepcopy(ref_model).to(torch.float64)
    except Exception as exc:  # noqa: BLE001 - no gold: precision is then not measured, not an error
        print(f"tritongym: no float64 gold: the reference cannot be copied to float64: {exc}", file=sys.stderr)
        return None


def _upcast(value):
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(torch.float64)
    return value


def gold_samples(model64, inputs: list, refs: list, generator, ref_model=None) -> list[GoldSample | None]:
    """Gold for one trial's inputs at up to `GOLD_SAMPLE` positions per floating output (None where an output
    has no gold: not floating, not a tensor, or the float64 forward failed).  With `ref_model`, also the
    reference's errors with TF32 on and under bfloat16 autocast (None where it cannot run so)."""
    import sys

    import torch

    from tritongym.core.measure.compare import flatten_outputs, rel_err

    if model64 is None:
        return [None] * len(refs)
    try:
        with torch.no_grad():
            golds = flatten_outputs(model64(*[_upcast(v) for v in inputs]))
    except Exception as exc:  # noqa: BLE001 - see gold_model
        print(f"tritongym: no float64 gold: the reference failed in float64: {exc}", file=sys.stderr)
        return [None] * len(refs)
    tf32 = _outputs_in(ref_model, inputs, tf32_reference) if ref_model is not None else []
    trunc = _outputs_in(ref_model, inputs, truncated_tf32) if ref_model is not None else []
    accumulation = accumulation_loss(TRUNCATED_DEPTH["deepest"]) if trunc else 0.0
    half = _outputs_in(ref_model, inputs, _bf16_autocast(refs)) if ref_model is not None else []
    samples: list[GoldSample | None] = []
    for i, (ref, gold) in enumerate(zip(refs, golds + [None] * (len(refs) - len(golds)))):
        usable = (
            type(ref) is torch.Tensor
            and isinstance(gold, torch.Tensor)
            and ref.is_floating_point()
            and gold.shape == ref.shape
            and ref.numel() > 0
        )
        if not usable:
            samples.append(None)
            continue
        n = ref.numel()
        where = None
        if n > GOLD_SAMPLE:
            where = torch.randint(0, n, (GOLD_SAMPLE,), device=ref.device, generator=generator)
        flat_gold = gold.detach().reshape(-1).to(torch.float64)
        values = flat_gold if where is None else flat_gold[where]

        def err(outputs: list, i=i, values=values, where=where, ref=ref) -> float | None:
            if i >= len(outputs) or not isinstance(outputs[i], torch.Tensor) or outputs[i].shape != ref.shape:
                return None
            flat = outputs[i].detach().reshape(-1)
            return rel_err(flat if where is None else flat[where], values)

        truncated = err(trunc)
        truncated = truncated + accumulation if truncated is not None else None
        samples.append(GoldSample(where, values.clone(), err(refs), err(tf32), truncated, err(half)))
    del golds, tf32, trunc, half
    return samples


def _bf16_autocast(refs: list):
    """bfloat16 autocast on the reference's device (the `half` class as torch computes it)."""
    import torch

    device = next((r.device.type for r in refs if isinstance(r, torch.Tensor)), "cpu")
    return lambda: torch.autocast(device_type=device, dtype=torch.bfloat16)


def _outputs_in(ref_model, inputs: list, context) -> list:
    """The reference's outputs under `context` (TF32 on, bfloat16 autocast), or [] when it cannot run so."""
    import torch

    from tritongym.core.measure.compare import flatten_outputs
    from tritongym.core.measure.tensors import clone_all

    try:
        with torch.no_grad(), context():
            return flatten_outputs(ref_model(*clone_all(inputs)))
    except Exception:  # noqa: BLE001 - no such baseline: that class is then judged by its floor alone
        return []
