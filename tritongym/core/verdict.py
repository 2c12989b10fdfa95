"""Turn a backend's `Evidence` into a status and a message, in the parent process.

The worker only reports numbers; every decision about what they mean is made here, where the candidate
cannot reach.  The same `judge_trials` decides candidates and the negative controls of `problems check`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tritongym.core.models import INPUT_DISTRIBUTIONS, Evidence, ProbeCall, Status, TrialEvidence, WeightBinding

_MEMORY_HINTS = ("MemoryError", "MemoryLimit", "can't allocate memory", "out of memory", "OutOfMemory")


def is_memory_error(kind: str, message: str) -> bool:
    """An error that says memory ran out, in any of the words torch, CUDA and the worker use."""
    return any(h in message or h == kind for h in _MEMORY_HINTS)


def describe_distribution(name: str | None) -> str:
    """`inputs negated`: a trial's input distribution in words."""
    return INPUT_DISTRIBUTIONS[name][1] if name in INPUT_DISTRIBUTIONS else str(name)


@dataclass
class OutputJudgement:
    correct: bool
    message: str
    max_abs_err: float | None = None
    rel_norm_err: float | None = None


def judge_trials(trials: list[TrialEvidence]) -> OutputJudgement:
    """Correct only if every trial's every output has the exact type, shape, dtype and device of the
    reference's, no element outside tolerance, a small relative-norm error, and untouched inputs.  A trial whose
    inputs left the problem's domain (`TrialEvidence.out_of_domain`) is not judged and is named in the summary."""
    outside = [t for t in trials if t.out_of_domain]
    trials = [t for t in trials if not t.out_of_domain]
    if not trials:
        return OutputJudgement(False, "no trial ran")
    worst_abs: float | None = None
    worst_rel: float | None = None
    for trial in trials:
        for out in trial.outputs:
            if out.max_abs_err is not None:
                worst_abs = max(worst_abs or 0.0, out.max_abs_err)
            if out.rel_norm_err is not None:
                worst_rel = max(worst_rel or 0.0, out.rel_norm_err)
    for t, trial in enumerate(trials):
        failure = _trial_failure(trial.label(t), trial)
        if failure is not None:
            return OutputJudgement(False, failure + _hint(trial), worst_abs, worst_rel)
    shapes = sum(trial.sizes is not None for trial in trials)
    late = any(trial.late for trial in trials)
    summary = f"all {len(trials) - shapes - late} trials match"
    extras = [f"at {shapes} more shape set{'s' if shapes > 1 else ''}"] if shapes else []
    extras += ["in the late trial"] if late else []
    if extras:
        summary += ", and " + " and ".join(extras)
    if outside:
        named = sorted({describe_distribution(t.distribution) for t in outside})
        summary += f" ({len(outside)} more not judged: the reference gives NaN or inf on {', '.join(named)})"
    if worst_abs is not None:
        summary += f" (max abs error {worst_abs:.3g})"
    ties = sum(out.ties for trial in trials for out in trial.outputs)
    if ties:  # torch's order among equal values is a convention, not the answer (`measure/ties.py`)
        summary += f"; {ties} returned indices differ from the reference's only at tied values"
    rounded = sum(out.rounded for trial in trials for out in trial.outputs)
    if rounded:  # a float a rounding error from a half rounds either way (`measure/rounding.py`)
        summary += f"; {rounded} quantised values are one step from the reference's, at rounding boundaries"
    return OutputJudgement(True, summary, worst_abs, worst_rel)


def judge_every_trial(trials: list[TrialEvidence], planned: int | None = None) -> OutputJudgement:
    """Every trial that ran (main, shape sets, late) judged together and, where it is known how many were
    planned, none of them missing.  The one rule for "every trial matched": the pool tells a candidate `TIME`
    (timing) or `STOP` by it, and the Evaluator's ok verdict reports it."""
    judged = judge_trials(trials)
    if judged.correct and planned is not None and len(trials) < planned:
        missing = f"{planned - len(trials)} of {planned} planned trials did not run"
        return OutputJudgement(False, missing, judged.max_abs_err, judged.rel_norm_err)
    return judged


@dataclass
class ShapeJudgement:
    """The trials judged in three parts: at the problem's own shapes (the main trials), at the extra shape sets,
    and in the late trial.  `shapes`/`late` are None when no such trial ran (or the main trials already failed).

    `generality` is what the verdict records (`EvaluationResult.generality`): None where no shape set was judged,
    "general" where every one matched, "problem_shapes_only" where the main trials matched and a shape set did
    not (a kernel without masks for a size the problem's own shapes divide exactly)."""

    main: OutputJudgement
    shapes: OutputJudgement | None = None
    late: OutputJudgement | None = None

    @property
    def generality(self) -> str | None:
        if not self.main.correct or self.shapes is None:
            return None
        return "general" if self.shapes.correct else "problem_shapes_only"


