"""The sandboxed worker: `python -m tritongym.core.worker LOGFILE`, task JSON on stdin.

Runs the correctness protocol of ARCHITECTURE.md §3 and reports numbers, never verdicts:

1. limits first (`apply_limits`), then stdout/stderr are pointed at LOGFILE; the result goes to a
   private duplicate of the original stdout, tagged with the task's nonce;
2. the reference problem is loaded, its size preset applied to its module globals, `Model` built under
   a secret per-task seed (its constant parameters then drawn away from their values: `weights.py`), and
   its outputs computed for every trial's inputs (distinct seeds), all before any candidate code exists;
3. the candidate runs in a forked child (`candidate_runner`) that closes the result channel first: it
   imports the candidate from a real file (Triton needs the source) with launch recording installed,
   builds `ModelNew` under the same seed as `Model`, copies in every parameter/buffer whose name and shape
   match `Model`'s and every other one equal to one of `Model`'s as built (`weights.bind_weights`), and
   runs each trial on its own clones of the inputs;
4. back here, its outputs are compared with the reference's (`compare_output`) and its inputs checked
   unchanged: the candidate never touches the reference, its outputs or the comparison.

After the probes come the extra trials of `trial_plan.py` (one per extra shape set, then the late trial),
planned with the main trials and judged the same way.

In `screen` mode negative controls stand in for a candidate (zeros, the reference output for another
seed's inputs, the identity) so degenerate problems are found, and each is also tried on transformed
inputs (`controls.py`) so that an evaluation can tell a candidate that gives the control's answer from
one that computes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import ModuleType

from tritongym.core.measure.tensors import clone_all, same_value, to_device
from tritongym.core.models import AutotuneChoice, ErrorInfo, Evidence, LaunchRecord, TrialEvidence
from tritongym.core.worker import lifeline
from tritongym.core.worker.controls import (
    CONTROLS,
    OTHER_SEED_OFFSET,
    TRANSFORMS,
    control_answer,
    transform_inputs,
)
from tritongym.core.worker.stages import StageError, apply_limits, error_info, failures_recorded, load_module
from tritongym.core.worker_task import WorkerTask

REFERENCE_MODULE = "tritongym_reference"


def load_reference(task: WorkerTask, workdir: str) -> ModuleType:
    path = os.path.join(workdir, "reference.py")
    try:
        module = load_module(REFERENCE_MODULE, path, task.problem_source)
        missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
        if missing:
            raise AttributeError(f"the problem defines no {', '.join(missing)} (KernelBench format needs all three)")
        vars(module).update(task.sizes)
    except Exception as exc:
        raise StageError("problem", error_info(exc, path)) from None
    return module


def make_inputs(reference: ModuleType, seed: int, device):
    """One input set from `seed`, made on `device`.

    On a GPU, `get_inputs` runs under `torch.device(device)`, so KernelBench's `torch.rand(...)` draws on the
    GPU: a full-size input (1.5 G elements) takes milliseconds there and seconds on the host, and the keeper
    and the candidate's worker draw every trial's and probe's set.  Both draw the same way on the same GPU, so
    the sets agree.  A `get_inputs` that cannot run there (a CPU generator passed explicitly) draws on the host
    and is copied, as before."""
    import torch

    torch.manual_seed(seed)
    if getattr(device, "type", str(device)) == "cuda":
        try:
            with torch.device(device):
                return [to_device(v, device) for v in reference.get_inputs()]
        except torch.OutOfMemoryError:
            raise
        except Exception:  # noqa: BLE001 - drawn on the host instead, from the same seed
            torch.manual_seed(seed)
    return [to_device(v, device) for v in reference.get_inputs()]


def build_reference(task: WorkerTask, reference: ModuleType, device):
    """Build `Model` before any candidate code is imported, so the candidate cannot break it: under the shared
    seed `ModelNew` is built under too, its constant parameters then drawn away from their values (`weights.py`,
    unless `task.draw_parameters` is off).  Every process that builds the reference builds it here."""
    import torch

    from tritongym.core.worker.weights import build_seed, draw_parameters, draw_seed

    try:
        torch.manual_seed(build_seed(task))
        init_inputs = reference.get_init_inputs()
        torch.manual_seed(build_seed(task))
        model = reference.Model(*init_inputs)
        if task.draw_parameters:
            draw_parameters(model, draw_seed(task))
        if task.eval_mode:  # it draws random numbers in train() mode only (`stochastic.py`): judged in eval() mode
            model.eval()
        return model.to(device), init_inputs
    except Exception as exc:
        raise StageError("problem", error_info(exc)) from None


def run_evaluate(task: WorkerTask, workdir: str, evidence: Evidence, private_fds: list[int]) -> None:
    """The candidate in a forked child first, then the reference outputs in this (trusted) process.

    The child is forked before any reference output exists, so a candidate that walks the worker's frames
    or heap finds inputs and the reference model, never an answer.  The reference runs after the child
    has exited, in this process, which the candidate never touched."""
    import torch

    from tritongym.core.measure.compare import compare_output, flatten_outputs
    from tritongym.core.measure.gold import exact_reference, gold_model, gold_samples
    from tritongym.core.worker.candidate_runner import fork_candidate
    from tritongym.core.worker.distributions import out_of_domain, output_scales, trial_distribution, trial_tolerances
    from tritongym.core.worker.distributions import trial_inputs as distributed_inputs
    from tritongym.core.worker.input_source import InputSource, ghost_seed, precomputed_seed
    from tritongym.core.worker.launches import LaunchRecorder
    from tritongym.core.worker.op_trace import traced_call
    from tritongym.core.worker.plugin_probes import probe_calls, reference_answers
    from tritongym.core.worker.probes import buffer_snapshot, compare_probes, prior_answers, reference_probe_outputs
    from tritongym.core.worker.trial_plan import (
        plan_extra_trials,
        reference_outputs,
        reference_updates,
        shape_set_gold,
    )

    device = torch.device(task.device)
    recorder = LaunchRecorder(os.path.join(workdir, "candidate.py"))
    try:
        recorder.install()  # here, not in the child: a broken Triton install is not the candidate's fault
    except Exception as exc:
        raise StageError("setup", error_info(exc)) from None
    install_autotune_policy()
    evidence.stage = "problem"
    reference = load_reference(task, workdir)
    ref_model, init_inputs = build_reference(task, reference, device)
    built = buffer_snapshot(ref_model)  # the mode probes start from the buffers as built
    trial_inputs = [distributed_inputs(make_inputs, reference, seed, k, device) for k, seed in enumerate(task.seeds)]
    wanted = set(task.probes)  # only the declared probes' inputs are made (the ghost's is `precomputed`'s decoy too)
    ghost_inputs = make_inputs(reference, ghost_seed(task), device) if wanted & {"ghost", "precomputed"} else None
    precomputed_inputs = make_inputs(reference, precomputed_seed(task), device) if "precomputed" in wanted else None
    extra = plan_extra_trials(task, reference, device, make_inputs, build_reference, trial_inputs[0])
    seeded = InputSource.seeded(task, reference, device, make_inputs)  # made once here: the parent judges them
    controls = seeded.degenerate if "degenerate" in wanted else []
    degenerate = [(d.name, d.control, xs, d.other()) for d in controls if (xs := d.inputs()) is not None]
    evidence.stage = "import"
    fresh = {name: make() for name, make in seeded.fresh.items()}  # plugin probes' own inputs
    source = InputSource.held(trial_inputs, ghost_inputs, precomputed_inputs, degenerate, fresh)
    report, why = fork_candidate(task, workdir, recorder, ref_model, init_inputs, source, device, private_fds, extra)
    if report is None:
        evidence.stage = "run"
        raise StageError("run", ErrorInfo(kind="WorkerCrashed", message=why))
    trials, golds = [], []
    updates: list[dict] = []  # per trial: the inputs the reference changed in place, their values after it
    model64 = gold_model(ref_model)
    generator = torch.Generator(device=device).manual_seed(task.init_seed ^ 0x601D)
    for k, (seed, inputs) in enumerate(zip(task.seeds, trial_inputs)):
        try:
            with torch.no_grad(), exact_reference():
                mine = clone_all(inputs)
                raw, ops, work = traced_call(ref_model, *mine)
                ref_out = flatten_outputs(raw)
                updates.append(reference_updates(inputs, mine))
        except Exception as exc:
            raise StageError("problem", error_info(exc)) from None
        evidence.reference_torch_ops = evidence.reference_torch_ops or ops
        evidence.reference_torch_work = evidence.reference_torch_work or work
        trials.append(({"seed": seed, "distribution": trial_distribution(k)}, inputs, ref_out))
        golds.append(gold_samples(model64, inputs, ref_out, generator, ref_model))
    del model64
    scales = [output_scales(refs) for _, _, refs in trials]
    tolerances = trial_tolerances(task.tolerances, scales)
    for (fields, _, _), outside in zip(trials, out_of_domain(scales)):
        fields["out_of_domain"] = outside
    sent_trials = list(report["trials"])
    main_sent, extra_sent = sent_trials[: len(trial_inputs)], sent_trials[len(trial_inputs) :]
    for planned, sent in zip(extra, extra_sent + [None] * (len(extra) - len(extra_sent))):
        updated: dict = {}
        ref_out = reference_outputs(task, reference, ref_model, planned, updated)
        if ref_out is not None and sent is not None:
            updates.append(updated)
            golds.append(shape_set_gold(reference, ref_model, planned, ref_out, generator))  # none for the late
            trials.append((planned.evidence_fields(), planned.inputs, ref_out))
            main_sent.append(sent)
    try:
        with exact_reference():
            probe_refs = reference_probe_outputs(ref_model, source, built=built, wanted=wanted)
            answers = reference_answers(ref_model, source, task.probes, built=built)
    except Exception as exc:
        raise StageError("problem", error_info(exc)) from None
    evidence.autotune = [AutotuneChoice.model_validate(c) for c in report.get("autotune", [])]
    evidence.weights = weight_binding(task, ref_model, report["weights"])
    evidence.phases.update(report["seconds"])
    for t, ((fields, inputs, refs), sent) in enumerate(zip(trials, main_sent)):
        outs = sent["outputs"]
        after = sent["inputs_after"]
        gold = golds[t] if t < len(golds) else [None] * len(refs)
        tol = tolerances[t] if t < len(tolerances) else task.tolerances
        mutated, unlike = inputs_left(after, inputs, updates[t] if t < len(updates) else {}, tol)
        evidence.trials.append(
            TrialEvidence(
                **fields,
                outputs=[
                    compare_output(i, o, r, tol, g, inputs=inputs)
                    for i, (o, r, g) in enumerate(zip(outs, refs, gold + [None] * (len(refs) - len(gold))))
                ],
                n_outputs=len(outs),
                ref_n_outputs=len(refs),
                inputs_unchanged=not mutated,
                mutated_inputs=mutated,
                inputs_unlike_reference=unlike,
                launches=[LaunchRecord.model_validate(r) for r in sent["launches"]],
                candidate_s=sent["candidate_s"],
            )
        )
    prior, decoys = report["prior"] or [], probe_refs.get("ghost", [])
    found = {"precomputed": prior_answers(prior, probe_refs.get("precomputed", []), task.tolerances, decoys)}
    main_refs = [t[2] for t in trials[: len(trial_inputs)]]
    evidence.probes = compare_probes(
        report["probes"], probe_refs, main_refs, task.tolerances, None, tolerances, found, trial_inputs=source.trial
    )
    evidence.probes += probe_calls(report.get("plugin_answers"), task.probes, answers)
    evidence.environment_changes = [str(c) for c in report["environment_changes"]]
    evidence.side_work = [str(c) for c in report["side_work"]]
    evidence.torch_ops = {str(k): int(v) for k, v in report["torch_ops"].items()}
    evidence.torch_work = {str(k): float(v) for k, v in report["torch_work"].items()}
    evidence.stage = report["stage"]
    if report["error"] is not None:
        raise StageError(report["stage"], ErrorInfo.model_validate(report["error"]))


def weight_binding(task: WorkerTask, ref_model, binding: dict):
    """The evidence's `WeightBinding`: the candidate's binding (its report) with the reference's draw."""
    from tritongym.core.models import WeightBinding
    from tritongym.core.worker.weights import draw_seed, drawn

    return WeightBinding(
        **{k: [str(v) for v in binding.get(k, [])] for k in ("bound", "seeded", "unmatched")},
        drawn=drawn(ref_model),
        draw_seed=draw_seed(task) if task.draw_parameters else None,
    )


