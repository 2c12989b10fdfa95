"""The candidate's side of the worker: runs in a child process forked from the trusted worker.

The child holds no way to report a verdict: the result pipe and the task nonce belong to the trusted
worker, whose descriptors the child closes first thing.  All it can do is send back, on its own pipe, what
its `ModelNew` returned for each trial's inputs (plus its inputs afterwards, the Triton launches it made
and the configs its autotuned kernels picked); the trusted worker compares those with reference outputs
it computed *before* the fork.  A candidate that reaches into its own process (frames, globals) can at
most lie about itself, never about the comparison.  It can, however, *read* what the fork copied: the
reference model and the reference outputs are objects in this process too.  Only the static `forbidden`
check (no frames, `gc` or `sys`) stands in the way of that today; forking before the reference outputs
exist, and binding weights from a copy of the state dict rather than the model, would close it.

The report is a dict of plain values and tensors, read back with `torch.load(weights_only=True)`, so it
cannot smuggle code into the trusted worker either.  Because the two are separate processes, the
candidate also cannot read the reference's freed output memory.

This relies on `os.fork`, which suits the CPU backend.  CUDA does not survive a fork, so the GPU worker
(`gpu_worker`) calls `run_candidate` in its own process instead, a process that never computes a reference
output: those live in the GPU's reference keeper (`keeper.py`), which judges the outputs lent to it.

What is held when: each call takes a fresh input set (`input_source.py`) when it comes.  The forked child keeps
every output for its parent; the GPU worker streams (`on_outputs`: each call's outputs leave for the keeper
when it ends), holding about one call at a time.  Its trials' inputs are dropped in turn (the
last trial's stay for `refresh`), so a pointer-keyed cache may meet a recycled address and fail a trial.
"""

from __future__ import annotations

import dataclasses
import io
import os
import time
from types import ModuleType

from tritongym.core.worker_task import WorkerTask

CANDIDATE_MODULE = "tritongym_candidate"


