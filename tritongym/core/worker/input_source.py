"""Where the calls of an evaluation get their inputs: each set made when its call comes, not all held at once.

At full size one forward's inputs and outputs take 6-16 GiB and an evaluation makes a dozen calls, so holding
every set for the whole task ran an 80 GB GPU out of memory.  An `InputSource` hands out
a fresh set per call, owned by the caller (the candidate may mutate it): `seeded` makes it again from its seed
(`task_runner.make_inputs` is deterministic per seed and device; the keeper and the GPU worker), a main trial's
in its distribution (`distributions.py`: trial k's inputs scaled down, negated or scaled up), `held`
clones sets made up front (the CPU task runner's forked child, whose parent judges with its own copies).
In the worker a set is made after the candidate's import: a candidate that patches torch's random functions
is named by the environment check, and is judged against the keeper's inputs, which it never touched.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from tritongym.core.worker_task import WorkerTask

Make = Callable[[], list]


def ghost_seed(task: WorkerTask) -> int:
    """Seed of the ghost probe's inputs: secret (derived from the init seed) and unlike any trial's."""
    return (task.init_seed * 2654435761 + 0x6057) % (2**31)


def precomputed_seed(task: WorkerTask) -> int:
    """Seed of the `precomputed` probe's inputs: secret, unlike any trial's, the ghost's or the late trial's, and
    this task's alone (`WorkerTask.probe_seed`): no other process, another sample's worker or the keeper's
    shared record, ever computed their answer, so none can have left it in memory a buffer comes from."""
    return (task.init_seed * 1103515245 + task.probe_seed * 2246822519 + 0x9C0D) % (2**31)


def probe_inputs_seed(task: WorkerTask, name: str) -> int:
    """Seed of a plugin probe's own inputs (`ProbeSpec.fresh_inputs`): secret (derived from the init seed), unlike
    any trial's, and the same in every process of the draw, so the probe's trusted half gets the candidate's set."""
    return (task.init_seed * 40503 + zlib.crc32(name.encode()) + 0x9B0E) % (2**31)


def degenerate_seed(task: WorkerTask, k: int) -> int:
    """Seed of the k-th degeneracy probe's inputs: secret, like the ghost's, and unlike it."""
    return (task.init_seed * 69069 + 0xD6E + 7 * k) % (2**31)


@dataclass
class DegenerateInputs:
    """A degeneracy probe: name, control, its inputs (None: the transform does not apply) and the other seed's."""

    name: str
    control: str
    inputs: Callable[[], list | None]
    other: Make


@dataclass
class InputSource:
    """Fresh input sets on demand: the main trials by index, the ghost's, precomputed's and degeneracy probes', and
    the plugin probes' own (`fresh`)."""

    trials: list[Make]
    ghost: Make | None = None
    precomputed: Make | None = None
    degenerate: list[DegenerateInputs] = field(default_factory=list)
    fresh: dict[str, Make] = field(default_factory=dict)  # plugin probes with `fresh_inputs`, by name

    @property
    def n_main(self) -> int:
        return len(self.trials)

    def trial(self, k: int) -> list:
        return self.trials[k]()

    @classmethod
    def seeded(cls, task, reference, device, make_inputs) -> InputSource:
        """Every set made again from its seed (by `task_runner.make_inputs`) each time it is asked for."""
        from tritongym.core.worker.controls import OTHER_SEED_OFFSET, transform_inputs
        from tritongym.core.worker.distributions import trial_inputs
        from tritongym.core.worker.stages import StageError, error_info

        def seeded(seed: int) -> Make:
            return lambda: make_inputs(reference, seed, device)

        def trial(seed: int, k: int) -> Make:
            return lambda: trial_inputs(make_inputs, reference, seed, k, device)

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
        fresh = {name: seeded(probe_inputs_seed(task, name)) for name, spec in task.probes.items() if spec.fresh_inputs}
        return cls(
            [trial(seed, k) for k, seed in enumerate(task.seeds)],
            seeded(ghost_seed(task)),
            seeded(precomputed_seed(task)),
            degenerate,
            fresh,
        )

    @classmethod
    def held(
        cls,
        trial_inputs: list[list],
        ghost: list | None = None,
        precomputed: list | None = None,
        degenerate: list[tuple[str, str, list, list]] | None = None,
        fresh: dict[str, list] | None = None,
    ) -> InputSource:
        """Sets made once (`degenerate`: (name, control, inputs, the other seed's inputs); `fresh`: plugin probes'
        own, by name); each call clones one."""
        from tritongym.core.measure.tensors import clone_all

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
            {name: cloned(xs) for name, xs in (fresh or {}).items()},
        )
