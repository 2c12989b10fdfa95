"""The second baseline: the problem's reference under `torch.compile`, built and checked in the worker.

The field reports speedups against eager PyTorch and, more demandingly, against `torch.compile` (KernelBench's
compiled baselines): a kernel that only beats eager may be doing what Inductor's fusion does for free.  The
GPU worker builds this baseline before any candidate code is imported, so it is as trusted as the eager
reference, and times it with the same `Timer`; the pool and the registry cache the timing per problem,
device class and precision, so Inductor compiles a problem once, not once per candidate.

Two settings keep the compiled baseline honest and the worker clean:

* Inductor's on-disk caches are off for this compile (`force_disable_caches`): a worker is shared with
  no candidate, but the cache directory outlives it, and a compiled artefact another process could have
  written would be trusted as the baseline;
* Inductor compiles in this process (`compile_threads = 1`): no compile-worker pool is left running, so
  the side-work check never sees a thread or process the reference started and blames the candidate.

A compiled reference whose outputs disagree with eager's (beyond the problem's tolerances) is not timed:
the compiled speedup of that problem stays unknown rather than measured against a different function.
"""

from __future__ import annotations

from collections.abc import Callable

from tritongym.core.worker_task import Tolerance

Forward = Callable[[list], object]


class CompiledReferenceUnavailable(Exception):
    """Why the compiled baseline cannot be timed; the evaluation goes on with the eager one alone."""


def compile_reference(ref_model, pairs, tolerances: dict[str, Tolerance]) -> Forward:
    """`torch.compile(ref_model)`, compiled now (first call per trial input) and checked against eager.

    `pairs` yields (a trial's inputs, eager's outputs for them), one trial at a time (the keeper makes the
    inputs again from their seeds and brings parked outputs back to the device for that trial only).

    Returns the forward to time; raises `CompiledReferenceUnavailable` naming what failed (the compile
    itself, or the output that differs)."""
    import torch
    import torch._inductor.config as inductor_config

    from tritongym.core.measure.compare import compare_output, flatten_outputs
    from tritongym.core.measure.tensors import clone_all
    from tritongym.core.models import TrialEvidence
    from tritongym.core.verdict import judge_trials

    inductor_config.force_disable_caches = True
    inductor_config.compile_threads = 1
    compiled = torch.compile(ref_model, dynamic=False)
    trials = []
    with torch.no_grad():
        for inputs, expected in pairs:
            try:
                outputs = flatten_outputs(compiled(*clone_all(inputs)))
            except Exception as exc:  # noqa: BLE001 - Inductor's failures are many; each is a reason, not a crash
                first = (str(exc).strip().splitlines() or [""])[0][:300]
                raise CompiledReferenceUnavailable(f"torch.compile failed: {type(exc).__name__}: {first}") from None
            comparisons = [
                compare_output(i, out, ref, tolerances) for i, (out, ref) in enumerate(zip(outputs, expected))
            ]
            trials.append(
                TrialEvidence(
                    seed=len(trials), outputs=comparisons, n_outputs=len(outputs), ref_n_outputs=len(expected)
                )
            )
    judgement = judge_trials(trials)  # the very test a candidate must pass, against the same eager outputs
    if not judgement.correct:
        raise CompiledReferenceUnavailable(f"torch.compile(reference) disagrees with eager: {judgement.message}")

    def forward(xs: list):
        return compiled(*xs)

    return forward