def run_candidate(
    task: WorkerTask,
    workdir: str,
    recorder,
    ref_model,
    init_inputs,
    source,
    device,
    keep: dict | None = None,
    extra: list | None = None,
    probes_on: bool = True,
    on_outputs=None,
) -> dict:
    """Import the candidate, bind weights, run every trial, then the probes, then the `extra` trials of
    `trial_plan.py` (shape sets, the late trial); returns the report (never raises).

    Every call gets a fresh input set from `source` (`input_source.py`; an extra trial from
    `PlannedTrial.fresh_inputs`).  `keep`, when given, receives the bound model and
    the environment snapshot (the GPU worker times the model afterwards and checks the environment again).
    With `probes_on` the probes `task.probes` names run after the trials: the built-in ones of `probes.py` (the
    `precomputed` one when `source` has its inputs, its samples to report `prior`), then the plugin ones
    (`plugin_probes.py`, into report `plugin_answers`).  Before the late trial the forward is called on trial
    inputs until it has been called `LATE_CALL` times, so a cache that starts after a dozen calls meets the
    late trial's fresh inputs.  Report `trials` holds the main trials then the extra ones, in order; it stops
    at the first that raises.

    Streaming (`on_outputs`, the GPU worker): after each call the device is synchronised, a trial's side-work
    snapshot compared, and `on_outputs(where, record)` called (`where`: `["trial", t]` or `["probe", name,
    trial]`) to hand the outputs out in place and turn a trial's `inputs_after` into `mutated`.  Without it
    every record keeps its outputs and `inputs_after`, and the snapshots are compared after all calls."""
    import torch

    from tritongym.core.measure import trusted
    from tritongym.core.measure.compare import flatten_outputs
    from tritongym.core.measure.tensors import plain_output
    from tritongym.core.worker import plugin_probes, prior_watch, probes
    from tritongym.core.worker.op_trace import traced_call
    from tritongym.core.worker.stages import StageError, error_info, load_module
    from tritongym.core.worker.weights import bind_weights, build_seed

    path = os.path.join(workdir, "candidate.py")
    cuda = device.type == "cuda"
    report: dict = {
        "stage": "import",
        "error": None,
        "weights": {},
        "trials": [],
        "probes": [],
        "environment_changes": [],
        "side_work": [],
        "torch_ops": {},
        "torch_work": {},
        "prior": None,
        "plugin_answers": {},
        "seconds": {},
    }
    # where a candidate's run goes, stage by stage, named as the evidence's `phases` keep them: the first calls of a
    # fresh worker carry its Triton compiles and torch's lazy set-up, so `candidate_trials` holds those
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        report["seconds"][f"candidate_{name}"] = round(now - clock[0], 4)
        clock[0] = now

    environment = probes.environment_snapshot()  # before any candidate code exists
    side_before = probes.live_side_work()
    if keep is not None:
        keep["environment"] = environment
    snapshots: list[tuple[int, list, list]] = []  # (trial, outputs as returned, copies taken at once)
    output_specs: list = []  # trial 0's floating outputs (`OutputSpec`s): what the `precomputed` probe watches for
    # registered probes' functions, imported before the candidate exists (a failure is that probe's error)
    plugin_specs = plugin_probes.plugin_specs(task.probes)
    probe_functions = plugin_probes.load_functions({name: spec.target for name, spec in plugin_specs.items()})

    def handed_out(where: list, record: dict, label: str) -> None:
        """The streaming step after one call: synchronise, then the caller hands its outputs out."""
        try:
            if cuda:
                trusted.synchronize()  # device-wide: work a candidate left on a side stream is finished
            on_outputs(where, record)
        except Exception as exc:  # an asynchronous CUDA error of the candidate's kernels surfaces here
            raise StageError("run", _where(error_info(exc, path), label)) from None
        _collect()

    try:
        try:
            candidate: ModuleType = load_module(CANDIDATE_MODULE, path, task.candidate_source or "")
            if not hasattr(candidate, "ModelNew"):
                raise AttributeError("the candidate defines no class ModelNew")
        except Exception as exc:
            raise StageError("import", error_info(exc, path)) from None
        report["stage"] = "init"
        try:
            torch.manual_seed(build_seed(task))  # Model's seed, as the field builds them (`weights.py`)
            model = candidate.ModelNew(*init_inputs).to(device)
            if task.eval_mode:  # judged in eval() mode, as the reference is (`stochastic.py`)
                model.eval()
            if keep is not None:
                keep["model"] = model
        except Exception as exc:
            raise StageError("init", error_info(exc, path)) from None
        report["stage"] = "bind"
        try:
            report["weights"] = dataclasses.asdict(bind_weights(model, ref_model))
            built = probes.buffer_snapshot(model)  # each mode probe starts from these, as the reference's do
        except Exception as exc:
            raise StageError("bind", error_info(exc, path)) from None
        report["stage"] = "run"
        if cuda:  # work on other streams waits ~50 ms (launches.py): unjoined work shows
            recorder.caller_stream = trusted.current_stream().cuda_stream
        n_main = source.n_main

        def run_trial(trial: int, model, mine: list, where: str = "", phase: tuple | None = None) -> list:
            """One correctness call into report["trials"], on `mine` (a fresh set this call owns); returns
            `mine` (after the call).  `phase` names the call for launch records and autotune choices (default:
            ("trial", trial))."""
            phase = phase or ("trial", trial)
            recorder.phase = phase
            start = time.perf_counter()
            try:
                with torch.no_grad():
                    out, ops, work = traced_call(model, *mine)
                    for op, count in ops.items():  # a plain dict: the report is loaded with weights_only
                        report["torch_ops"][op] = report["torch_ops"].get(op, 0) + count
                    if trial < n_main:  # one main-shape forward's work, averaged over the trials
                        for op, amount in work.items():
                            report["torch_work"][op] = report["torch_work"].get(op, 0.0) + amount / n_main
                    flat = flatten_outputs(out)
                    del out
                    # copies taken the moment forward returns, in stream order: work still running on a
                    # side stream or in a thread shows up as a difference from the final outputs
                    copies = [_copy(o) for o in flat]
                running = probes.live_side_work() - side_before
                report["side_work"] += probes.describe_side_work(running, f"when forward returned (trial {trial})")
            except Exception as exc:
                raise StageError("run", _where(error_info(exc, path), where)) from None
            finally:
                recorder.phase = None
            if trial == 0:
                output_specs.extend(prior_watch.output_specs(flat))
            report["trials"].append(
                {
                    "outputs": [plain_output(o) for o in flat],
                    "inputs_after": [v.detach() if type(v) is torch.Tensor else None for v in mine],
                    "launches": [rec.model_dump() for rec in recorder.records(phase)],
                    "candidate_s": time.perf_counter() - start,
                }
            )
            if on_outputs is None:
                snapshots.append((trial, flat, copies))
                return mine
            if cuda:
                try:  # the snapshot is compared with what side streams wrote, once they ended
                    trusted.synchronize()
                except Exception as exc:  # a fault of this call's kernels (an illegal address) surfaces here
                    report["trials"].pop()  # its outputs live in a context that is gone: nothing to send
                    raise StageError("run", _where(error_info(exc, path), where)) from None
            report["side_work"] += _unfinished(trial, flat, copies)
            del flat, copies
            handed_out(["trial", trial], report["trials"][-1], where or f"after trial {trial}")
            return mine

        lap("setup")
        mine = None
        for trial in range(n_main):
            mine = None  # the previous trial's set is dropped before the next is made
            mine = run_trial(trial, model, source.trial(trial))
        lap("trials")
        if report["trials"] and probes_on:
            if on_outputs is None:  # the parent compares the last trial's inputs; the probes refill these
                last = report["trials"][-1]
                last["inputs_after"] = [v.clone() if v is not None else None for v in last["inputs_after"]]
                _detach_from_inputs(last, snapshots[-1], mine, report["side_work"])
            watch = (
                prior_watch.PriorAnswerWatch(output_specs, probes.prior_answer_seed(task))
                if source.precomputed is not None and "precomputed" in task.probes
                else None
            )
            stream = (
                None
                if on_outputs is None
                else (lambda where, record: handed_out(where, record, f"in probe {where[1]}"))
            )
            report["probes"] = probes.run_probes(
                model,
                recorder,
                source,
                mine,
                watch=watch,
                on_outputs=stream,
                built=built,
                train_mode=not task.eval_mode,
                wanted=set(task.probes),
            )
            if watch is not None:
                report["prior"] = watch.records
            mine = None
            lap("probes")
            report["plugin_answers"] = plugin_probes.run_plugin_probes(
                model, recorder, probe_functions, source, plugin_specs
            )
            lap("plugin_probes")
        mine = None
        calls = len(report["trials"]) + len(report["probes"])
        for k, planned in enumerate(extra or []):
            if planned.late:
                calls = _fill_calls(model, recorder, source, calls, path, _collect if on_outputs else None)
            where = f"at {planned.describe()}" if planned.sizes is not None else "in the late trial"
            own = model
            if planned.sizes is not None:
                report["stage"] = "init"
                try:
                    torch.manual_seed(build_seed(task))
                    own = candidate.ModelNew(*planned.init_inputs).to(device)
                    if task.eval_mode:
                        own.eval()
                    bind_weights(own, planned.ref_model)
                except Exception as exc:
                    raise StageError("init", _where(error_info(exc, path), where)) from None
                report["stage"] = "run"
            phase = ("shape set", k) if planned.sizes is not None else ("late trial",)
            run_trial(n_main + k, own, planned.fresh_inputs(), where, phase)
            calls += 1
        if cuda:
            trusted.synchronize()
        lap("extra_trials")
        for trial, flat, copies in snapshots:
            report["side_work"] += _unfinished(trial, flat, copies)
        report["side_work"][:0] = recorder.side_launches()  # first: certain, whatever the copies' race showed
        running = probes.live_side_work() - side_before
        report["side_work"] += probes.describe_side_work(running, "after all calls")
        report["environment_changes"] = probes.environment_changes(environment)
        report["stage"] = "done"
    except StageError as exc:
        report["stage"], report["error"] = exc.stage, exc.info.model_dump()
    except MemoryError as exc:
        report["error"] = {"kind": "MemoryLimit", "message": f"memory limit exceeded: {exc}"}
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are the candidate's error too
        report["error"] = error_info(exc, path).model_dump()
    finally:
        recorder.caller_stream = None
        report["autotune"] = recorder.autotune.dump()  # also for a failed run: the config it failed with
    return report


