"""Where a run's policy and its judge go on one host: `[placement]` (`PlacementConfig`) resolved against the GPUs
this process sees and `accelerate launch`'s ranks.

GPUs are numbered as `eval.gpus` and the `triton-cuda` backend number them (nvidia-smi's numbers, the entries of
`CUDA_VISIBLE_DEVICES` when it is set); the policy's torch device is the same GPU in torch's numbering.

- One process, one GPU: the policy and the judge share it (`Placement.shared`).  Rollouts then never overlap
  generation with judging (the policy's kernels would run beside a candidate's timing), and the trainer tells the
  judge's pool how much of the GPU it holds (`Trainer`, `core/learn/gpu_memory.py`).
- One process, two or more GPUs: the policy on `policy_gpu` (default: the first), the judge on the others
  (`judge_gpus = "others"`, the default), or on every GPU (`"all"`: shared again, on the policy's), or a list.
- `accelerate launch` with N processes: process r trains on cuda:LOCAL_RANK, as accelerate places it.  Each
  process builds its own judge, so no GPU may have two: process r judges on its share of the judge's GPUs
  (`[r::N]` of "others" or the list), and on its own training GPU when its share is empty; "all" and a share
  holding another process's training GPU are refused.  8 GPUs, 4 processes: each trains on one and judges on one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tritongym.core.errors import ConfigError
from tritongym.core.learn.run_config import PlacementConfig


@dataclass(frozen=True)
class Placement:
    """This process's policy and judge.  `policy_gpu` and `judge_gpus` are numbered as `eval.gpus` numbers GPUs;
    `policy_device` is torch's name for the policy's device here.  `judge_gpus` is None where the judge is not a
    GPU backend on this host (triton-cpu, the Ray executor): the run's `eval` settings then stand as written."""

    policy_gpu: int | None = None
    policy_device: str = "cpu"
    judge_gpus: tuple[int, ...] | None = None

    @property
    def shared(self) -> bool:
        """Whether the policy's GPU is one the judge runs on."""
        return self.policy_gpu is not None and self.judge_gpus is not None and self.policy_gpu in self.judge_gpus


def place(
    config: PlacementConfig,
    visible: Sequence[int],
    eval_gpus: Sequence[int] | None = None,
    rank: int = 0,
    processes: int = 1,
    gpu_judge: bool = True,
) -> Placement:
    """The placement of process `rank` of `processes` (accelerate's local ranks) on a host whose visible GPUs are
    `visible` (in torch's order); `eval_gpus`: the judge's GPUs as the eval settings name them, if they do;
    `gpu_judge`: whether the judge is a GPU backend of this host."""
    if not visible:
        if config.policy_gpu is not None:
            raise ConfigError(f"[placement] policy_gpu = {config.policy_gpu}, but this process sees no GPU")
        return Placement(judge_gpus=None)
    if processes > 1:
        if config.policy_gpu is not None:
            raise ConfigError(
                "[placement] policy_gpu is for one process: under `accelerate launch` each process trains on its own "
                "GPU (cuda:LOCAL_RANK); leave policy_gpu unset"
            )
        training = [visible[r % len(visible)] for r in range(processes)]
        policy = training[rank]
    else:
        policy = visible[0] if config.policy_gpu is None else config.policy_gpu
        if policy not in visible:
            raise ConfigError(f"[placement] policy_gpu = {policy} is not a visible GPU (visible: {list(visible)})")
        training = [policy]
    device = f"cuda:{list(visible).index(policy)}"
    if not gpu_judge:
        return Placement(policy, device, None)
    wanted = config.judge_gpus if config.judge_gpus is not None else (list(eval_gpus) if eval_gpus else "others")
    if wanted == "all" and processes > 1:
        raise ConfigError(
            '[placement] judge_gpus = "all" under `accelerate launch` would start one judge per process on every GPU; '
            'use "others" (the GPUs no process trains on) or a list, which the processes share out'
        )
    if wanted == "others":
        candidates = [g for g in visible if g not in training]
    elif wanted == "all":
        candidates = list(visible)
    else:
        candidates = list(wanted)
        unknown = sorted(set(candidates) - set(visible))
        if unknown:
            raise ConfigError(f"the judge's GPUs {unknown} are not visible GPUs (visible: {list(visible)})")
    mine = candidates[rank::processes] or [policy]
    others = sorted((set(training) - {policy}) & set(mine))
    if others:
        raise ConfigError(
            f"process {rank} would judge on GPU {others[0]}, where another process trains: its kernels would run "
            "beside the judge's timings; give the judge GPUs no process trains on"
        )
    return Placement(policy, device, tuple(mine))


def visible_gpus() -> list[int]:
    """The GPUs torch sees here, in its order, numbered as `eval.gpus` numbers them."""
    import torch

    if not torch.cuda.is_available():
        return []
    count = torch.cuda.device_count()
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return list(range(count))
    entries = [e.strip() for e in listed.split(",") if e.strip()][:count]
    if not all(e.isdigit() for e in entries):
        raise ConfigError(
            f"CUDA_VISIBLE_DEVICES={listed} names GPUs by UUID; name them by index, as [placement] and eval.gpus do"
        )
    return [int(e) for e in entries]


def launch_ranks() -> tuple[int, int]:
    """(this process's local rank, processes on this host): torchrun's, as `accelerate launch` sets them."""
    return int(os.environ.get("LOCAL_RANK", "0")), int(os.environ.get("LOCAL_WORLD_SIZE", "1"))


def place_run(config: PlacementConfig, eval_gpus: Sequence[int] | None, gpu_judge: bool) -> Placement:
    """`place` for this process, on the GPUs it sees."""
    rank, processes = launch_ranks()
    return place(config, visible_gpus(), eval_gpus, rank, processes, gpu_judge)