def run_screen(
    task: WorkerTask, workdir: str, evidence: Evidence, hold=contextlib.nullcontext, lap=lambda part: None
) -> None:
    """Negative controls: each must fail the comparison, or the problem is degenerate; each is also
    compared on every transform of the inputs (`controls.py`), for the parent to pick one that breaks it.

    `hold()` is a shared hold of the GPU lock (`gpu_worker.Channel.gpu`), taken around each seed's and each
    transform's GPU work rather than the whole screen (seconds for a large problem): a timing elsewhere waits for
    one piece, never for all of them, and never runs beside one (on an H100: seven honest references in
    the KernelBench sweep timed ~2x slow in their drift checks while screens ran their forwards unlocked).

    `lap(part)` is called as each part ends (the keeper marks the timeline with it: a cold `eval`'s screen took
    4.4 s for a relu on an H200 and nothing said where)."""
    import torch

    from tritongym.core.measure.compare import compare_output, flatten_outputs
    from tritongym.core.worker.stochastic import screen_randomness

    device = torch.device(task.device)
    reference = load_reference(task, workdir)
    with hold():
        ref_model, _ = build_reference(task, reference, device)
        _synchronize(device)
    lap("build")
    controls: dict[str, list[TrialEvidence]] = {name: [] for name in CONTROLS}
    breaks: dict[str, dict[str, list[TrialEvidence]]] = {name: {t: [] for t in TRANSFORMS} for name in CONTROLS}
    evidence.stage = "run"

    def judged(seed: int, outs: list, refs: list) -> TrialEvidence:
        return TrialEvidence(
            seed=seed,
            outputs=[compare_output(i, o, r, task.tolerances) for i, (o, r) in enumerate(zip(outs, refs))],
            n_outputs=len(outs),
            ref_n_outputs=len(refs),
        )

    # one seed at a time, and within it one input transform at a time: a full-size KernelBench problem's input
    # set and output can each be 6 GiB, so holding every transform's inputs and outputs at once (ten sets)
    # ran the H100 out of memory; here at most five are alive (inputs, the other seed's outputs, a transform's
    # inputs, their clone for the call and its outputs)
    for k, seed in enumerate(task.seeds):
        with hold():
            inputs = make_inputs(reference, seed, device)
            if k == 0:  # a reference that draws random numbers (`stochastic.py`): in eval() mode from here on
                lap("inputs")
                evidence.stochastic, evidence.stochastic_note = screen_randomness(
                    ref_model, inputs, seed, task.tolerances
                )
                lap("randomness")
                if evidence.stochastic == "always":  # no one answer: the controls would judge draws
                    evidence.stage = "done"
                    return
            with torch.no_grad():
                refs = flatten_outputs(ref_model(*clone_all(inputs)))
                other = make_inputs(reference, seed + OTHER_SEED_OFFSET, device)
                other_refs = flatten_outputs(ref_model(*other))
                del other
            formed = []  # the controls that can be formed on these inputs (the identity needs a matching input)
            for name in CONTROLS:
                answer = control_answer(name, inputs, refs, other_refs)
                if answer is not None:
                    controls[name].append(judged(seed, answer, refs))
                    formed.append(name)
                del answer
            del refs
            _synchronize(device)
        lap(f"seed{k}_controls")
        for transform in TRANSFORMS:
            with hold():
                changed = transform_inputs(transform, inputs, seed)
                if changed is None:
                    continue
                try:
                    with torch.no_grad():
                        changed_refs = flatten_outputs(ref_model(*clone_all(changed)))
                except Exception:  # noqa: BLE001 - a reference that cannot take these inputs: another transform
                    continue
                for name in formed:
                    changed_answer = control_answer(name, changed, changed_refs, other_refs)
                    if changed_answer is not None:
                        breaks[name][transform].append(judged(seed, changed_answer, changed_refs))
                    del changed_answer
                del changed, changed_refs
                _synchronize(device)
            lap(f"seed{k}_{transform}")
        del inputs, other_refs
    evidence.controls = {k: v for k, v in controls.items() if v}
    evidence.control_breaks = {
        k: {t: v for t, v in per.items() if v} for k, per in breaks.items() if k in evidence.controls
    }
    evidence.stage = "done"


