"""Runtime probes (ARCHITECTURE.md §4): calls of the candidate beyond the correctness trials, and what they show.

The trials alone leave room for hacks that give the right answer by the wrong means, so after them the
candidate's forward is called again, in the candidate's context (`run_probes`), as:

* `mode:grad+train`, `mode:no_grad+eval`, `mode:grad+eval`: grad mode and `eval()` mode, on trial
  inputs; a candidate whose Triton path only runs under `no_grad` (or in `train()`), falling back to
  torch otherwise, launches none of its kernels here;
* `refresh`: the very input buffers of the last trial, refilled *in place* with another trial's values
  (same pointers, new contents); a cache keyed on pointers returns the stale result;
* `repeat`: the same call again, compared with the reference like `refresh` (not with `refresh`'s outputs:
  two honest calls may differ by float reassociation, split-K atomics for one, and each be right; races
  and reads of memory never written are wrong);
* `ghost`: every Triton kernel defined in the candidate skipped (its launches return at once), on inputs
  no call has seen; an output that still matches the reference, and matches it far better than the reference's
  answer to other inputs does (`ProbeCall.decoy_errs`, `verdict.probe_is_the_answer`: an earlier call's output
  left in a recycled block is not this call's answer), was never computed by those kernels (a decorative
  kernel, or an answer torch computed and left in memory);
* `precomputed`: inputs no other call saw, with every tensor the candidate allocates during the call poisoned
  (`scrub.poisoned_allocations`: no fresh buffer holds anything) and a `PriorAnswerWatch` on the launches
  (`prior_watch.py`): before each launch of an own kernel, every tensor argument no own kernel wrote (not an
  input, not a weight) is sampled in each form that could hold an output (its elements, its bits as the output's
  dtype, its bytes); the trusted side finds any that already held an output's values, closer
  to them than the reference's answer to other inputs is (a decoy, `verdict.closer_than_decoy`).  Triton that
  only moves an answer torch, numpy or a callback (a grid lambda, an autotune hook) computed adds no
  arithmetic to it (`prior_answers`, the `precomputed` check);
* `degenerate:<control>`: only on a problem degenerate for that negative control (`controls.py`), once on
  inputs transformed so that the control's answer is wrong there; compared with the reference *and* with
  the control's answer: a candidate giving the latter returned zeros, a constant or its input.

Each is a registered probe (`tritongym.plugins.probes.builtin`, under the names of `worker_task.BUILTIN_PROBES`:
`modes` for the three mode calls, `degenerate` for the degeneracy ones), and runs only when an enabled check
declares it (`wanted`, the task's `WorkerTask.probes`), on both sides; their calls stay hard-wired here, since they
share the reference outputs, the launch recorder's `ghost` and `watch` switches and the trusted comparison of
whole outputs.  A plugin's probes (`plugin_probes.py`) are called after these; every call ends as one `ProbeCall`
in `Evidence.probes`.

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
from collections.abc import Collection

from tritongym.core.worker.prior_watch import PriorAnswerWatch, watched_positions
from tritongym.core.worker_task import BUILTIN_PROBES

MODE_PROBES: tuple[tuple[bool, bool], ...] = ((True, True), (False, False), (True, False))  # (grad, train)


def mode_probe_name(grad: bool, train: bool) -> str:
    return f"mode:{'grad' if grad else 'no_grad'}+{'train' if train else 'eval'}"


def runs_on_trial_values(name: str) -> bool:
    """Whether probe `name` is called on a main trial's own input values (the mode probes; refresh and repeat, on
    trial 0's values refilled into the last call's buffers), so that trial's inputs judge its index outputs' ties."""
    return name.startswith("mode:") or name in ("refresh", "repeat")


def buffer_snapshot(model) -> dict:
    """The model's buffers as built (by name), for `restore_buffers` before each mode probe.

    A forward in `train()` mode updates buffers (BatchNorm's running statistics), and an `eval()` forward
    reads them: its output depends on every train-mode call made before.  The reference (in the keeper, after
    its trials, shape sets and input transforms) and the candidate (after its own trials) have made different
    calls, so the reference itself, run as the candidate, differed from the reference under `eval()` and was
    called a mode hack (KernelBench level 1, 33_BatchNorm).  Each mode probe starts from the buffers both
    models were built with (the candidate's are bound to the reference's, `bind_weights`)."""
    import torch

    with torch.no_grad():
        return {name: b.detach().clone() for name, b in model.named_buffers()}


def restore_buffers(model, snapshot: dict | None) -> None:
    """The buffers back to `snapshot`'s values, in place (a buffer since replaced or reshaped is left alone)."""
    import torch

    if not snapshot:
        return
    with torch.no_grad():
        for name, b in model.named_buffers():
            saved = snapshot.get(name)
            if saved is not None and saved.shape == b.shape and saved.dtype == b.dtype:
                b.copy_(saved)


# --- trusted side, before the import ----------------------------------------------------------------------


def reference_probe_outputs(
    ref_model, source, keep=None, same_as_trial=None, built=None, wanted: Collection[str] = BUILTIN_PROBES
) -> dict[str, list]:
    """The reference's outputs for each `wanted` probe that compares with the reference (not `refresh` or
    `repeat`, whose reference is an ordinary trial's; the ghost's also when only `precomputed` is wanted: it is
    that probe's decoy); for a degeneracy probe also the control's answer, under `NAME#control`.  `source`
    (`input_source.py`) makes each probe's inputs when needed; `keep` turns each probe's outputs into what is held
    (the keeper parks large ones in host memory).  A mode probe runs on a trial's inputs: `same_as_trial(trial,
    outputs)` returns that trial's stored outputs when these equal them exactly (a reference without dropout or
    batch statistics), so one copy is held, not two.  `built`: the model's buffers as built (`buffer_snapshot`),
    restored before each mode probe."""
    import torch

    from tritongym.core.measure.compare import flatten_outputs
    from tritongym.core.measure.tensors import clone_all
    from tritongym.core.worker.controls import control_answer

    keep = keep or (lambda outputs: outputs)

    def detached(value) -> list:
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in flatten_outputs(value)]

    refs: dict[str, list] = {}
    was_training = ref_model.training
    try:
        for k, (grad, train) in enumerate(MODE_PROBES if "modes" in wanted else ()):
            restore_buffers(ref_model, built)
            ref_model.train(train)
            with torch.set_grad_enabled(grad):
                outputs = detached(ref_model(*source.trial(k % source.n_main)))
            stored = same_as_trial(k % source.n_main, outputs) if same_as_trial else None
            refs[mode_probe_name(grad, train)] = stored if stored is not None else keep(outputs)
            del outputs
        ref_model.train(was_training)
        with torch.no_grad():
            if "ghost" in wanted or "precomputed" in wanted:
                refs["ghost"] = keep(detached(ref_model(*source.ghost())))
            if source.precomputed is not None and "precomputed" in wanted:
                refs["precomputed"] = keep(detached(ref_model(*source.precomputed())))
            for probe in source.degenerate if "degenerate" in wanted else ():
                inputs = probe.inputs()
                if inputs is None:
                    continue  # the transform does not apply: no such probe (the worker skips it alike)
                outputs = detached(ref_model(*clone_all(inputs)))
                other = detached(ref_model(*probe.other())) if probe.control == "other_seed_output" else []
                answer = control_answer(probe.control, inputs, outputs, other)
                del other
                refs[probe.name] = keep(outputs)
                if answer is not None:
                    refs[f"{probe.name}#control"] = keep(answer)
                del inputs, outputs, answer
    finally:
        ref_model.train(was_training)
    return refs