def _detach_from_inputs(record: dict, snapshot: tuple, mine: list, side_work: list) -> None:
    """Before the probes refill the last trial's inputs in place: each of its outputs that shares memory with one
    of them (a residual passed on unchanged, `return out, x`, as the reference may return its own input) is
    checked for side work now and replaced by a copy, so the refill is not read as the candidate's output changing
    after forward returned, nor judged as its answer."""
    from tritongym.core.measure.tensors import sharing_memory

    trial, flat, copies = snapshot
    shared = sharing_memory(flat, mine)
    if not any(shared):
        return
    side_work += _unfinished(trial, flat, [c if s else None for c, s in zip(copies, shared)])
    for i in (i for i, s in enumerate(shared) if s):
        flat[i] = flat[i].detach().clone()
        copies[i] = None if copies[i] is None else flat[i]
        record["outputs"][i] = flat[i]


def _unfinished(trial: int, flat: list, copies: list) -> list[str]:
    """Side work, from one trial's snapshot (copies taken when forward returned) against its outputs now."""
    import torch

    from tritongym.core.measure.tensors import same_value

    found = []
    for i, (o, c) in enumerate(zip(flat, copies)):
        if c is not None and c.device != o.device:  # a host snapshot of a GPU output's first elements
            # compared on the GPU: the side work has ended (synchronised), so a device copy of the snapshot is
            # safe now, and one upload from pinned memory is a fraction of a download plus a host-side compare
            # (0.26 s of a warm relu task on an H200, py-spy)
            o = o.detach().reshape(-1)[: c.numel()]
            try:
                c = c.to(o.device)
            except torch.OutOfMemoryError:  # no room left beside the candidate's own: on the host, as before
                o = o.cpu()
        if c is not None and not same_value(o, c):
            found.append(
                f"output {i} of trial {trial} was still being written after forward returned "
                "(work on a side stream or in a thread that forward did not wait for)"
            )
    return found


