"""The weights a candidate is judged with: the reference's, built under a shared seed, drawn away from identity.

Three steps, each on the trusted side (the reference's) or in the candidate's process before its first call:

* **the shared seed** (`build_seed`): `Model` and `ModelNew` are both built under it, as KernelBench and
  KernelGYM build them, so a candidate that keeps its own `self.weight` / `self.bias` and initialises them as
  the torch module it replaces does, in the same order, holds the reference's values.  It is a one-way hash of
  the task's secret `init_seed`: a candidate that reads `torch.initial_seed()` in `__init__` learns nothing the
  other seeds are derived from (the ghost, late and probe inputs);
* **the draw** (`draw_parameters`, in `task_runner.build_reference`, so on every path that builds the reference:
  the CPU worker, the keeper's record and float64 gold, the GPU worker's copy the candidate is bound from, the
  shape sets' models, the screens): every floating parameter that is constant (LayerNorm's, GroupNorm's and
  BatchNorm's weight 1 and bias 0, PReLU's 0.25) and the running statistics of every BatchNorm-like module are
  drawn away from that value, seeded (`draw_seed`): a constant c != 0 becomes c * (1 + U(-0.5, 0.5)) (the sign,
  and a variance's positivity, kept), a zero becomes N(0, 0.1).  A kernel that skips an affine, a scale or a
  shift is then wrong; an honest fp16 or bf16 kernel stays within tolerance (the outputs keep their scale).
  Parameters drawn at random by their init are left as they are; integer buffers (`num_batches_tracked`) and
  plain attributes (dropout's probability, eps) are not parameters and are never touched;
* **the binding** (`bind_weights`): every candidate entry whose name, shape and dtype match the reference's is
  copied from it; every other floating entry equal to one of the reference's entries *as built* (before the
  draw), first unused in construction order, gets that entry's value: it came from the shared seed.  The rest
  match neither, and a wrong answer says so (`verdict.weights_phrase`).
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass, field

ZERO_STD = 0.1  # a zero is drawn from N(0, ZERO_STD)
SPREAD = 0.5  # a constant c != 0 is drawn from c * (1 + U(-SPREAD, SPREAD))


def _derived(task, tag: str) -> int:
    digest = hashlib.sha256(f"tritongym {tag} {task.init_seed}".encode()).digest()
    return int.from_bytes(digest[:4], "little") % (2**31)


def build_seed(task) -> int:
    """The seed `Model` and `ModelNew` are both built under (one-way from `init_seed`)."""
    return _derived(task, "build")


def draw_seed(task) -> int:
    """The seed of the draw away from identity (one-way from `init_seed`; recorded in the evidence)."""
    return _derived(task, "draw")


_AS_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""reference model -> {state name: the constant it held as built}, for the entries `draw_parameters` drew."""


def drawable(model) -> list[tuple[str, object]]:
    """(state name, tensor) of what the draw may touch: floating parameters, and the floating running statistics
    of BatchNorm-like modules (`_NormBase`: BatchNorm*, InstanceNorm* that track them), in construction order."""
    import torch
    from torch.nn.modules.batchnorm import _NormBase

    found, seen = [], set()
    for prefix, module in model.named_modules():
        dot = f"{prefix}." if prefix else ""
        entries = list(module.named_parameters(recurse=False))
        if isinstance(module, _NormBase):
            entries += [(n, b) for n, b in module.named_buffers(recurse=False) if n in ("running_mean", "running_var")]
        for name, tensor in entries:
            if tensor is None or not torch.is_floating_point(tensor) or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            found.append((dot + name, tensor))
    return found


def _constant(tensor) -> float | None:
    """The one value every element holds, or None (two differing first elements answer without a full pass)."""
    flat = tensor.detach().reshape(-1)
    if flat.numel() == 0:
        return None
    if flat.numel() > 1 and bool(flat[0] != flat[1]):
        return None
    first = flat[0]
    if not bool((flat == first).all()):
        return None
    return float(first)  # NaN never equals itself: not constant, not drawn


def draw_parameters(model, seed: int) -> list[str]:
    """Draw every constant floating parameter (and BatchNorm's running statistics) of `model` away from its value,
    from `seed`, in place; the state names drawn.  The draw is made on the host in float32 from a generator of its
    own, then cast, so every process and device that builds the reference gets the same values."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    as_built: dict[str, float] = {}
    with torch.no_grad():
        for name, tensor in drawable(model):
            value = _constant(tensor)
            if value is None:
                continue
            if value == 0.0:
                drawn = torch.randn(tensor.shape, generator=generator) * ZERO_STD
            else:
                drawn = value * (1.0 + (torch.rand(tensor.shape, generator=generator) * 2.0 - 1.0) * SPREAD)
            tensor.copy_(drawn.to(dtype=tensor.dtype))
            as_built[name] = value
    _AS_BUILT[model] = as_built
    return list(as_built)


def drawn(model) -> list[str]:
    """The state names `draw_parameters` drew in `model` (none when it never ran on it)."""
    return list(_AS_BUILT.get(model, {}))


@dataclass
class Binding:
    """How a candidate's weights were set: by name, from the shared seed ("candidate name <- reference name"),
    or neither (floating entries only: the candidate's own constants are its business until its answer is
    wrong)."""

    bound: list[str] = field(default_factory=list)
    seeded: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)


def bind_weights(model, ref_model) -> Binding:
    """Bind `model`'s parameters and buffers to `ref_model`'s: by name, shape and dtype first, then, for the
    floating entries left, by the shared seed (equal to a reference entry as built, first unused in order)."""
    import torch

    binding = Binding()
    ref_state = ref_model.state_dict()
    as_built = _AS_BUILT.get(ref_model, {})
    used: set[str] = set()
    left = []
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            source = ref_state.get(name)
            if source is not None and source.shape == tensor.shape and source.dtype == tensor.dtype:
                tensor.copy_(source)
                binding.bound.append(name)
                used.add(name)
            elif torch.is_floating_point(tensor):
                left.append((name, tensor))
        for name, tensor in left:
            match = _seeded_match(tensor, ref_state, as_built, used)
            if match is None:
                binding.unmatched.append(name)
                continue
            tensor.copy_(ref_state[match])
            binding.seeded.append(f"{name} <- {match}")
            used.add(match)
    return binding


def _seeded_match(tensor, ref_state: dict, as_built: dict[str, float], used: set[str]) -> str | None:
    """The reference entry `tensor` equals as built (same shape and dtype), preferring one not yet bound."""
    import torch

    candidates = [
        n
        for n, ref in ref_state.items()
        if ref.shape == tensor.shape and ref.dtype == tensor.dtype and torch.is_floating_point(ref)
    ]
    for name in sorted(candidates, key=lambda n: n in used):  # stable: construction order, unused first
        if name in as_built:
            if _constant(tensor) == as_built[name]:
                return name
        elif torch.equal(tensor, ref_state[name]):
            return name
    return None