# --- candidate side ---------------------------------------------------------------------------------------


def run_probes(
    model,
    recorder,
    source,
    last_buffers: list | None,
    watch: PriorAnswerWatch | None = None,
    on_outputs=None,
    built: dict | None = None,
    train_mode: bool = True,
    wanted: Collection[str] = BUILTIN_PROBES,
) -> list:
    """Call the candidate as each `wanted` probe says; returns plain records (outputs, launches, error) to compare.

    `source` (`input_source.py`) makes each call's inputs when it comes; the `precomputed` call runs under
    `watch` (samples in `watch.records`), the degeneracy probes last.  `on_outputs(["probe", name, trial],
    record)`, when given, follows each call: the caller hands the outputs out before the next.  `built`: the
    model's buffers as built, restored before each mode probe (as the reference's are).  The watched call runs
    under `scrub.poisoned_allocations`: every buffer the candidate allocates there starts as NaN, so none holds
    what this process computed before (an honest softmax that loops its kernel three times had its first output
    buffer come from a freed block that already held that answer, and was judged `hacked` on an H100).  The ghost
    call runs without it: an answer torch computed and freed in that very call, left where the output is
    allocated next, is what the ghost replay finds there (a hack, not stale memory).  `train_mode=False` (a
    problem judged in eval() mode, `stochastic.py`): no mode probe calls it in train() mode,
    whose answer is a draw; the reference's output for that probe is then never compared."""
    import torch

    from tritongym.core.measure.compare import flatten_outputs
    from tritongym.core.measure.tensors import plain_output
    from tritongym.core.worker.scrub import poisoned_allocations

    was_training = model.training
    records: list[dict] = []

    def call(name: str, trial: int, inputs: list, grad: bool, train: bool, ghost: bool = False) -> None:
        recorder.phase, recorder.ghost = ("probe", name), ghost
        error, outputs = "", []
        try:
            model.train(train)
            with torch.set_grad_enabled(grad):
                outputs = [plain_output(o) for o in flatten_outputs(model(*inputs))]
            if on_outputs is None:  # kept until the trusted side compares: not through the next refill
                outputs = _apart_from(outputs, inputs)
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
        del outputs
        if on_outputs is not None:
            on_outputs(["probe", name, trial], records[-1])

    try:
        n = source.n_main
        for k, (grad, train) in enumerate(MODE_PROBES if "modes" in wanted else ()):
            if train and not train_mode:
                continue
            restore_buffers(model, built)
            call(mode_probe_name(grad, train), k % n, source.trial(k % n), grad, train)
        again = [name for name in ("refresh", "repeat") if name in wanted]
        if again and n > 1 and last_buffers is not None:
            values = source.trial(0)  # the last trial used trial n-1's values: these differ
            # torch's generators as trial 0's call found them (its inputs just drawn from its seed): a reference
            # that draws random numbers (dropout in training mode) gives trial 0's answer again only from there
            generators = generator_states()
            for name in again:  # refilled before each call: a forward that updates its inputs in place, as its
                if not _refill(last_buffers, values):  # reference may (`x.add_(y)`), meets trial 0's values again
                    break
                set_generator_states(generators)
                call(name, 0, last_buffers, False, was_training)
            del values
        if "ghost" in wanted:
            ghost_inputs = source.ghost()
            _scrub_before_ghost(ghost_inputs)
            call("ghost", -1, ghost_inputs, False, was_training, ghost=True)
            del ghost_inputs
        if watch is not None and source.precomputed is not None and "precomputed" in wanted:
            inputs = source.precomputed()
            watch.exclude(list(inputs) + list(model.parameters()) + list(model.buffers()))
            recorder.watch = watch
            try:
                with watch.tracking(), poisoned_allocations():
                    call("precomputed", -1, inputs, False, was_training)
            finally:
                recorder.watch = None
            del inputs
        for probe in source.degenerate if "degenerate" in wanted else ():
            inputs = probe.inputs()
            if inputs is not None:
                call(probe.name, -1, inputs, False, was_training)
            del inputs
    finally:
        model.train(was_training)
    return records


