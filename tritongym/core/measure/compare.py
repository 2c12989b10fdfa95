"""Compare one candidate output with the reference's, in the trusted worker, into plain numbers.

Only numbers leave the worker; the parent decides what they mean (`tritongym.core.verdict`).  Outputs
arrive from the candidate's process as plain tensors; an output whose type was not exactly
`torch.Tensor` arrives only as the name of its type (a tensor subclass could run code on any attribute
access or comparison: lazy tensors that compute on comparison are a known hack).
"""

from __future__ import annotations

import math
import os

import torch

from tritongym.core.models import OutputComparison
from tritongym.core.worker_task import Tolerance

EXACT = Tolerance(atol=0.0, rtol=0.0, rel_norm=0.0)


def flatten_outputs(value) -> list:
    if isinstance(value, (tuple, list)):
        return [item for v in value for item in flatten_outputs(v)]
    return [value]


def compare_output(
    index: int,
    out,
    ref: torch.Tensor,
    tolerances: dict[str, Tolerance],
    gold=None,
    ref_device=None,
    inputs=None,
    fused: bool = False,
) -> OutputComparison:
    """`out` against `ref` at the dtype's tolerance; with `gold` (a `gold.GoldSample`), also the precision
    numbers: the candidate's and the reference's errors against the float64 gold.  `ref_device`: the device
    `ref` stands for when it is kept elsewhere (the keeper's parked outputs, in host memory): it is brought
    there one chunk at a time as it is compared, never whole (a full-size output is 6-16 GiB, and a keeper
    that fetched it whole beside the candidate's handout ran out of GPU memory on the H100).  `inputs`: the
    trial's inputs, or a callable making them, asked for only when an index output differs (`ties.py`).  `fused`:
    the floating-point sums in one Triton pass (`fused_stats.py`; the keeper's, on a GPU), where the dtype allows."""
    ref_device = ref.device if ref_device is None else torch.device(ref_device)
    if ref_device.type == "cuda" and ref_device.index is None:  # as a tensor made there would say
        ref_device = torch.device("cuda", torch.cuda.current_device())
    tol = tolerances.get(str(ref.dtype), EXACT) if ref.is_floating_point() else EXACT
    result = OutputComparison(
        index=index,
        is_tensor=isinstance(out, torch.Tensor),
        exact_type=type(out) is torch.Tensor,
        ref_shape=list(ref.shape),
        ref_dtype=str(ref.dtype),
        ref_device=str(ref_device),
        numel=ref.numel(),
        atol=tol.atol,
        rtol=tol.rtol,
        rel_norm_tol=tol.rel_norm,
    )
    if type(out) is not torch.Tensor:
        kind = out["not_a_tensor"] if isinstance(out, dict) and "not_a_tensor" in out else type(out).__qualname__
        result.is_tensor, result.exact_type = False, False
        result.note = f"output {index} is a {kind}, not a torch.Tensor"
        return result
    result.shape, result.dtype, result.device = list(out.shape), str(out.dtype), str(out.device)
    if out.shape != ref.shape or out.dtype != ref.dtype or out.device != ref_device:
        return result
    if ref.numel() == 0:
        return result
    if not ref.is_floating_point() and not ref.is_complex():
        a_all, b_all, chunk = out.detach().reshape(-1), ref.detach().reshape(-1), _chunk_elements()
        mismatched = torch.zeros((), dtype=torch.int64, device=out.device)
        for start in range(0, b_all.numel(), chunk):
            mismatched += (a_all[start : start + chunk] != b_all[start : start + chunk].to(out.device)).sum()
        result.mismatched = int(mismatched)
        if result.mismatched and inputs is not None:
            from tritongym.core.measure.ties import could_be_ties, tied_mismatches

            made = []  # the inputs made again at most once (a full-size set is GiBs), and only when asked for

            def trial_inputs():
                if not made:
                    made.append(inputs() if callable(inputs) else inputs)
                return made[0]

            tied = 0
            if could_be_ties(out, ref):
                tied = tied_mismatches(out.detach(), ref.detach(), trial_inputs())
            if tied:
                result.mismatched, result.ties = 0, tied
                result.note = f"{tied} indices differ from the reference's only where the values they point to tie"
        if result.mismatched and inputs is not None:
            from tritongym.core.measure.rounding import rounding_mismatches

            rounded = rounding_mismatches(out, ref, trial_inputs)
            if rounded:
                result.mismatched, result.rounded = 0, rounded
                result.note = f"{rounded} quantised values are one step from the reference's, at rounding boundaries"
        return result
    if gold is not None:
        result.gold_err, result.ref_gold_err = candidate_err(out, gold), gold.ref_err
        result.ref_tf32_err, result.ref_half_err = gold.ref_tf32_err, gold.ref_half_err
        result.ref_tf32_trunc_err = gold.ref_tf32_trunc_err
    if fused and fused_stats_usable(out, ref):
        from tritongym.core.measure import fused_stats

        whole = ref.device == out.device  # else parked in host memory: brought over a chunk at a time
        stats = fused_stats.float_stats(out, ref, tol.atol, tol.rtol, ref.numel() if whole else _chunk_elements())
    else:
        stats = _float_stats(out, ref, tol)
    result.mismatched = int(stats["mismatched"])
    if stats["finite"]:
        result.max_abs_err = stats["max_abs"]
        result.mean_abs_err = stats["sum_abs"] / stats["finite"]
        result.rel_norm_err = math.sqrt(stats["sum_sq"]) / max(math.sqrt(stats["ref_sq"]), 1e-30)
    if stats["nan_differs"]:
        result.note = "NaN where the reference has a number (or the reverse)"
    if out.dtype == torch.float32 and stats["out_nonzero"] >= SHORT_MIN_VALUES and stats["ref_nonzero"]:
        result.short_significands = stats["out_short"] / stats["out_nonzero"]
        result.ref_short_significands = stats["ref_short"] / stats["ref_nonzero"]
    return result