def _synchronize(device) -> None:
    """The GPU work queued so far finished before a hold is given back (a no-op off CUDA)."""
    if device.type == "cuda":
        from tritongym.core.measure import trusted

        trusted.synchronize(device)


def inputs_left(after: list, inputs: list, updated: dict, tolerances) -> tuple[list[int], list[int]]:
    """How the candidate left its inputs: those it changed where the reference leaves them alone, and those the
    reference updates in place (`updated`: their values after the reference) that the candidate left otherwise,
    judged as outputs are (an in-place update computed in another order differs in its last bits)."""
    from tritongym.core.measure.compare import compare_output
    from tritongym.core.models import TrialEvidence
    from tritongym.core.verdict import judge_trials

    mutated, unlike = [], []
    for i, (a, b) in enumerate(zip(after, inputs)):
        if a is None:
            continue
        if i in updated:
            compared = compare_output(i, a, updated[i], tolerances)
            if not judge_trials([TrialEvidence(seed=0, outputs=[compared], n_outputs=1, ref_n_outputs=1)]).correct:
                unlike.append(i)
        elif not same_value(a, b):
            mutated.append(i)
    return mutated, unlike


def install_autotune_policy() -> None:
    """Under Triton's interpreter, autotuned kernels run their first config after pruning (autotune.py), and the
    interpreter reads kernels as the compiler does (`interpreter_*.py`: and/or/not, libdevice, float arguments,
    builtins under aliases, a constexpr dtype's `.value`, boolean splats, a CUDA target for `driver.active`, a
    `tl.range` index as a scalar tensor).

    Installed before the candidate exists, in the trusted worker.  When Triton's internals differ from
    what the policy knows it leaves Triton alone and says why in the worker's log (the candidate's
    autotuned kernels then fail as they would without it)."""
    from tritongym.core.worker.autotune import install_interpreter_policy

    try:
        why = install_interpreter_policy()
    except Exception as exc:  # noqa: BLE001 - never the worker's end: Triton stays as it is
        why = f"{type(exc).__name__}: {exc}"
    if why:
        print(f"tritongym: the interpreter's autotune policy is not installed: {why}", file=sys.stderr, flush=True)
    from tritongym.core.worker.autotune import interpreting

    if interpreting():  # kernels as the compiler reads them (`interpreter_*.py`)
        from tritongym.core.worker import (
            interpreter_aliases,
            interpreter_bool_ops,
            interpreter_comparisons,
            interpreter_driver,
            interpreter_dtype_value,
            interpreter_float_args,
            interpreter_libdevice,
            interpreter_range,
        )

        for module, what in (
            (interpreter_bool_ops, "the interpreter's and/or/not are Python's"),
            (interpreter_libdevice, "libdevice does not run under the interpreter"),
            (interpreter_float_args, "float arguments stay Python floats under the interpreter"),
            (interpreter_aliases, "builtins under module aliases stay unbound under the interpreter"),
            (interpreter_dtype_value, "a constexpr dtype has no `.value` under the interpreter"),
            (interpreter_comparisons, "the interpreter splats a comparison in its left operand's type"),
            (interpreter_driver, "`triton.runtime.driver.active` has no driver under the interpreter"),
            (interpreter_range, "a `tl.range` index is a Python int under the interpreter"),
        ):
            try:
                why = module.install()
            except Exception as exc:  # noqa: BLE001 - never the worker's end: Triton stays as it is
                why = f"{type(exc).__name__}: {exc}"
            if why:
                print(f"tritongym: {what}: {why}", file=sys.stderr, flush=True)


