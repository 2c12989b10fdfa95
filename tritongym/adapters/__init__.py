"""Reward functions for trainers that are not tritongym's own (ARCHITECTURE.md §8: remote trainers).

* `tritongym.adapters.trl.TritonGymReward`: a TRL `reward_funcs` callable for `GRPOTrainer`;
* `tritongym.adapters.verl.compute_score`: verl's custom reward function (`custom_reward_function.path`),
  and `compute_score_batch` for verl's batch reward manager.

Both extract the code of each completion exactly as tritongym's own rollouts do, judge it through a
`client` (`scoring.EvaluationClient`: an in-process `Evaluator` by default, or `scoring.ServiceClient`
over the HTTP service's client) and report the verdict where the trainer logs it.  This package sits above
`tritongym.api` and `tritongym.service`, below the CLI; nothing in `core` imports it.
"""