def judge_shapes(trials: list[TrialEvidence]) -> ShapeJudgement:
    """The main trials, then (only if they match) the shape sets and the late trial, each judged on its own."""
    main = judge_trials([t for t in trials if t.sizes is None and not t.late])
    if not main.correct:
        return ShapeJudgement(main)
    at_shapes = [t for t in trials if t.sizes is not None]
    late = [t for t in trials if t.late]
    return ShapeJudgement(main, judge_trials(at_shapes) if at_shapes else None, judge_trials(late) if late else None)


SHAPE_SET_ERROR_PREFIX = "at shape set "  # how a shape-set call's error begins (`candidate_runner._where`)


def crashed_at_shape_set(evidence: Evidence) -> ShapeJudgement | None:
    """The trials judged as `judge_shapes` would, for a kernel that matched at every main trial and then failed with
    a runtime error (an exception, or on a GPU an illegal memory access) at a shape set: right at the problem's own
    shapes, wrong at another (`problem_shapes_only`), never `runtime_error` as if it failed at the problem's own
    inputs.  None for any other failure, or when a main trial is missing or wrong."""
    error = evidence.error
    if error is None or status_of_failure(evidence) != Status.runtime_error:
        return None
    if not error.message.startswith(SHAPE_SET_ERROR_PREFIX):
        return None
    main_trials = [t for t in evidence.trials if t.sizes is None and not t.late]
    main = judge_trials(main_trials)
    if not main_trials or not main.correct:
        return None
    where, _, what = error.message.partition(": ")
    return ShapeJudgement(main, OutputJudgement(False, f"{where}: the call raised {error.kind}: {what}"))


def shapes_only_message(at_problem: str, judged: ShapeJudgement) -> str:
    """`correct at the problem's shapes (M=1024, K=4096: all 5 trials match ...); wrong at shape set M=1537, ...`:
    what a verdict says of a kernel right at the problem's own shapes and wrong at another shape set."""
    assert judged.shapes is not None
    where = f"{at_problem}: " if at_problem else ""
    late = ", and in the late trial" if judged.late is not None and judged.late.correct else ""
    return f"correct at the problem's shapes ({where}{judged.main.message}{late}); wrong {judged.shapes.message}"


_SHAPE_HINT = (
    "; correctness is checked at more shapes than the main one: take every size from the inputs and the "
    "init arguments, never from constants, and mask partial blocks"
)
_LATE_HINT = (
    "; this call came after every probe, on fresh inputs: compute each call's answer from its inputs (a "
    "result cached after the first calls is stale here)"
)


def _hint(trial: TrialEvidence) -> str:
    return _SHAPE_HINT if trial.sizes is not None else _LATE_HINT if trial.late else ""


def _trial_failure(where: str, trial: TrialEvidence) -> str | None:
    """What is wrong with one trial, in words, or None when it matches."""
    if trial.n_outputs != trial.ref_n_outputs:
        return f"{where}: returned {trial.n_outputs} outputs, expected {trial.ref_n_outputs}"
    if not trial.inputs_unchanged:
        return f"{where}: the candidate modified its input(s) {trial.mutated_inputs}"
    if trial.inputs_unlike_reference:
        return (
            f"{where}: the reference updates its input(s) {trial.inputs_unlike_reference} in place, and the "
            "candidate left them otherwise"
        )
    for out in trial.outputs:
        label = f"{where}, output {out.index}"
        if not out.exact_type:
            return f"{label}: {out.note or 'not an exact torch.Tensor'}"
        for what, got, want in (
            ("shape", out.shape, out.ref_shape),
            ("dtype", out.dtype, out.ref_dtype),
            ("device", out.device, out.ref_device),
        ):
            if got != want:
                return f"{label}: {what} {got}, expected {want}"
        if out.mismatched:
            exact = out.ref_dtype is not None and not _floating(out.ref_dtype)  # indices, masks, counts
            if exact:  # compared exactly: no error to size
                return f"{label}: {out.mismatched} of {out.numel} values differ ({out.ref_dtype}, compared exactly)"
            detail = f"max abs error {out.max_abs_err:.4g}" if out.max_abs_err is not None else "non-finite values"
            return (
                f"{label}: {out.mismatched} of {out.numel} elements outside tolerance "
                f"(atol {out.atol:g}, rtol {out.rtol:g}); {detail}, mean abs error "
                f"{(out.mean_abs_err or 0):.4g}" + (f"; {out.note}" if out.note else "")
            )
        if out.rel_norm_err is not None and out.rel_norm_err > out.rel_norm_tol and out.numel:
            return (
                f"{label}: relative norm error {out.rel_norm_err:.4g} exceeds {out.rel_norm_tol:g} "
                f"(max abs error {out.max_abs_err:.4g})"
            )
    return None


def _floating(dtype: str) -> bool:
    return any(kind in dtype for kind in ("float", "complex", "bfloat"))


def status_of_failure(evidence: Evidence) -> Status | None:
    """The status a worker-side failure maps to, or None when the worker ran to the end."""
    error = evidence.error
    if error is None:
        return None
    if error.kind == "Timeout":
        return Status.timeout
    if error.kind in ("WorkerCrashed", "MemoryLimit") or is_memory_error(error.kind, error.message):
        return Status.crashed
    if evidence.stage == "import" or error.kind in ("CompilationError", "CompileTimeAssertionFailure"):
        return Status.compile_error
    return Status.runtime_error


