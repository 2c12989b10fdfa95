"""The correctness calls beyond the main trials: one trial per extra shape set, and the late trial.

Both workers (the CPU task runner and the warm GPU worker) plan them the same way, on the trusted side and
before any candidate code exists:

* an **extra shape set** (`WorkerTask.extra_sizes`, from the problem's `EXTRA_SIZES` or derived from its
  shape constants) is applied to the reference module's globals, under which `Model` is built from
  `get_init_inputs()` (same secret seed) and one trial's inputs made; the candidate builds a fresh
  `ModelNew` from those init inputs, its weights bound from that model, and is called once.  A kernel
  that hard-codes the main shape fails there, and the message names the set.  A *derived* set the
  reference cannot build or run is skipped (the derivation guessed which constants are sizes); a
  declared one that fails is the problem's error;
* the **late trial** calls the main model once more, after every probe and shape trial and after enough
  unjudged calls that it is at least the forward's `candidate_runner.LATE_CALL`-th call, on fresh inputs
  from a secret seed: a forward that serves a cached answer once it has been called a dozen times fails
  there on every backend.

Timing never sees these calls: it runs on the main trials' inputs.

With `keep_inputs=False` (the keeper and the GPU worker) a planned trial keeps only its seed and input shapes:
`fresh_inputs()` makes its inputs again when the trial runs, so the plan holds no input set.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from tritongym.core.measure.tensors import tensor_bytes
from tritongym.core.models import describe_sizes


@dataclass
class PlannedTrial:
    """One correctness call after the main trials, with what the trusted side needs to judge it."""

    seed: int
    inputs: list | None  # kept inputs (cloned for each call), or None: made again from the seed (`remake`)
    sizes: dict | None = None  # the shape set applied to the reference module; None = the main shape
    late: bool = False
    ref_model: Any = None  # the shape set's reference model; None = the main one
    init_inputs: list | None = None  # the shape set's init inputs (the candidate builds a new ModelNew)
    input_shapes: list[list[int]] = field(default_factory=list)
    remake: Any = None  # () -> a fresh set of this trial's inputs, when they are not kept

    def fresh_inputs(self) -> list:
        """A set of this trial's inputs the caller owns: a clone of the kept set, or one made again from the seed."""
        from tritongym.core.measure.tensors import clone_all

        return clone_all(self.inputs) if self.inputs is not None else self.remake()

    def evidence_fields(self) -> dict:
        """The `TrialEvidence` fields that say which call this was."""
        return {"seed": self.seed, "sizes": self.sizes, "late": self.late, "input_shapes": self.input_shapes}

    def describe(self) -> str:
        return f"shape set {describe_sizes(self.sizes)}" if self.sizes is not None else "the late trial"


@contextlib.contextmanager
def sizes_applied(reference: ModuleType, sizes: dict | None):
    """The reference module's globals set to a shape set for the duration, then put back."""
    if not sizes:
        yield
        return
    namespace = vars(reference)
    saved = {k: namespace[k] for k in sizes if k in namespace}
    namespace.update(sizes)
    try:
        yield
    finally:
        for k in sizes:
            if k in saved:
                namespace[k] = saved[k]
            else:
                namespace.pop(k, None)


def _shapes(inputs: list) -> list[list[int]]:
    import torch

    return [list(v.shape) for v in inputs if isinstance(v, torch.Tensor)]


def late_seed(task) -> int:
    """Seed of the late trial's inputs: secret (derived from the init seed), unlike any trial's or the ghost's."""
    return (task.init_seed * 40503 + 0x1A7E) % (2**31)


def shape_seed(task, k: int) -> int:
    return (task.seeds[0] + 104729 * (k + 1)) % (2**31)


def plan_extra_trials(
    task, reference: ModuleType, device, make_inputs, build_reference, main_inputs=None, keep_inputs: bool = True
) -> list[PlannedTrial]:
    """The shape-set trials then the late trial, each with its inputs (and models), made before the import.

    A *derived* shape set whose inputs would be larger than `main_inputs` (or that many bytes: a constant the
    derivation took for a size divides one: halving it doubles the input) is skipped: a derived set checks that
    the kernel does not assume the sizes, and must never be what makes a problem run out of memory.  Without
    `keep_inputs` each trial's inputs are made once for their shapes, then dropped and made again from the seed
    when the trial runs (`PlannedTrial.fresh_inputs`)."""
    from tritongym.core.worker.stages import StageError, error_info

    main_bytes = main_inputs if isinstance(main_inputs, int) or main_inputs is None else tensor_bytes(main_inputs)
    planned: list[PlannedTrial] = []
    for k, overrides in enumerate(task.extra_sizes):
        sizes = {**task.sizes, **overrides}
        seed = shape_seed(task, k)
        try:
            with sizes_applied(reference, sizes):
                if task.extra_sizes_optional and main_bytes is not None:
                    weight = _meta_bytes(reference)
                    if weight is not None and weight > main_bytes:
                        skip(overrides, f"its inputs ({weight} bytes) are larger than the main shape's ({main_bytes})")
                        continue
                ref_model, init_inputs = build_reference(task, reference, device)
                inputs = make_inputs(reference, seed, device)
                if task.extra_sizes_optional:
                    _runs(ref_model, make_inputs(reference, seed ^ 0x5A5A, device))
        except StageError as exc:
            if task.extra_sizes_optional:
                skip(overrides, f"{exc.info.kind}: {exc.info.message}")
                continue
            raise StageError("problem", _at(overrides, exc.info)) from None
        except Exception as exc:
            if task.extra_sizes_optional:
                skip(overrides, f"{type(exc).__name__}: {exc}")
                continue
            raise StageError("problem", _at(overrides, error_info(exc))) from None
        planned.append(
            PlannedTrial(
                seed=seed,
                inputs=inputs if keep_inputs else None,
                sizes=dict(overrides),
                ref_model=ref_model,
                init_inputs=list(init_inputs),
                input_shapes=_shapes(inputs),
                remake=_remaker(reference, make_inputs, seed, device, sizes),
            )
        )
        del inputs
    if task.late_trial:
        inputs = make_inputs(reference, late_seed(task), device)
        planned.append(
            PlannedTrial(
                seed=late_seed(task),
                inputs=inputs if keep_inputs else None,
                late=True,
                input_shapes=_shapes(inputs),
                remake=_remaker(reference, make_inputs, late_seed(task), device, None),
            )
        )
        del inputs
    return planned


