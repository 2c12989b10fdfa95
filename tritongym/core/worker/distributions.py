"""The distributions the main correctness trials draw their inputs from.

Trial `k` makes the problem's own inputs under its seed (`task_runner.make_inputs`), then transforms every
floating-point tensor among them by its distribution, `TRIAL_DISTRIBUTIONS[k % 4]` (the table is the protocol's,
in `core/models.py`); integer and boolean inputs
(indices, targets, masks) are left as they are.  Trial 0 is always the problem's own inputs:

* `as_is`: the problem's `get_inputs()`;
* `scaled_down` (x 1e-3): where an epsilon and underflow matter: a LayerNorm that drops its epsilon passed
  every as-is trial of the suite's layer_norm (variance 4, epsilon 1e-5) and fails here (variance 4e-6);
* `negated`: all-positive inputs (`torch.rand`) become all-negative, where a max reduction's identity of 0
  instead of -inf, or a ReLU-like shortcut, is wrong;
* `scaled_up` (x 4): larger magnitudes, where half precision loses more and an unstable formula overflows;
  moderate, so that honest exp-based formulas (tanh as (e^2x - 1) / (e^2x + 1)) stay finite on
  standard-normal inputs (|x| < 44 means 11 sigma here).

Both sides apply it alike: the keeper and the GPU worker through `InputSource.seeded`, the CPU task runner when
it makes its held sets; the shape-set trials, the late trial, the probes' own inputs and the problem screen
use the problem's inputs as they are.  A trial's `TrialEvidence.distribution` says which it used, and a
failing verdict's message names it.

Tolerance: `rtol` and the relative-norm bound are relative and hold at any scale; `atol` is absolute, so
a trial whose reference outputs are larger than trial 0's (scaled up) has its `atol` multiplied by that
ratio (`atol_scale`: the largest ratio of the outputs' root-mean-square, at least 1; only for a distribution
that `scales_up`, so the trials the mode probes reuse, 0 to 2, keep the table as it is): otherwise the errors
near zero of an honest TF32 or half-precision kernel would grow with the outputs (x 16 for a matmul) past an
`atol` that did not.  A trial with smaller outputs keeps its `atol` (never stricter than as-is: denormals and
flush-to-zero differ between honest implementations).  The relative-norm bound follows outputs that shrink
(`rel_norm_scale`, only for a distribution that `scales_down`).

Domain: a trial on whose inputs the reference itself gives NaN or inf where it gave none on the problem's own
inputs (`out_of_domain`: a KL divergence of negated probabilities) is not judged, and the verdict says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from tritongym.core.models import INPUT_DISTRIBUTIONS as DISTRIBUTIONS
from tritongym.core.models import TRIAL_DISTRIBUTIONS

AS_IS = "as_is"


def trial_distribution(k: int) -> str:
    """The distribution main trial `k` draws its inputs from."""
    return TRIAL_DISTRIBUTIONS[k % len(TRIAL_DISTRIBUTIONS)]


def describe(name: str | None) -> str:
    """`inputs scaled by 1e-3`: what a message says of a trial's distribution."""
    return DISTRIBUTIONS[name][1] if name in DISTRIBUTIONS else str(name)


def scales_up(name: str | None) -> bool:
    """Whether the distribution makes inputs larger (then `atol` follows the outputs: `atol_scale`)."""
    return name in DISTRIBUTIONS and abs(DISTRIBUTIONS[name][0]) > 1.0


def scales_down(name: str | None) -> bool:
    """Whether the distribution makes inputs smaller (then the relative-norm bound follows: `rel_norm_scale`)."""
    return name in DISTRIBUTIONS and abs(DISTRIBUTIONS[name][0]) < 1.0


def distributed(name: str, inputs: list) -> list:
    """The inputs with every floating-point tensor multiplied by the distribution's factor, in its own dtype
    and on its own device; other values (integer and boolean tensors, Python numbers) as they were."""
    import torch

    factor = DISTRIBUTIONS[name][0]
    if factor == 1.0:
        return inputs
    return [v * factor if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]


def trial_inputs(make_inputs: Callable, reference, seed: int, k: int, device) -> list:
    """Main trial k's inputs: the problem's own under `seed`, in trial k's distribution."""
    return distributed(trial_distribution(k), make_inputs(reference, seed, device))