def probes_in_domain(evidence: Evidence) -> list[ProbeCall]:
    """The probe calls to judge: all but those made on a main trial's inputs that left the problem's domain
    (`TrialEvidence.out_of_domain`: the reference itself gave NaN there, so no answer can be held against it)."""
    outside = {t for t, trial in enumerate(evidence.trials) if trial.out_of_domain}
    return [call for call in evidence.probes if call.trial is None or call.trial not in outside]


def probe_outputs_match(call: ProbeCall) -> OutputJudgement:
    """A probe call's outputs judged like a trial's (count, exact type, shape, dtype, values)."""
    if call.error:
        return OutputJudgement(False, f"the call raised {call.error}")
    trial = TrialEvidence(seed=0, outputs=call.outputs, n_outputs=call.n_outputs, ref_n_outputs=call.ref_n_outputs)
    judged = judge_trials([trial])
    judged.message = judged.message.replace("trial 0 (seed 0), ", "").replace("trial 0 (seed 0): ", "")
    return judged


DECOY_MARGIN = 0.25
"""How much closer than a decoy a value must be to count as this call's answer (`closer_than_decoy`).

A tolerance alone says too little where every answer is small or alike: a softmax over 4096 columns is below the
fp32 atol almost everywhere, and a large-K matmul of uniform inputs varies by 0.1% from one input to the next, so an
earlier call's output in a recycled block "matched" and honest kernels were judged `hacked` by `precomputed` and
`ghost`.  The decoy is the reference's answer to other inputs of the same distribution.  Anything that does not
depend on this call's inputs is, in expectation, at least half the decoy's distance from the answer (per element,
E|W - c| >= E|W - W'| / 2 for any c independent of W, by the triangle inequality), and measured on the CPU
(`tests/test_prior_answers.py`: softmax over 4096-65536 columns, relu, layer norm, row means, large-K matmuls,
stale answers to as-is, scaled, negated inputs) it was 0.62 of it or more; a copy of this call's answer computed
in fp16, or in TF32 as cuBLAS rounds, was 0.06 of it or less (rounded TF32 3e-4; a bf16 copy of a 65536-deep matmul
of uniform inputs, 0.42, is the precision check's to refuse).  A quarter sits between the two with room each side."""


def closer_than_decoy(err: float | None, decoy_err: float | None) -> bool:
    """Whether a value `err` (mean absolute error) from this call's answer is that answer rather than any answer:
    within `DECOY_MARGIN` of the decoy's distance `decoy_err` from it.  No decoy (None): the match alone decides.
    A decoy at distance 0 (the answer to other inputs is the same answer: `isnan` of finite inputs, `any` over a
    row of nonzeros) says no value is specific to this call: nothing is, and whether a constant answer passes is
    the `degenerate` check's question (FlagGems' isnan, isinf, all and any were `hacked` by ghost on an H200)."""
    if decoy_err is None:
        return True
    if decoy_err == 0:
        return False
    return err is not None and err <= DECOY_MARGIN * decoy_err


def probe_is_the_answer(call: ProbeCall) -> bool:
    """A probe call's outputs match the reference (`probe_outputs_match`) and are this call's answer, not just any
    answer: each output with a decoy (`ProbeCall.decoy_errs`) is closer to the reference than `DECOY_MARGIN` of
    the decoy's distance.  The ghost replay's test: stale memory holding an earlier call's output matches within a
    tolerance, but not specifically."""
    if not probe_outputs_match(call).correct:
        return False
    decoys = call.decoy_errs
    # a matching boolean or integer output matched exactly (no error is measured for it): its distance is 0
    return all(
        closer_than_decoy(
            out.mean_abs_err if out.mean_abs_err is not None else 0.0,
            decoys[out.index] if out.index < len(decoys) else None,
        )
        for out in call.outputs
    )


NEITHER = "its parameters match neither the reference's by name nor the shared seed's initialisation"


def weights_note(weights: WeightBinding, wrong: bool) -> str:
    """What a judged verdict says of the candidate's weights (`worker/weights.py`): how many were bound by name
    and how many came from the shared seed; on a wrong answer, the parameters that came from neither, if any
    (re-seeded, initialised in another order), since those, not the kernel, may be what is wrong."""
    if wrong and weights.unmatched:
        names = ", ".join(weights.unmatched[:4]) + (", ..." if len(weights.unmatched) > 4 else "")
        return (
            f"; {NEITHER} ({names}): name them as the reference does, or build them as its modules do, in the "
            "same order, without re-seeding"
        )
    parts = [f"{len(weights.bound)} bound by name"] if weights.bound else []
    parts += [f"{len(weights.seeded)} from the shared seed"] if weights.seeded else []
    parts += [f"{len(weights.unmatched)} from neither"] if weights.unmatched else []
    return f"; weights: {', '.join(parts)}" if parts else ""
