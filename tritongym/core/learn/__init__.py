"""Learning (ARCHITECTURE.md §6-§7): the model's side of the gym.

The conversation with a model (`interaction`, `feedback`), model loading (`model_loading`), run configs and
the checked set-up of a run (`run_config`, `run_setup`), multi-turn rollouts through the evaluator
(`rollouts`), advantages and filters over turn batches (`learning`), the PPO loss (`policy_loss`), the RL
trainer (`trainer`, `training`), cold-start SFT (`sft`, `sft_data`, `sft_masks`) and what both trainers
share under accelerate (`accelerated`, `token_rows`).

May import: the kernel, `eval`, `registry`, `tune` (tuning as feedback).  torch, transformers and
accelerate only inside functions or in the trainer modules, which the CLI imports only for the commands
that train.
"""