LATE_CALL = 24
"""The late trial is at least the forward's LATE_CALL-th call on every backend (a GPU's timing calls, checked
too, come later still): a cache that starts after a dozen calls is stale there."""


def _fill_calls(model, recorder, source, calls: int, path: str, after_call=None) -> int:
    """Call the forward on trial inputs (fresh sets from `source`) until it has been called `LATE_CALL` times;
    the count reached (`after_call()`, when given, after each).

    Their outputs are not judged (any call could be the judged one: the late trial's inputs are fresh);
    an error in one is the candidate's, named as a call before the late trial."""
    import torch

    from tritongym.core.worker.stages import StageError, error_info

    recorder.phase = ("filler",)
    try:
        while calls < LATE_CALL - 1:
            with torch.no_grad():
                model(*source.trial(calls % source.n_main))
            calls += 1
            if after_call is not None:
                after_call()
    except Exception as exc:
        raise StageError("run", _where(error_info(exc, path), f"in call {calls + 1}, before the late trial")) from None
    finally:
        recorder.phase = None
    return calls


def _where(info, where: str):
    """An error of a shape-set or late trial says which call it was."""
    return info.model_copy(update={"message": f"{where}: {info.message}"}) if where else info


def _collect() -> None:
    """A streamed call's cyclic garbage collected at once (young generations: ~10 ms): Triton's interpreter leaves
    its host copies of a launch's tensors in reference cycles, a call's worth of memory each."""
    import gc

    gc.collect(1)


SNAPSHOT_ELEMENTS = 1 << 24  # per output: enough to see unfinished work, bounded host memory


def _copy(value):
    """The output's values the moment forward returned, in order on the caller's stream.

    On a GPU the copy goes to host memory: a device copy would come from the caching allocator, which may
    hand it a block the candidate freed while its unjoined side-stream work still writes there.  Pinned host
    memory (torch's host allocator caches the blocks from call to call): a pageable download of a 64 MiB output
    took four times as long."""
    import torch

    if type(value) is not torch.Tensor:
        return None
    if value.device.type != "cuda":
        return value.detach().clone()
    flat = value.detach().reshape(-1)[:SNAPSHOT_ELEMENTS]
    snapshot = torch.empty(flat.shape, dtype=flat.dtype, pin_memory=True)
    return snapshot.copy_(flat)  # a blocking copy: waits for the caller's stream only


def fork_candidate(
    task: WorkerTask,
    workdir: str,
    recorder,
    ref_model,
    init_inputs,
    source,
    device,
    private_fds: list[int],
    extra: list | None = None,
    probes_on: bool = True,
) -> tuple[dict | None, str]:
    """Run the candidate in a forked child; returns (report or None, why there is none)."""
    import torch

    from tritongym.core.worker.stages import exit_text

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop the trusted worker's channels before any candidate code exists
        try:
            os.close(read_fd)
            for fd in private_fds:
                os.close(fd)
            report = run_candidate(
                task, workdir, recorder, ref_model, init_inputs, source, device, extra=extra, probes_on=probes_on
            )
            buffer = io.BytesIO()
            torch.save(report, buffer)
            view = memoryview(buffer.getvalue())
            while view:
                view = view[os.write(write_fd, view) :]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(1 << 20):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if data:
        try:
            return torch.load(io.BytesIO(data), weights_only=True), ""
        except Exception as exc:  # noqa: BLE001 - whatever the child sent, it is the candidate's fault
            return None, f"the candidate process sent a malformed report ({type(exc).__name__})"
    return None, exit_text("the candidate process", os.waitstatus_to_exitcode(status))