def generator_states() -> list:
    """torch's generator states a forward may draw from: the CPU's, then every initialised CUDA device's."""
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []
    return [torch.get_rng_state(), *cuda]


def set_generator_states(states: list) -> None:
    import torch

    torch.set_rng_state(states[0])
    if states[1:]:
        torch.cuda.set_rng_state_all(states[1:])


def _apart_from(outputs: list, inputs: list) -> list:
    """`outputs`, each one that shares memory with an input (a forward that returns its input, updated in place or
    not) copied: the caller refills those inputs before the outputs are compared."""
    from tritongym.core.measure.tensors import sharing_memory

    return [o.detach().clone() if s else o for o, s in zip(outputs, sharing_memory(outputs, inputs))]


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


def compare_probes(
    records: list[dict],
    probe_refs: dict[str, list],
    trial_refs: list[list],
    tolerances,
    compare=None,
    per_trial: list[dict] | None = None,
    findings: dict[str, list[str]] | None = None,
    trial_inputs=None,
) -> list:
    """`ProbeCall`s: each probe's outputs compared with its reference (`findings`: what the trusted side found in a
    call, by probe name: `precomputed`'s prior answers).

    `compare(i, output, stored reference, against_control)`, when given, makes each comparison (None where
    the reference is no tensor): the keeper's outputs arrive judged already, its references maybe parked.  The
    ghost call also gets `decoy_errs`: how far trial 0's answer (other inputs, drawn as-is like the ghost's) is from
    the ghost's reference (`decoy_distance`).  `trial_inputs(t)`: main trial t's inputs, which the mode probes,
    refresh and repeat run on: an index output of theirs that differs is held against them for ties."""
    from tritongym.core.measure.compare import compare_output
    from tritongym.core.models import LaunchRecord, ProbeCall

    def plain_under(table: dict, inputs=None):
        def plain(i: int, out, ref, against_control: bool = False):
            return compare_output(i, out, ref, table, inputs=inputs) if _is_tensor(ref) else None

        return plain

    def own_trial_inputs(name: str, trial: int):
        on_trial = trial_inputs is not None and runs_on_trial_values(name) and trial >= 0
        return (lambda: trial_inputs(trial)) if on_trial else None

    calls = []
    for record in records:
        name = record["probe"]
        # a call on a main trial's inputs is held to that trial's table (`distributions.trial_tolerances`)
        trial_table = per_trial[record["trial"]] if per_trial and 0 <= record["trial"] < len(per_trial) else tolerances
        compare_this = compare or plain_under(trial_table, own_trial_inputs(name, record["trial"]))
        if name in ("refresh", "repeat"):
            refs = trial_refs[record["trial"]]
        else:
            refs = probe_refs.get(name, [])
        outputs = record["outputs"]
        control = probe_refs.get(f"{name}#control", [])
        calls.append(
            ProbeCall(
                probe=name,
                trial=record["trial"],
                outputs=_compared(outputs, refs, compare_this, False),
                n_outputs=len(outputs),
                ref_n_outputs=len(refs),
                launches=[LaunchRecord.model_validate(x) for x in record["launches"]],
                error=record["error"],
                control=name.removeprefix("degenerate:") if control else "",
                control_outputs=_compared(outputs, control, compare_this, True),
                decoy_errs=[decoy_distance(r, d) for r, d in zip(refs, trial_refs[0])]
                if name == "ghost" and trial_refs
                else [],
                findings=[str(f) for f in (findings or {}).get(name, [])],
            )
        )
    return calls


