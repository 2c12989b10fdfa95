"""Negative controls (answers that do no work) and the input transforms that tell them from the reference.

A problem is degenerate for a control when the control's answer passes its correctness check: all zeros,
the reference's output for *another* seed's inputs (a constant), or the identity (an input returned as
the output).  On such a problem an honest kernel and the control give the same answer on the problem's
own inputs, so the two are told apart on inputs outside that distribution where the control is wrong:
`problems check` (screen mode) finds, per passing control, the first transform of the inputs
(`TRANSFORMS`) under which the control fails for every seed; at evaluation time the candidate is called
once on inputs so transformed (the `degenerate:<control>` probe of `probes.py`), and a candidate whose
outputs there equal the control's answer rather than the reference's did no work (check `degenerate`).

Trusted code only: no candidate exists while these run.
"""

from __future__ import annotations

CONTROLS = ("zeros", "other_seed_output", "identity")
OTHER_SEED_OFFSET = 7919

TRANSFORMS: dict[str, str] = {
    "negated": "the problem's inputs negated",
    "scaled": "the problem's inputs scaled by 16",
    "normal": "standard normal inputs scaled by 4",
}
"""Transform name -> what the candidate was given, in words; tried in this order."""


def control_answer(name: str, inputs: list, refs: list, other_refs: list) -> list | None:
    """The control's outputs for these inputs (None when it cannot be formed: the identity needs an input
    with each output's shape and dtype)."""
    import torch

    if name == "zeros":
        return [torch.zeros_like(r) for r in refs]
    if name == "other_seed_output":
        return list(other_refs)
    tensors = [v for v in inputs if isinstance(v, torch.Tensor)]
    answer = [next((t for t in tensors if t.shape == r.shape and t.dtype == r.dtype), None) for r in refs]
    return None if any(a is None for a in answer) else answer


def transform_inputs(name: str, inputs: list, seed: int) -> list | None:
    """The inputs with every floating-point tensor transformed; None when there is none to transform."""
    import torch

    if not any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in inputs):
        return None
    # drawn on the input's own device: a full-size input (1.5 G elements) drawn on the host took the screen
    # tens of seconds per seed on one CPU thread, plus the copy; the keeper and the candidate's worker draw
    # the same way on the same GPU, so their sets agree (as `task_runner.make_inputs`'s do)
    generator = None
    out = []
    for v in inputs:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            if name == "negated":
                v = -v
            elif name == "scaled":
                v = v * 16
            elif name == "normal":
                if generator is None or generator.device != v.device:
                    generator = torch.Generator(device=v.device).manual_seed(seed ^ 0x7A5F)
                drawn = torch.randn(v.shape, generator=generator, dtype=torch.float32, device=v.device)
                v = (drawn * 4).to(v.dtype)
            else:
                raise ValueError(f"unknown input transform {name!r} (known: {', '.join(TRANSFORMS)})")
        out.append(v)
    return out
