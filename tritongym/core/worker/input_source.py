"""Where the calls of an evaluation get their inputs: each set made when it is needed, not all held at once.

A KernelBench problem at full size can take 6 to 16 GiB for one forward's inputs and outputs; an evaluation
calls the forward on a dozen input sets (the trials, the probes' ghost, precomputed and degeneracy inputs),
so holding every set for the whole task ran an 80 GB GPU out of memory on problems whose one forward fits
easily (issue 27 item 1).  An `InputSource` hands out one set at a time instead, each a fresh set the caller
owns (the candidate may mutate it):

* `InputSource.seeded` makes each set again from its seed when asked (`task_runner.make_inputs` is
  deterministic per seed and device): the keeper and the GPU worker hold no set between calls;
* `InputSource.held` clones sets made once up front: the CPU task runner's forked candidate, whose trusted
  parent keeps its own copies to judge with (nothing changes there).

Seeds and transforms are the ones `task_runner` defines (`ghost_seed`, `precomputed_seed`,
`degenerate_seed`), so the keeper's reference and the worker's candidate see the same values.  In the worker
a set is made after the candidate was imported; a candidate that replaces `torch.manual_seed` or a random
function to change what it is called on is named by the environment check (`probes.environment_changes`),
and its outputs are judged against the keeper's inputs, which it never touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Make = Callable[[], list]


@dataclass
class DegenerateInputs:
    """One degeneracy probe: its name, its control, its transformed inputs (None: the transform does not apply
    to this problem, and there is no such probe) and, for the reference's side, the other seed's inputs."""

    name: str
    control: str
    inputs: Callable[[], list | None]
    other: Make


@dataclass
class InputSource:
    """Fresh input sets on demand: the main trials by index, the ghost, precomputed and degeneracy probes'."""

    trials: list[Make]
    ghost: Make | None = None
    precomputed: Make | None = None
    degenerate: list[DegenerateInputs] = field(default_factory=list)

    @property
    def n_main(self) -> int:
        return len(self.trials)

    def trial(self, k: int) -> list:
        """A fresh set of main trial `k`'s inputs."""
        return self.trials[k]()

    @classmethod
    def seeded(cls, task, reference, device) -> InputSource:
        """Every set made again from its seed each time it is asked for (nothing is held)."""
        from tritongym.core.worker.controls import OTHER_SEED_OFFSET, transform_inputs
        from tritongym.core.worker.stages import StageError, error_info
        from tritongym.core.worker.task_runner import degenerate_seed, ghost_seed, make_inputs, precomputed_seed

        def seeded(seed: int) -> Make:
            return lambda: make_inputs(reference, seed, device)

        def transformed(transform: str, seed: int) -> Callable[[], list | None]:
            def make() -> list | None:
                try:
                    return transform_inputs(transform, make_inputs(reference, seed, device), seed)
                except Exception as exc:
                    raise StageError("problem", error_info(exc)) from None

            return make

        degenerate = [
            DegenerateInputs(
                f"degenerate:{control}",
                control,
                transformed(transform, degenerate_seed(task, k)),
                seeded(degenerate_seed(task, k) + OTHER_SEED_OFFSET),
            )
            for k, (control, transform) in enumerate(sorted(task.degenerate.items()))
        ]
        return cls(
            [seeded(seed) for seed in task.seeds],
            seeded(ghost_seed(task)),
            seeded(precomputed_seed(task)),
            degenerate,
        )

    @classmethod
    def held(
        cls,
        trial_inputs: list[list],
        ghost: list | None = None,
        precomputed: list | None = None,
        degenerate: list[tuple[str, str, list, list]] | None = None,
    ) -> InputSource:
        """Sets made once (`degenerate` as `task_runner.degenerate_probes` gives them); each call clones one."""
        from tritongym.core.worker.tensors import clone_all

        def cloned(values: list | None) -> Make | None:
            return None if values is None else (lambda: clone_all(values))

        return cls(
            [cloned(xs) for xs in trial_inputs],
            cloned(ghost),
            cloned(precomputed),
            [
                DegenerateInputs(name, control, cloned(xs), cloned(other))
                for name, control, xs, other in degenerate or []
            ],
        )
