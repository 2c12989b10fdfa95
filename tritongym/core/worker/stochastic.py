"""Whether a problem's reference draws random numbers: found by the screen, before any candidate exists.

Two calls of the reference on the same inputs from two different states of torch's generators: outputs that differ
beyond the problem's tolerance mean the reference has no one answer for given inputs (`nn.Dropout` in train() mode,
`torch.rand_like` in forward; KernelBench level 2's 66 and 83).  The same two calls are then made in eval() mode:

* **"train_mode"**: they agree there (dropout and the like switch off).  Every evaluation of the problem judges
  `Model` and every `ModelNew` in eval() mode (`WorkerTask.eval_mode`: `task_runner.build_reference` and the
  candidate's build), the screen's controls run so too, and the mode probes that would call the forward in train()
  mode are not made: no call is judged whose answer is a draw;
* **"always"**: they differ in eval() mode too (random numbers drawn in forward whatever the mode): the Evaluator
  refuses the problem, naming what differed, instead of judging any candidate against one draw.

Outputs within tolerance of each other (a GPU's atomics summing in another order) are not random.  Trusted code
only: no candidate exists while this runs.
"""

from __future__ import annotations

FIRST_STATE, SECOND_STATE = 0x5EED1, 0x5EED2
"""The offsets of the two generator states (from the screen's seed) the two calls start from."""


def screen_randomness(model, inputs: list, seed: int, tolerances: dict) -> tuple[str | None, str]:
    """("train_mode" | "always" | None, what differed): the reference called twice on clones of `inputs`, in the mode
    it was built in (train()), then, if the two differ, twice in eval() mode.  The model is left in eval() mode for
    "train_mode" (the screen's controls then run as evaluations will), else as it was."""
    differs = _two_calls(model, inputs, seed, tolerances)
    if differs is None:
        return None, ""
    was_training = model.training
    model.eval()
    still = _two_calls(model, inputs, seed, tolerances)
    if still is None:
        return "train_mode", f"two calls on the same inputs differ in train() mode ({differs}), not in eval() mode"
    model.train(was_training)
    return "always", f"two calls on the same inputs differ in train() mode ({differs}) and in eval() mode ({still})"


def _two_calls(model, inputs: list, seed: int, tolerances: dict) -> str | None:
    """What differs between two calls on the same inputs from two generator states, in words; None: they agree."""
    import torch

    from tritongym.core.measure.compare import compare_output, flatten_outputs
    from tritongym.core.measure.tensors import clone_all
    from tritongym.core.models import TrialEvidence
    from tritongym.core.verdict import judge_trials

    outputs = []
    for offset in (FIRST_STATE, SECOND_STATE):
        torch.manual_seed((seed + offset) % (2**63))
        with torch.no_grad():
            outputs.append(flatten_outputs(model(*clone_all(inputs))))
    first, second = outputs
    trial = TrialEvidence(
        seed=seed,
        outputs=[compare_output(i, b, a, tolerances) for i, (a, b) in enumerate(zip(first, second))],
        n_outputs=len(second),
        ref_n_outputs=len(first),
    )
    judged = judge_trials([trial])
    return None if judged.correct else judged.message.replace(f"trial 0 (seed {seed}), ", "")