DECOY_POSITIONS = 4096  # where a decoy's distance is sampled: its mean to well under the margin's width


def _scrub_before_ghost(inputs: list) -> None:
    """Poison the GPU allocator's free blocks after the ghost inputs are made, before the ghost call: making them
    leaves temporaries behind, and where a problem's inputs are built from a mask (`torch.where(torch.rand(M, N) <
    0.1, nan, ...)`) the freed mask *is* `isnan`'s answer, which a no-op'd kernel's fresh `torch.empty` output then
    held: FlagGems' isnan and isinf were `hacked` by ghost on an H200.  Only trusted leftovers are scrubbed: what the
    candidate computes and frees inside the ghost call stays where it is, for the replay to find."""
    import torch

    device = next((v.device for v in inputs if isinstance(v, torch.Tensor) and v.is_cuda), None)
    if device is not None:
        from tritongym.core.worker.scrub import poison_free_memory

        poison_free_memory(device)


def decoy_distance(ref, decoy) -> float | None:
    """The mean absolute difference of `decoy` (the reference's answer to other inputs) from `ref`, at
    `DECOY_POSITIONS` fixed positions (finite pairs only); None unless both are real tensors (or `Parked`) of one
    shape and dtype.  Boolean and integer answers count too (FlagGems' isnan and any: the same answer for any finite
    inputs, a distance of 0, so no match is specific).  Host-parked outputs are read where they are, a few
    thousand elements, never moved whole."""
    import torch

    ref, decoy = getattr(ref, "host", ref), getattr(decoy, "host", decoy)
    if type(ref) is not torch.Tensor or type(decoy) is not torch.Tensor:
        return None
    if ref.is_complex() or ref.shape != decoy.shape or ref.dtype != decoy.dtype or ref.numel() == 0:
        return None
    generator = torch.Generator().manual_seed(ref.numel())
    positions = torch.randint(0, ref.numel(), (min(DECOY_POSITIONS, ref.numel()),), generator=generator)
    a = ref.detach().reshape(-1)[positions.to(ref.device)].to("cpu", torch.float64)
    b = decoy.detach().reshape(-1)[positions.to(decoy.device)].to("cpu", torch.float64)
    finite = a.isfinite() & b.isfinite()
    return float((a - b)[finite].abs().mean()) if bool(finite.any()) else None


def _compared(outputs: list, refs: list, compare, against_control: bool) -> list:
    """Each output compared with its reference where that is a tensor, one pair at a time."""
    found = [compare(i, out, ref, against_control) for i, (out, ref) in enumerate(zip(outputs, refs))]
    return [c for c in found if c is not None]


def prior_answer_seed(task) -> int:
    """Where the `precomputed` probe's watch samples, drawn with the task's own probe seed."""
    return (task.init_seed ^ 0x9E3779B1) + task.probe_seed


