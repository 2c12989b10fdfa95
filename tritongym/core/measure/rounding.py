"""Quantised outputs at rounding boundaries: an int8 value one step from the reference's where the float it was
rounded from sat within a rounding error of a half.

A per-token int8 quantisation (vLLM's and SGLang's `per_token_quant_int8`) computes `x * (127 / absmax)` where
torch computes `x / (absmax / 127)`: the two floats differ in their last bit on some elements, and where one of
them is within that bit of `k + 0.5` the two round to neighbours.  On a 2048 x 1024 input 6 of 2,097,152 values
differed by one, and an exact comparison refused a kernel that every user of it would call correct (KernelBench's
`allclose`, atol and rtol 1e-2, also passes most of them: a difference of one is within 1.28 of 127).

An 8-bit integer output is the same answer when:

* at least one of the trial's inputs is floating (the integers were rounded from floats; an integer-only kernel
  off by one is wrong);
* every differing element is exactly one step away;
* each of them is at least 2 in magnitude on one side: a boundary is crossed with a probability that grows with
  the value's own rounding error, so honest flips between 0 and 1 are rare (the float is below 1, its last bit
  1e-7), while an output buffer left at zero where the kernel never stored (a dropped tail, a grid rounded down)
  differs from a reference of +-1 by exactly one;
* there are at most `SHARE` of the output's elements (a boundary crossed one time in 10^5 or 10^6 elements:
  `SHARE` is ten times that).

Wider integer outputs (indices, counts) are not examined: an index one off names another element (`ties.py` says
when that is the same answer), and a count rounded differently is not a rounding of the count.
"""

from __future__ import annotations

import torch

DTYPES = (torch.int8, torch.uint8)
"""Quantised-value dtypes: what a kernel rounds floats into."""

SHARE = 1e-4
"""The largest share of an output's elements that may sit one step from the reference's."""

MAX_ELEMENTS = 1 << 28
"""Outputs larger than this are not examined (the comparison of a parked one is brought over whole)."""

MIN_MAGNITUDE = 2
"""A differing element is at least this large on one side (a zero left unwritten against a 1 is not a rounding)."""


def rounding_mismatches(out: torch.Tensor, ref: torch.Tensor, inputs) -> int:
    """How many of `out`'s differences from `ref` are rounding-boundary steps, all or nothing: the number of
    differing elements when every one of them is as the module says, 0 otherwise.  `inputs`: the trial's inputs,
    or a callable making them, asked for last (a full-size set is GiBs)."""
    if out.dtype not in DTYPES or ref.dtype != out.dtype or out.shape != ref.shape or out.numel() > MAX_ELEMENTS:
        return 0
    a, b = out.detach().reshape(-1), ref.detach().reshape(-1).to(out.device)
    differ = a != b
    count = int(differ.sum())
    if not count or count > SHARE * a.numel():
        return 0
    got, want = a[differ].to(torch.int16), b[differ].to(torch.int16)
    if not bool(((got - want).abs() == 1).all()):
        return 0
    if not bool((torch.maximum(got.abs(), want.abs()) >= MIN_MAGNITUDE).all()):
        return 0
    if callable(inputs):
        inputs = inputs()
    if not any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in inputs):
        return 0
    return count
