"""Runtime probes (DESIGN.md §4): calls of the candidate beyond the correctness trials, and what they show.

The trials alone leave room for hacks that give the right answer by the wrong means, so after them the
candidate's forward is called again, in the candidate's context (`run_probes`), as:

* `mode:grad+train`, `mode:no_grad+eval`, `mode:grad+eval`: grad mode and `eval()` mode, on trial
  inputs; a candidate whose Triton path only runs under `no_grad` (or in `train()`), falling back to
  torch otherwise, launches none of its kernels here;
* `refresh`: the very input buffers of the last trial, refilled *in place* with another trial's values
  (same pointers, new contents); a cache keyed on pointers returns the stale result;
* `repeat`: the same call again: an honest kernel agrees with itself (races and reads of uninitialised
  memory do not);
* `ghost`: every Triton kernel defined in the candidate skipped (its launches return at once), on inputs
  no call has seen; an output that still matches the reference was never computed by those kernels
  (a decoy, or memory that happened to hold the answer);
* `degenerate:<control>`: only on a problem degenerate for that negative control (`controls.py`), once on
  inputs transformed so that the control's answer is wrong there; compared with the reference *and* with
  the control's answer: a candidate giving the latter returned zeros, a constant or its input.

Reference outputs for the probes are computed by trusted code *before* the candidate is imported
(`reference_probe_outputs`); the comparison (`compare_probes`) also runs on the trusted side.  Two
snapshots bracket the candidate: `environment_snapshot` (the identity of every callable in the torch,
Triton and time namespaces that timing and comparison rely on, and the precision flags) and
`live_side_work` (Python threads and child processes); `environment_changes` and the side-work list
say what the candidate left behind.
"""

from __future__ import annotations

import os
import threading

MODE_PROBES: tuple[tuple[bool, bool], ...] = ((True, True), (False, False), (True, False))  # (grad, train)


def mode_probe_name(grad: bool, train: bool) -> str:
    return f"mode:{'grad' if grad else 'no_grad'}+{'train' if train else 'eval'}"


# --- trusted side, before the import ----------------------------------------------------------------------


def reference_probe_outputs(
    ref_model, trial_inputs: list[list], ghost_inputs: list, degenerate: list | None = None
) -> dict[str, list]:
    """The reference's outputs for each probe that compares with the reference (not `refresh`, whose
    reference is an ordinary trial's); for a degeneracy probe also the control's answer, under
    `NAME#control`.  `degenerate` holds (probe name, control, inputs, the other seed's inputs)."""
    import torch

    from tritongym.core.eval.worker.compare import flatten_outputs
    from tritongym.core.eval.worker.controls import control_answer
    from tritongym.core.eval.worker.tensors import clone_all

    def detached(value) -> list:
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in flatten_outputs(value)]

    refs: dict[str, list] = {}
    was_training = ref_model.training
    try:
        for k, (grad, train) in enumerate(MODE_PROBES):
            ref_model.train(train)
            with torch.set_grad_enabled(grad):
                refs[mode_probe_name(grad, train)] = detached(
                    ref_model(*clone_all(trial_inputs[k % len(trial_inputs)]))
                )
        ref_model.train(was_training)
        with torch.no_grad():
            refs["ghost"] = detached(ref_model(*clone_all(ghost_inputs)))
            for name, control, inputs, other_inputs in degenerate or []:
                refs[name] = detached(ref_model(*clone_all(inputs)))
                other = detached(ref_model(*clone_all(other_inputs))) if control == "other_seed_output" else []
                answer = control_answer(control, inputs, refs[name], other)
                if answer is not None:
                    refs[f"{name}#control"] = answer
    finally:
        ref_model.train(was_training)
    return refs


# --- candidate side ---------------------------------------------------------------------------------------