def _remaker(reference: ModuleType, make_inputs, seed: int, device, sizes: dict | None):
    """A trial's inputs made again from its seed, under its shape set (the module's globals put back after)."""

    def remake() -> list:
        with sizes_applied(reference, sizes):
            return make_inputs(reference, seed, device)

    return remake


def _meta_bytes(reference: ModuleType) -> int | None:
    """The bytes of `get_inputs()` under the module's current globals, weighed on the meta device (nothing is
    allocated); None when the inputs cannot be made there (an op without a meta kernel)."""
    import torch

    try:
        with torch.device("meta"):
            return tensor_bytes(reference.get_inputs())
    except Exception:  # noqa: BLE001 - unknown weight: the set is tried as before
        return None


def _runs(ref_model, other_inputs: list) -> None:
    """A derived set is tried on other inputs before the candidate exists (its trial's own reference
    output is computed only after the candidate has run); what this computes is dropped at once."""
    import torch

    with torch.no_grad():
        del_me = ref_model(*other_inputs)
    del del_me


def _at(sizes: dict, info):
    return info.model_copy(update={"message": f"at shape set {describe_sizes(sizes)}: {info.message}"})


def skip(sizes: dict, why: str) -> None:
    """A derived shape set the reference cannot run: said in the worker's log, then left out."""
    print(f"tritongym: derived shape set {describe_sizes(sizes)} skipped: {why[:300]}", file=sys.stderr, flush=True)


def shape_set_gold(reference: ModuleType, main_model, trial: PlannedTrial, outputs: list, generator) -> list:
    """The float64 gold of a shape set's trial, with the reference's own errors in each precision class there
    (`measure/gold.py`), so the `precision` check measures the class at every shape the kernel is judged at: the
    suite's log-softmax with its masked lanes loaded as 0 instead of -inf is exact at the problem's 2048 columns
    and 2e-3 off at 1537 (the padding's exp() summed in), inside the 1e-2 tolerance but a float16's error on a
    problem TF32 does not touch, and it survived the mutation benchmark on an H200 until the shape sets had gold.

    [] for the late trial: it runs at the problem's shape, where the main trials have measured the class.  Both
    workers call this after `reference_outputs`, with the same generator as the main trials' gold."""
    from tritongym.core.measure.gold import gold_model, gold_samples

    if trial.sizes is None:
        return []
    model = trial.ref_model if trial.ref_model is not None else main_model
    with sizes_applied(reference, trial.sizes):
        model64 = gold_model(model)
        samples = gold_samples(model64, trial.fresh_inputs(), outputs, generator, model)
    del model64
    return samples


def reference_outputs(
    task, reference: ModuleType, main_model, trial: PlannedTrial, updated: dict | None = None
) -> list | None:
    """The reference's outputs for one planned trial, under its shape set.

    None when the trial is a *derived* shape set the reference cannot run (skipped, said in the log); a
    declared set or the late trial that fails is the problem's error, raised as a `StageError` whose
    message names the shape set.  Both workers call this, so both judge the same trials.  `updated`, when given
    (the CPU worker), receives the inputs the reference changed in place (`reference_updates`)."""
    import torch

    from tritongym.core.measure.compare import flatten_outputs
    from tritongym.core.worker.op_trace import traced_call
    from tritongym.core.worker.stages import StageError, error_info

    model = trial.ref_model if trial.ref_model is not None else main_model
    try:
        mine = trial.fresh_inputs()
        with sizes_applied(reference, trial.sizes), torch.no_grad():
            raw, _, _ = traced_call(model, *mine)
        if updated is not None and trial.inputs is not None:
            updated.update(reference_updates(trial.inputs, mine))
        return flatten_outputs(raw)
    except Exception as exc:
        if trial.sizes is not None and task.extra_sizes_optional:
            skip(trial.sizes, f"{type(exc).__name__}: {exc}")
            return None
        info = error_info(exc)
        where = f"at {trial.describe()}: " if trial.sizes is not None else ""
        raise StageError("problem", info.model_copy(update={"message": where + info.message})) from None


def reference_updates(before: list, after: list) -> dict:
    """The inputs a reference's forward changed in place (`x.add_(y); return x`), by position: their values after
    it.  Such an update is part of what the forward does, so the candidate is held to make it, not refused for it."""
    import torch

    from tritongym.core.measure.tensors import same_value

    return {
        i: a
        for i, (b, a) in enumerate(zip(before, after))
        if isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor) and not same_value(a, b)
    }