SHORT_MIN_VALUES = 64
"""Finite non-zero values an output needs before its width is measured: an honest float32 value has its low 13
mantissa bits zero once in 8192, so 64 of them all short is no accident."""
_SHORT_MASK = (1 << 13) - 1
"""The float32 mantissa bits float16's significand does not hold (23 - 10)."""


CHUNK_ELEMENTS = 1 << 25
"""Elements compared per pass: the float64 temporaries of one pass stay near 1 GiB whatever the output's size
(a full-size KernelBench output is 1.5 G elements: 12 GiB per float64 copy, and a comparison makes several).
`TRITONGYM_COMPARE_CHUNK_ELEMENTS` sets another (tests measuring what else a process holds make it small)."""


def _chunk_elements() -> int:
    return max(1, int(os.environ.get("TRITONGYM_COMPARE_CHUNK_ELEMENTS", CHUNK_ELEMENTS)))


def fused_stats_usable(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Whether `fused_stats` compares these: an output on a GPU, of a real floating dtype (Triton's interpreter
    would run the kernel on the CPU too, block by block in Python: slower than torch's passes there)."""
    return out.is_cuda and out.dtype == ref.dtype and out.dtype in _FUSED_DTYPES


_FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _float_stats(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> dict[str, float]:
    """The comparison's sums in float64, chunk by chunk, read back with one synchronisation.

    A comparison used to read each number as it went (a dozen host syncs per output); in the GPU's keeper,
    sharing the GPU with busy workers, each sync can wait for the keeper's next time slice, so the numbers
    are kept on the device until the end."""
    a_all, b_all = out.detach().reshape(-1), ref.detach().reshape(-1)  # `ref` may be elsewhere: chunks move
    zero = torch.zeros((), dtype=torch.float64, device=out.device)
    mismatched, finite_n, nan_differs = zero.clone(), zero.clone(), zero.clone()
    max_abs, sum_abs, sum_sq, ref_sq = zero.clone(), zero.clone(), zero.clone(), zero.clone()
    widths = [zero.clone() for _ in range(4)]  # out non-zero, out short, ref non-zero, ref short (float32 only)
    chunk = _chunk_elements()
    for start in range(0, b_all.numel(), chunk):
        a32, b32 = a_all[start : start + chunk], b_all[start : start + chunk].to(out.device)
        if a32.dtype == torch.float32 and b32.dtype == torch.float32:
            for k, v in enumerate((a32, b32)):
                counted = torch.isfinite(v) & (v != 0)
                widths[2 * k] += counted.sum()
                widths[2 * k + 1] += (counted & ((v.view(torch.int32) & _SHORT_MASK) == 0)).sum()
        a, b = a32.double(), b32.double()
        a_nan, b_nan = torch.isnan(a), torch.isnan(b)
        same_special = (a_nan & b_nan) | (torch.isinf(b) & (a == b))
        diff = (a - b).abs()
        ok = (diff <= tol.atol + tol.rtol * b.abs()) | same_special
        mismatched += (~ok).sum()
        finite = torch.isfinite(a) & torch.isfinite(b)
        finite_n += finite.sum()
        d = torch.where(finite, diff, 0.0)
        max_abs = torch.maximum(max_abs, d.max())
        sum_abs += d.sum()
        sum_sq += d.square().sum()
        ref_sq += torch.where(finite, b, 0.0).square().sum()
        nan_differs += (a_nan != b_nan).sum()
    names = ("mismatched", "finite", "nan_differs", "max_abs", "sum_abs", "sum_sq", "ref_sq")
    names += ("out_nonzero", "out_short", "ref_nonzero", "ref_short")
    values = torch.stack([mismatched, finite_n, nan_differs, max_abs, sum_abs, sum_sq, ref_sq, *widths]).tolist()
    return dict(zip(names, values))


def rel_err(values, gold) -> float | None:
    """||values - gold|| / ||gold|| over the positions where both are finite; None when gold is all zero.
    The sums stay on the device until one read (see `_float_stats`)."""
    import torch

    a, g = values.double(), gold.double()
    finite = torch.isfinite(a) & torch.isfinite(g)
    sums = [finite.sum().double()] + [torch.where(finite, v, 0.0).square().sum() for v in (g, a, a - g)]
    count, gold_sq, values_sq, diff_sq = torch.stack(sums).tolist()
    if not count:
        return None
    if gold_sq == 0.0:
        return None if values_sq == 0.0 else float("inf")
    return math.sqrt(diff_sq) / math.sqrt(gold_sq)


def candidate_err(out, sample) -> float | None:
    """The candidate output's error against gold on the sample (None when there is no gold or no match)."""
    import torch

    if sample is None or type(out) is not torch.Tensor or not out.is_floating_point():
        return None
    flat = out.detach().reshape(-1)
    if sample.positions is None:
        if flat.numel() != sample.values.numel():
            return None
        return rel_err(flat, sample.values)
    where = sample.positions if sample.positions.device == flat.device else sample.positions.to(flat.device)
    if int(where.max()) >= flat.numel():
        return None
    return rel_err(flat[where], sample.values.to(flat.device))