class OutputScale(NamedTuple):
    """One reference output of one trial, as the tolerances need it: its root-mean-square over its finite values
    (None for a non-floating output or none finite) and how many of its values are NaN or inf."""

    rms: float | None
    nonfinite: int


def output_scales(outputs: list) -> list[OutputScale]:
    """Each output's `OutputScale`; one host read per floating output."""
    import torch

    found: list[OutputScale] = []
    for o in outputs:
        if not isinstance(o, torch.Tensor) or not o.is_floating_point() or o.numel() == 0:
            found.append(OutputScale(None, 0))
            continue
        v = o.detach().double()
        finite = torch.isfinite(v)
        count, sq = torch.stack([finite.sum().double(), torch.where(finite, v, 0.0).square().sum()]).tolist()
        found.append(OutputScale((sq / count) ** 0.5 if count else None, int(v.numel() - count)))
    return found


def atol_scale(rms: list[float | None], base: list[float | None]) -> float:
    """How much larger a trial's reference outputs are than trial 0's (each output's root-mean-square): the largest
    ratio over the outputs both measured, at least 1."""
    ratios = [r / b for r, b in zip(rms, base) if r is not None and b]
    return max([1.0, *ratios])


def rel_norm_scale(rms: list[float | None], base: list[float | None]) -> float:
    """How much smaller a trial's reference outputs are than trial 0's: the largest ratio base / rms, at least 1.

    The relative-norm bound divides by the output's norm; where inputs scaled down shrink the outputs (a
    Jensen-Shannon divergence of log-probabilities x 1e-3 falls from 0.2 to 0.001) while the rounding of the sums
    behind them does not, an honest fp32 kernel's relative error grows by that ratio (Liger-Kernel's JSD: 0.22
    on an H200, its absolute error 0.0017 within atol).  The bound is loosened by it for that trial only; every
    element is still held to the tolerance table, and the as-is trial to the bound as it is."""
    ratios = [b / r for r, b in zip(rms, base) if r and b is not None]
    return max([1.0, *ratios])


def scaled_tolerances(tolerances: dict, scale: float, rel_norm: float = 1.0) -> dict:
    """The tolerance table with every `atol` multiplied by `scale` and every relative-norm bound by `rel_norm`
    (the same table when both are 1)."""
    if scale == 1.0 and rel_norm == 1.0:
        return tolerances
    return {
        k: t.model_copy(update={"atol": t.atol * scale, "rel_norm": t.rel_norm * rel_norm})
        for k, t in tolerances.items()
    }


def atol_scales(rms: list[list[float | None]]) -> list[float]:
    """Each main trial's `atol` factor from its outputs' root-mean-squares alone (`trial_scales`' first half)."""
    return [atol for atol, _ in trial_scales([[OutputScale(r, 0) for r in trial] for trial in rms])]


def trial_scales(scales: list[list[OutputScale]]) -> list[tuple[float, float]]:
    """Each main trial's (`atol` factor, relative-norm factor) from its reference outputs' `output_scales`
    (trial 0's first): `atol_scale` where its distribution `scales_up`, `rel_norm_scale` where it scales down."""
    rms = [[s.rms for s in trial] for trial in scales]
    base = rms[0] if rms else []
    return [
        (
            atol_scale(r, base) if scales_up(trial_distribution(k)) else 1.0,
            rel_norm_scale(r, base) if scales_down(trial_distribution(k)) else 1.0,
        )
        for k, r in enumerate(rms)
    ]


def out_of_domain(scales: list[list[OutputScale]]) -> list[bool]:
    """Whether each main trial's inputs left the problem's domain: the reference itself gave more NaN or inf
    values on them than on trial 0's (the problem's own inputs).  Negated probabilities give a KL divergence of
    NaN; no honest kernel can be held to that answer, and the trial is not judged (`TrialEvidence.out_of_domain`)."""
    base = [s.nonfinite for s in scales[0]] if scales else []
    return [
        k > 0 and any(s.nonfinite > (base[i] if i < len(base) else 0) for i, s in enumerate(trial))
        for k, trial in enumerate(scales)
    ]


def trial_tolerances(tolerances: dict, scales: list[list[OutputScale]]) -> list[dict]:
    """Each main trial's tolerance table (`trial_scales`)."""
    return [scaled_tolerances(tolerances, a, r) for a, r in trial_scales(scales)]