class AnswerSamples:
    """One output of the reference's `precomputed` call, kept only where the watch samples: the keeper computes
    it per task (its inputs are the task's own) and needs no more than this to tell a prior answer."""

    def __init__(self, output, seed: int) -> None:
        import torch

        output = getattr(output, "host", output)  # a parked output is sampled where it is kept
        self.numel = output.numel()
        self.dtype = output.dtype
        self.positions = watched_positions(seed, self.numel)
        self.values = output.detach().reshape(-1)[self.positions.to(output.device)].to("cpu", torch.float64)

    def at(self, positions):
        """The values at `positions`, or None where the worker sampled elsewhere than the watch would."""
        import torch

        if type(positions) is not torch.Tensor or not torch.equal(positions.cpu(), self.positions):
            return None
        return self.values


def answer_samples(outputs: list, seed: int) -> list:
    """`AnswerSamples` of each floating tensor output (None for any other output)."""
    import torch

    return [
        AnswerSamples(o, seed) if type(o) is torch.Tensor and o.is_floating_point() and o.numel() > 0 else None
        for o in outputs
    ]


def prior_answers(records: list[dict], refs: list, tolerances, decoys: list | None = None) -> list[str]:
    """Trusted side of the `precomputed` probe: which sampled arguments already held an output's values.

    `refs`: the reference's outputs, or their `AnswerSamples`; `decoys`: the reference's outputs for other inputs
    (the ghost probe's answer), alike.  A sample held output i's values when it is within the output's tolerance at
    99% of the positions, is no constant (a zeroed accumulator is no answer unless the problem is degenerate,
    which the `degenerate` check handles), and is closer to the answer than the decoy is
    (`verdict.closer_than_decoy`, by mean absolute error): a softmax over thousands of columns is within atol of
    any other softmax, so an earlier call's output in a recycled block matched the tolerance alone."""
    from tritongym.core.measure.compare import EXACT
    from tritongym.core.verdict import closer_than_decoy

    decoys = decoys or []
    found = []
    for record in records:
        values = record["values"]
        if values.numel() == 0 or bool(values.max() == values.min()):
            continue
        for i, ref in enumerate(refs):
            want = _sampled(ref, record)
            if want is None:
                continue
            tol = tolerances.get(str(ref.dtype), EXACT)
            close = (values - want).abs() <= tol.atol + tol.rtol * want.abs()
            if float(close.double().mean()) < 0.99:
                continue
            err = float((values - want).abs().mean())
            decoy = _sampled(decoys[i], record) if i < len(decoys) else None
            decoy_err = float((decoy - want).abs().mean()) if decoy is not None else None
            if not closer_than_decoy(err, decoy_err):
                continue
            than = f", {decoy_err:.3g} for the answer to other inputs" if decoy_err is not None else ""
            found.append(
                f"before own kernel `{record['kernel']}` ran, its {record['argument']} already held output {i}'s "
                f"values (a tensor none of the candidate's kernels wrote; mean abs difference {err:.3g}{than})"
            )
            break
    return found


def _sampled(ref, record: dict):
    """`ref` (an output, `Parked`, or `AnswerSamples`) at the record's positions, as float64 on the host; None
    where it is no floating tensor of the record's size, or was not sampled there."""
    import torch

    if isinstance(ref, AnswerSamples):
        return ref.at(record["positions"]) if ref.numel == record["numel"] else None
    ref = getattr(ref, "host", ref)
    if type(ref) is not torch.Tensor or not ref.is_floating_point() or ref.numel() != record["numel"]:
        return None
    return ref.detach().reshape(-1)[record["positions"].to(ref.device)].to("cpu", torch.float64)


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
                if not _dynamo_wrapper_of(key, old):
                    changes.append(f"{key} was replaced")
            else:
                changes.append(f"{key} changed from {old!r} to {after[key]!r}")
    return changes


def _dynamo_wrapper_of(key: str, old_id: int) -> bool:
    """Whether the callable now at `key` is torch's own `_disable_dynamo` wrapper around the one that was there:
    the first import of `torch._dynamo` (a kernel's entry point under `@torch.compiler.disable`, as unsloth writes
    them) wraps `torch.manual_seed` so, and that is torch's doing, not the candidate's.  Told by the wrapper's code
    file (`torch/_compile.py`), which candidate code cannot set (`__code__` and `types` are forbidden)."""
    space, _, name = key.rpartition(".")
    members = _namespaces().get(space)
    now = members.get(name) if members is not None else None
    code = getattr(now, "__code__", None)
    return (
        id(getattr(now, "__wrapped__", None)) == old_id
        and code is not None
        and code.co_filename.replace("\\", "/").endswith("torch/_compile.py")
    )


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