def run_probes(
    model,
    recorder,
    trial_inputs: list[list],
    last_buffers: list | None,
    ghost_inputs: list,
    degenerate_inputs: list | None = None,
) -> list:
    """Call the candidate as each probe says; returns plain records (outputs, launches, error) to compare.

    `degenerate_inputs`: (probe name, inputs) of the degeneracy probes, called last."""
    import torch

    from tritongym.core.eval.worker.compare import flatten_outputs
    from tritongym.core.eval.worker.tensors import clone_all, plain_output

    was_training = model.training
    records: list[dict] = []

    def call(name: str, trial: int, inputs: list, grad: bool, train: bool, ghost: bool = False) -> None:
        recorder.phase, recorder.ghost = ("probe", name), ghost
        error, outputs = "", []
        try:
            model.train(train)
            with torch.set_grad_enabled(grad):
                outputs = [plain_output(o) for o in flatten_outputs(model(*inputs))]
        except Exception as exc:  # noqa: BLE001 - a probe that raises is evidence, not a crash
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            recorder.phase, recorder.ghost = None, False
        records.append(
            {
                "probe": name,
                "trial": trial,
                "outputs": outputs,
                "launches": [rec.model_dump() for rec in recorder.records(("probe", name))],
                "error": error,
            }
        )

    try:
        n = len(trial_inputs)
        for k, (grad, train) in enumerate(MODE_PROBES):
            call(mode_probe_name(grad, train), k % n, clone_all(trial_inputs[k % n]), grad, train)
        if n > 1 and last_buffers is not None:
            source = trial_inputs[0]  # the last trial used trial n-1's values: these differ
            if _refill(last_buffers, source):
                call("refresh", 0, last_buffers, False, was_training)
                call("repeat", 0, last_buffers, False, was_training)
        call("ghost", -1, clone_all(ghost_inputs), False, was_training, ghost=True)
        for name, inputs in degenerate_inputs or []:
            call(name, -1, clone_all(inputs), False, was_training)
    finally:
        model.train(was_training)
    return records


def _refill(buffers: list, values: list) -> bool:
    """Copy `values` into `buffers` in place; False when the two do not line up (then no refresh probe)."""
    import torch

    if len(buffers) != len(values):
        return False
    for dst, src in zip(buffers, values):
        if isinstance(src, torch.Tensor):
            if type(dst) is not torch.Tensor or dst.shape != src.shape or dst.dtype != src.dtype:
                return False
    with torch.no_grad():
        for dst, src in zip(buffers, values):
            if isinstance(src, torch.Tensor):
                dst.copy_(src)
    return True


# --- trusted side, after the run ---------------------------------------------------------------------------


def compare_probes(records: list[dict], probe_refs: dict[str, list], trial_refs: list[list], tolerances) -> list:
    """`ProbeCall`s: each probe's outputs compared with its reference (`repeat`: with `refresh`'s outputs)."""
    from tritongym.core.eval.worker.compare import compare_output
    from tritongym.core.models import LaunchRecord, ProbeCall

    calls = []
    by_name = {r["probe"]: r for r in records}
    for record in records:
        name = record["probe"]
        if name == "repeat":
            earlier = by_name.get("refresh")
            refs = earlier["outputs"] if earlier else []
        elif name == "refresh":
            refs = trial_refs[record["trial"]]
        else:
            refs = probe_refs.get(name, [])
        outputs = record["outputs"]
        comparable = [(i, o, r) for i, (o, r) in enumerate(zip(outputs, refs)) if _is_tensor(r)]
        control = probe_refs.get(f"{name}#control", [])
        against_control = [(i, o, r) for i, (o, r) in enumerate(zip(outputs, control)) if _is_tensor(r)]
        calls.append(
            ProbeCall(
                probe=name,
                trial=record["trial"],
                outputs=[compare_output(i, o, r, tolerances) for i, o, r in comparable],
                n_outputs=len(outputs),
                ref_n_outputs=len(refs),
                launches=[LaunchRecord.model_validate(x) for x in record["launches"]],
                error=record["error"],
                control=name.removeprefix("degenerate:") if control else "",
                control_outputs=[compare_output(i, o, r, tolerances) for i, o, r in against_control],
            )
        )
    return calls


def _is_tensor(value) -> bool:
    import torch

    return type(value) is torch.Tensor


