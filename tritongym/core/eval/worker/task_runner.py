"""The sandboxed worker: `python -m tritongym.core.eval.worker LOGFILE`, task JSON on stdin.

Runs the correctness protocol of DESIGN.md §3 and reports numbers, never verdicts:

1. limits first (`apply_limits`), then stdout/stderr are pointed at LOGFILE; the result goes to a
   private duplicate of the original stdout, tagged with the task's nonce;
2. the reference problem is loaded, its size preset applied to its module globals, `Model` built under
   a secret per-task seed, and its outputs computed for every trial's inputs (distinct seeds), all
   before any candidate code exists;
3. the candidate runs in a forked child (`candidate_runner`) that closes the result channel first: it
   imports the candidate from a real file (Triton needs the source) with launch recording installed,
   builds `ModelNew` under a different seed, copies in every parameter/buffer whose name and shape
   match `Model`'s, and runs each trial on its own clones of the inputs;
4. back here, its outputs are compared with the reference's (`compare_output`) and its inputs checked
   unchanged: the candidate never touches the reference, its outputs or the comparison.

In `screen` mode negative controls stand in for a candidate (zeros, the reference output for another
seed's inputs, the identity) so degenerate problems are found.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

from tritongym.core.eval.worker.stages import StageError, apply_limits, error_info, failures_recorded, load_module
from tritongym.core.eval.worker.tensors import clone_all, same_value, to_device
from tritongym.core.models import AutotuneChoice, ErrorInfo, Evidence, LaunchRecord, TrialEvidence
from tritongym.core.worker_task import WorkerTask

REFERENCE_MODULE = "tritongym_reference"
_OTHER_SEED_OFFSET = 7919


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
    import torch

    torch.manual_seed(seed)
    return [to_device(v, device) for v in reference.get_inputs()]


def ghost_seed(task: WorkerTask) -> int:
    """Seed of the ghost probe's inputs: secret (derived from the init seed) and unlike any trial's."""
    return (task.init_seed * 2654435761 + 0x6057) % (2**31)


def build_reference(task: WorkerTask, reference: ModuleType, device):
    """Build `Model` (seeded) before any candidate code is imported, so the candidate cannot break it."""
    import torch

    try:
        torch.manual_seed(task.init_seed)
        init_inputs = reference.get_init_inputs()
        torch.manual_seed(task.init_seed)
        return reference.Model(*init_inputs).to(device), init_inputs
    except Exception as exc:
        raise StageError("problem", error_info(exc)) from None


def run_evaluate(task: WorkerTask, workdir: str, evidence: Evidence, private_fds: list[int]) -> None:
    """The candidate in a forked child first, then the reference outputs in this (trusted) process.

    The child is forked before any reference output exists, so a candidate that walks the worker's frames
    or heap finds inputs and the reference model, never an answer.  The reference runs after the child
    has exited, in this process, which the candidate never touched."""
    import torch

    from tritongym.core.eval.worker.candidate_runner import fork_candidate
    from tritongym.core.eval.worker.compare import compare_output, flatten_outputs
    from tritongym.core.eval.worker.launches import LaunchRecorder
    from tritongym.core.eval.worker.op_trace import traced_call
    from tritongym.core.eval.worker.probes import compare_probes, reference_probe_outputs

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
    trial_inputs = [make_inputs(reference, seed, device) for seed in task.seeds]
    ghost_inputs = make_inputs(reference, ghost_seed(task), device)
    evidence.stage = "import"
    report, why = fork_candidate(
        task, workdir, recorder, ref_model, init_inputs, trial_inputs, device, private_fds, ghost_inputs
    )
    if report is None:
        evidence.stage = "run"
        raise StageError("run", ErrorInfo(kind="WorkerCrashed", message=why))
    trials = []
    for seed, inputs in zip(task.seeds, trial_inputs):
        try:
            with torch.no_grad():
                raw, ops = traced_call(ref_model, *clone_all(inputs))
                ref_out = flatten_outputs(raw)
        except Exception as exc:
            raise StageError("problem", error_info(exc)) from None
        evidence.reference_torch_ops = evidence.reference_torch_ops or ops
        trials.append((seed, inputs, ref_out))
    try:
        probe_refs = reference_probe_outputs(ref_model, trial_inputs, ghost_inputs)
    except Exception as exc:
        raise StageError("problem", error_info(exc)) from None
    evidence.autotune = [AutotuneChoice.model_validate(c) for c in report.get("autotune", [])]
    evidence.bound_weights, evidence.unbound_weights = list(report["bound"]), list(report["unbound"])
    for (seed, inputs, refs), sent in zip(trials, report["trials"]):
        outs = sent["outputs"]
        after = sent["inputs_after"]
        mutated = [i for i, (a, b) in enumerate(zip(after, inputs)) if a is not None and not same_value(a, b)]
        evidence.trials.append(
            TrialEvidence(
                seed=seed,
                outputs=[compare_output(i, o, r, task.tolerances) for i, (o, r) in enumerate(zip(outs, refs))],
                n_outputs=len(outs),
                ref_n_outputs=len(refs),
                inputs_unchanged=not mutated,
                mutated_inputs=mutated,
                launches=[LaunchRecord.model_validate(r) for r in sent["launches"]],
                candidate_s=sent["candidate_s"],
            )
        )
    evidence.probes = compare_probes(report["probes"], probe_refs, [t[2] for t in trials], task.tolerances)
    evidence.environment_changes = [str(c) for c in report["environment_changes"]]
    evidence.side_work = [str(c) for c in report["side_work"]]
    evidence.torch_ops = {str(k): int(v) for k, v in report["torch_ops"].items()}
    evidence.stage = report["stage"]
    if report["error"] is not None:
        raise StageError(report["stage"], ErrorInfo.model_validate(report["error"]))


def run_screen(task: WorkerTask, workdir: str, evidence: Evidence) -> None:
    """Negative controls: each must fail the comparison, or the problem is degenerate."""
    import torch

    from tritongym.core.eval.worker.compare import compare_output, flatten_outputs

    device = torch.device(task.device)
    reference = load_reference(task, workdir)
    ref_model, _ = build_reference(task, reference, device)
    controls: dict[str, list[TrialEvidence]] = {"zeros": [], "other_seed_output": [], "identity": []}
    evidence.stage = "run"
    for seed in task.seeds:
        inputs = make_inputs(reference, seed, device)
        other = make_inputs(reference, seed + _OTHER_SEED_OFFSET, device)
        with torch.no_grad():
            refs = flatten_outputs(ref_model(*clone_all(inputs)))
            other_refs = flatten_outputs(ref_model(*other))
        tensors = [v for v in inputs if isinstance(v, torch.Tensor)]
        guesses = {
            "zeros": [torch.zeros_like(r) for r in refs],
            "other_seed_output": other_refs,
            "identity": [next((t for t in tensors if t.shape == r.shape and t.dtype == r.dtype), None) for r in refs],
        }
        for name, outs in guesses.items():
            if any(o is None for o in outs):
                continue  # the identity is impossible when no input has the output's shape and dtype
            controls[name].append(
                TrialEvidence(
                    seed=seed,
                    outputs=[compare_output(i, o, r, task.tolerances) for i, (o, r) in enumerate(zip(outs, refs))],
                    n_outputs=len(outs),
                    ref_n_outputs=len(refs),
                )
            )
    evidence.controls = {k: v for k, v in controls.items() if v}
    evidence.stage = "done"


def install_autotune_policy() -> None:
    """Under Triton's interpreter, autotuned kernels run their first config after pruning (autotune.py).

    Installed before the candidate exists, in the trusted worker.  When Triton's internals differ from
    what the policy knows it leaves Triton alone and says why in the worker's log (the candidate's
    autotuned kernels then fail as they would without it)."""
    from tritongym.core.eval.worker.autotune import install_interpreter_policy

    try:
        why = install_interpreter_policy()
    except Exception as exc:  # noqa: BLE001 - never the worker's end: Triton stays as it is
        why = f"{type(exc).__name__}: {exc}"
    if why:
        print(f"tritongym: the interpreter's autotune policy is not installed: {why}", file=sys.stderr, flush=True)


def configure_precision(task: WorkerTask) -> None:
    import torch

    allow = task.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")


def main() -> None:
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

        configure_precision(task)
        device = torch.device(task.device)
        evidence.stage = "problem"
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            evidence.fingerprint = local_fingerprint(props.name, cuda=torch.version.cuda)
        else:
            evidence.fingerprint = local_fingerprint()
        if task.mode == "screen":
            run_screen(task, workdir, evidence)
        else:
            run_evaluate(task, workdir, evidence, [result_fd])
    line = f"TRITONGYM-RESULT {nonce} {evidence.model_dump_json()}\n".encode()
    view = memoryview(line)
    while view:
        view = view[os.write(result_fd, view) :]
    os._exit(0)
