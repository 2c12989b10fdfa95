"""What the RL trainer and the SFT trainer share about running under accelerate: one way to build the
`Accelerator`, one way to sum a number over processes, and one optimiser step with gradient clipping.

accelerate is imported inside `make_accelerator`, so importing this module costs only torch.
"""

from __future__ import annotations

import torch


def make_accelerator(precision: str = "auto", device: str | None = None):
    """An `Accelerator` for this process: bf16 autocast where the GPU has it (`auto`), the CPU without CUDA.
    Under `accelerate launch` it joins the launched process group.  `device`: the policy's GPU ("cuda:K",
    `Placement.policy_device`), made this process's current device first, which is where accelerate puts a single
    process's model (under `accelerate launch` it is cuda:LOCAL_RANK, as placed)."""
    from accelerate import Accelerator

    if device is not None and device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.set_device(torch.device(device))
    if precision == "auto":
        precision = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"
    return Accelerator(mixed_precision=precision, cpu=not torch.cuda.is_available())


def global_sum(accelerator, value: float) -> float:
    """`value` summed over every process (itself with one process)."""
    if accelerator.num_processes == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(tensor, reduction="sum"))


def clipped_step(accelerator, optimizer, params: list[torch.nn.Parameter], clip: float | None) -> float:
    """Clip the gradients to global norm `clip` (None: no clipping), step and zero them; returns the norm
    before clipping."""
    if clip is not None:
        grad_norm = float(accelerator.clip_grad_norm_(params, clip))
    else:
        norms = [p.grad.norm() for p in params if p.grad is not None]
        grad_norm = float(torch.norm(torch.stack(norms))) if norms else 0.0
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return grad_norm