def configure_precision(task: WorkerTask, candidate: bool = False) -> None:
    """The TF32 switches of torch's float32 matmuls and convolutions for the policy (core/precision.py).

    The reference's timing (`candidate=False`) runs in the policy's class: TF32 on under `tf32` and `half`, so a
    TF32 kernel is never timed against an exact float32 baseline.  The candidate's own torch calls
    (`candidate=True`) run as torch leaves them (matmuls exact, convolutions TF32) unless the policy is `ieee`
    (all exact): what KernelBench's harness and KernelGYM run a candidate with, and where a candidate that calls
    torch's matmul is judged as they judge it.  Forced into TF32, the reference itself failed KernelBench's
    tolerance on problems that sum a GEMM's outputs (level 2's 14 and 18, on an H100).  Switching the flags
    is the candidate's to leave alone under every policy (the `monkeypatch` and `environment` checks); TF32 in its
    own kernels (`tl.dot`'s default) is what the precision class measures.  The reference's *outputs* are always
    computed with it off (`gold.exact_reference`)."""
    import torch

    from tritongym.core.precision import tf32_enabled

    allow = tf32_enabled(task.precision)
    torch.backends.cuda.matmul.allow_tf32 = allow and not candidate
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow and not candidate else "highest")


def main() -> None:
    lifeline.hold()  # before anything else: a worker whose parent is already gone ends here
    log_path = sys.argv[1]
    task = WorkerTask.model_validate_json(sys.stdin.buffer.read())
    nonce, task.nonce = task.nonce, ""
    result_fd = os.dup(1)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    apply_limits(task)
    workdir = os.getcwd()
    evidence = Evidence()
    with failures_recorded(evidence):
        import torch

        from tritongym.core.fingerprint import local_fingerprint

        configure_precision(task, candidate=True)
        device = torch.device(task.device)
        evidence.stage = "problem"
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            evidence.fingerprint = local_fingerprint(props.name, cuda=torch.version.cuda)
        else:
            evidence.fingerprint = local_fingerprint()
        if task.mode == "screen":
            from tritongym.core.measure.gold import exact_reference

            with exact_reference():
                run_screen(task, workdir, evidence)
        else:
            run_evaluate(task, workdir, evidence, [result_fd])
    line = f"TRITONGYM-RESULT {nonce} {evidence.model_dump_json()}\n".encode()
    view = memoryview(line)
    while view:
        view = view[os.write(result_fd, view) :]
    os._exit(0)
