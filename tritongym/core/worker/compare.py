"""Compare one candidate output with the reference's, in the trusted worker, into plain numbers.

Only numbers leave the worker; the parent decides what they mean (`tritongym.core.verdict`).  Outputs
arrive from the candidate's process as plain tensors; an output whose type was not exactly
`torch.Tensor` arrives only as the name of its type (a tensor subclass could run code on any attribute
access or comparison: lazy tensors that compute on comparison are a known hack).
"""

from __future__ import annotations

import math

import torch

from tritongym.core.models import OutputComparison
from tritongym.core.worker_task import Tolerance

EXACT = Tolerance(atol=0.0, rtol=0.0, rel_norm=0.0)


def flatten_outputs(value) -> list:
    if isinstance(value, (tuple, list)):
        return [item for v in value for item in flatten_outputs(v)]
    return [value]


def compare_output(index: int, out, ref: torch.Tensor, tolerances: dict[str, Tolerance], gold=None) -> OutputComparison:
    """`out` against `ref` at the dtype's tolerance; with `gold` (a `gold.GoldSample`), also the precision
    numbers: the candidate's and the reference's errors against the float64 gold."""
    tol = tolerances.get(str(ref.dtype), EXACT) if ref.is_floating_point() else EXACT
    result = OutputComparison(
        index=index,
        is_tensor=isinstance(out, torch.Tensor),
        exact_type=type(out) is torch.Tensor,
        ref_shape=list(ref.shape),
        ref_dtype=str(ref.dtype),
        ref_device=str(ref.device),
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
    if out.shape != ref.shape or out.dtype != ref.dtype or out.device != ref.device:
        return result
    if ref.numel() == 0:
        return result
    if not ref.is_floating_point() and not ref.is_complex():
        result.mismatched = int((out != ref).sum())
        return result
    if gold is not None:
        result.gold_err, result.ref_gold_err = candidate_err(out, gold), gold.ref_err
        result.ref_tf32_err, result.ref_half_err = gold.ref_tf32_err, gold.ref_half_err
        result.ref_tf32_trunc_err = gold.ref_tf32_trunc_err
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    parts = [_errors(flat_out[i : i + CHUNK], flat_ref[i : i + CHUNK], tol) for i in range(0, ref.numel(), CHUNK)]
    result.mismatched = sum(p[0] for p in parts)
    finite = [p for p in parts if p[1]]  # (mismatched, count, max, mean, norm of the difference, of the ref, NaN)
    if finite:
        count = sum(p[1] for p in finite)
        result.max_abs_err = max(p[2] for p in finite)
        result.mean_abs_err = finite[0][3] if len(finite) == 1 else sum(p[3] * p[1] for p in finite) / count
        norms = [math.sqrt(sum(p[k] ** 2 for p in finite)) if len(finite) > 1 else finite[0][k] for k in (4, 5)]
        result.rel_norm_err = norms[0] / max(norms[1], 1e-30)
    if any(p[6] for p in parts):
        result.note = "NaN where the reference has a number (or the reverse)"
    return result


CHUNK = 1 << 24
"""Elements compared at a time: float64 temporaries of 128 MiB, where a whole 6 GiB float32 output made several of
12 GiB at once (issue 27 item 1)."""


def _errors(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> tuple:
    """One chunk: mismatches, then over its finite positions their count, max and mean absolute error and the norms
    of the difference and of the reference, then whether NaN differs somewhere."""
    a, b = out.double(), ref.double()
    a_nan, b_nan = torch.isnan(a), torch.isnan(b)
    same_special = (a_nan & b_nan) | (torch.isinf(b) & (a == b))
    diff = (a - b).abs()
    ok = (diff <= tol.atol + tol.rtol * b.abs()) | same_special
    finite = torch.isfinite(a) & torch.isfinite(b)
    d = diff[finite]
    if not d.numel():
        return int((~ok).sum()), 0, None, None, 0.0, 0.0, bool((a_nan != b_nan).any())
    stats = float(d.max()), float(d.mean()), float(d.norm()), float(b[finite].norm())
    return int((~ok).sum()), int(d.numel()), *stats, bool((a_nan != b_nan).any())


def rel_err(values, gold) -> float | None:
    """||values - gold|| / ||gold|| over the positions where both are finite; None when gold is all zero."""
    import torch

    a, g = values.double(), gold.double()
    finite = torch.isfinite(a) & torch.isfinite(g)
    if not bool(finite.any()):
        return None
    norm = float(g[finite].norm())
    if norm == 0.0:
        return None if float(a[finite].norm()) == 0.0 else float("inf")
    return float((a[finite] - g[finite]).norm()) / norm


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