# --- what the candidate may leave behind --------------------------------------------------------------------

_PRECISION_FLAGS = (
    "torch.backends.cuda.matmul.allow_tf32",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    "torch.backends.cudnn.allow_tf32",
    "torch.backends.cudnn.benchmark",
    "torch.backends.cudnn.deterministic",
    "torch.backends.cudnn.enabled",
)


def _namespaces() -> dict[str, dict]:
    """Namespaces whose callables timing, comparison and the reference rely on, by the name shown."""
    import builtins
    import time

    import torch
    import torch.nn.functional

    spaces = {
        "torch": vars(torch),
        "torch.nn.functional": vars(torch.nn.functional),
        "torch.Tensor": vars(torch.Tensor),
        "torch._C.TensorBase": vars(torch._C.TensorBase),
        "torch.nn.Module": vars(torch.nn.Module),
        "torch.cuda": vars(torch.cuda),
        "torch.cuda.Event": vars(torch.cuda.Event),
        "torch.cuda.Stream": vars(torch.cuda.Stream),
        "torch.cuda.CUDAGraph": vars(torch.cuda.CUDAGraph),
        "torch.testing": vars(torch.testing),
        "time": vars(time),
        "builtins": vars(builtins),
    }
    try:
        import triton.testing

        spaces["triton.testing"] = vars(triton.testing)
    except ImportError:
        pass
    return spaces


def environment_snapshot() -> dict[str, object]:
    """Identity of every callable in the watched namespaces, and the value of every precision flag."""
    import torch

    snapshot: dict[str, object] = {}
    for space, members in _namespaces().items():
        for key, value in list(members.items()):
            if callable(value):
                snapshot[f"{space}.{key}"] = id(value)
    for flag in _PRECISION_FLAGS:
        snapshot[flag] = _flag_value(flag)
    snapshot["torch.get_float32_matmul_precision()"] = torch.get_float32_matmul_precision()
    snapshot["torch.get_default_dtype()"] = str(torch.get_default_dtype())
    snapshot["torch.are_deterministic_algorithms_enabled()"] = torch.are_deterministic_algorithms_enabled()
    return snapshot


def _flag_value(path: str):
    import torch

    value: object = torch
    for part in path.split(".")[1:]:
        value = getattr(value, part, None)
    return value if isinstance(value, (bool, int, str, type(None))) else repr(value)


def environment_changes(before: dict[str, object]) -> list[str]:
    """What differs from `before`: replaced or removed callables, changed flags (additions are lazy imports)."""
    after = environment_snapshot()
    changes = []
    for key, old in before.items():
        if key not in after:
            changes.append(f"{key} was removed")
        elif after[key] != old:
            if isinstance(old, int) and not isinstance(old, bool):
                changes.append(f"{key} was replaced")
            else:
                changes.append(f"{key} changed from {old!r} to {after[key]!r}")
    return changes


def live_side_work() -> set[tuple]:
    """Python threads and child processes alive now (native threads of torch and CUDA are not counted).

    A thread is keyed by its kernel thread id as well as its Python ident: the ident is the
    pthread handle, which the C library hands straight to the next thread once one ends, so a
    thread started after the snapshot could otherwise pass for one that had already finished.
    """
    alive: set[tuple] = {("thread", t.ident or 0, t.native_id or 0) for t in threading.enumerate() if t.is_alive()}
    for task in _tasks():
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                alive |= {("process", int(pid)) for pid in f.read().split()}
        except OSError:
            continue
    return alive


def _tasks() -> list[str]:
    try:
        return os.listdir("/proc/self/task")
    except OSError:
        return []


def describe_side_work(new: set[tuple], when: str) -> list[str]:
    names = {t.ident: t.name for t in threading.enumerate()}
    out = []
    for kind, ident, *_ in sorted(new):
        if kind == "thread":
            out.append(f"a Python thread ({names.get(ident, ident)}) was still running {when}")
        else:
            out.append(f"child process {ident} was still alive {when}")
    return out
