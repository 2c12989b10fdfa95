"""The warm GPU worker: `python -m tritongym.core.worker.gpu_worker LOGFILE DEVICE`, frames on stdin/stdout.

Started by `gpu_pool` ahead of need, one or more per GPU (`CUDA_VISIBLE_DEVICES` names its GPU): it
imports torch and Triton, initialises CUDA, allocates the L2 flush buffer, loads the profiler and says
`REDY` before any candidate exists.  Then, per task (protocol of DESIGN.md §3):

1. the reference is built under a secret seed and its outputs for every trial computed (the main trials,
   then one per extra shape set and the late trial of `trial_plan.py`); a secret random sample of each
   output's elements (positions and values) goes to the parent (`REFO`), with which call each trial is;
2. the reference is timed (GPU lock held, `LOCK`/`GRNT`/`UNLK`) and that timing is sent (`REFT`), also
   before any candidate code is imported;
3. the candidate is imported, built, bound and run on every trial (`candidate_runner.run_candidate`);
   its outputs are compared with the reference's here, on the GPU (full tensors never cross a pipe),
   and the comparisons are sent with the candidate's values at the sampled positions (`CAND`).  The
   parent re-checks those samples against the ones it got before the import, so a candidate that
   forges the comparison is caught unless it also computes the right answer; the parent answers
   `TIME` only if everything matched;
4. under the GPU lock: the candidate is timed, the reference re-timed (a slower second reference means
   the candidate sabotaged the baseline), a few forwards profiled; sent as `TIMD` with the comparisons
   (and samples) of the outputs of the timed calls;
5. `DONE` carries the rest of the evidence (stage, error).

Everything after step 3 comes from a process the candidate has run in, which is why the parent keeps
its own samples, and why the pool gives every candidate a fresh worker by default.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from tritongym.core.models import Evidence, TimingReport
from tritongym.core.worker import frames, trusted
from tritongym.core.worker.gold import exact_reference, gold_model, gold_samples
from tritongym.core.worker.launches import tf32_kernels
from tritongym.core.worker.plugin_probes import probe_results
from tritongym.core.worker.probes import (
    compare_probes,
    environment_changes,
    prior_answers,
    reference_probe_outputs,
)
from tritongym.core.worker.stages import StageError, apply_limits, error_info, failures_recorded
from tritongym.core.worker.task_runner import (
    build_reference,
    configure_precision,
    degenerate_probes,
    ghost_seed,
    install_autotune_policy,
    load_reference,
    make_inputs,
    precomputed_seed,
)
from tritongym.core.worker.tensors import clone_all, same_value
from tritongym.core.worker.trial_plan import plan_extra_trials, reference_outputs
from tritongym.core.worker_task import WorkerTask

STARTED = time.monotonic()  # close enough to the process start: how long a warm-up took


class Channel:
    """The worker's side of the pool's frames."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self.holding: str | None = None  # "shared" or "exclusive" while the parent has granted the GPU
        self.compile_s = 0.0  # time spent compiling Triton kernels with the GPU given back
        self.unlock_compiles = False  # TimingOptions.unlock_compiles of the task in hand

    def send(self, kind: str, payload: bytes = b"") -> None:
        frames.send(self.out_fd, kind, payload)

    def send_json(self, kind: str, value) -> None:
        self.send(kind, json.dumps(value).encode())

    def expect(self, *kinds: str) -> tuple[str, bytes]:
        frame = frames.receive(self.in_fd)
        if frame is None or frame[0] == "EXIT":
            os._exit(0)
        if frame[0] not in kinds:
            raise RuntimeError(f"pool protocol: got {frame[0]}, expected one of {kinds}")
        return frame

    def _take(self, exclusive: bool, resume: bool = False) -> None:
        self.send("LOCK" if exclusive else "RSHR" if resume else "SHAR")
        self.expect("GRNT")
        self.holding = "exclusive" if exclusive else "shared"

    def _give_back(self) -> None:
        self.send("UNLK")
        self.holding = None

    @contextlib.contextmanager
    def gpu(self, exclusive: bool = True, needed: bool = True):
        """Hold the GPU: exclusively for timing, shared for correctness work (the parent grants both)."""
        if not needed:
            yield
            return
        self._take(exclusive)
        try:
            yield
        finally:
            if self.holding:
                self._give_back()

    @contextlib.contextmanager
    def cpu_only(self):
        """Give a shared hold back while this process works on the CPU alone, then take it again.

        Triton compiles a kernel (seconds of LLVM and ptxas, no GPU work) inside the candidate's first
        call, which runs under the shared lock; holding it there would make every timing on this GPU wait
        for other workers' compilers. An exclusive hold is kept: a timing is never split."""
        if self.holding != "shared" or not self.unlock_compiles:
            yield
            return
        self._give_back()
        began = time.perf_counter()
        try:
            yield
        finally:
            self.compile_s += time.perf_counter() - began
            self._take(exclusive=False, resume=True)


def release_gpu_while_compiling(channel: Channel) -> None:
    """Wrap `triton.compiler.compile` (what every JIT launch calls on a cache miss) in `channel.cpu_only`.

    Triton's JIT looks the function up on `triton.compiler` when a kernel is first specialised, so
    kernels defined after this call (every candidate's) use the wrapper."""
    import triton.compiler

    original = triton.compiler.compile
    if getattr(original, "_tritongym_channel", None) is not None:
        return

    def compile(*args, **kwargs):
        with channel.cpu_only():
            return original(*args, **kwargs)

    compile._tritongym_channel = channel  # type: ignore[attr-defined]
    triton.compiler.compile = compile


def driver_version() -> str | None:
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
    except OSError:
        return None
    words = [w for w in first.split() if w[:1].isdigit() and "." in w]
    return words[0] if words else None


SAMPLE_SIZE = 4096


def sample_reference(refs: list, generator) -> tuple[list, list]:
    """Secret random positions per output, and what the parent gets: those positions and the values."""
    import torch

    positions, sent = [], []
    for ref in refs:
        n = ref.numel() if type(ref) is torch.Tensor else 0
        where = torch.randint(0, n, (min(SAMPLE_SIZE, n),), device=ref.device, generator=generator) if n else None
        positions.append(where)
        values = ref.detach().reshape(-1)[where].cpu() if where is not None else None
        sent.append({"positions": where.cpu() if where is not None else None, "values": values})
    return positions, sent


def judge_outputs(outs: list, refs: list, positions: list, tolerances, gold: list | None = None) -> list[dict]:
    """Each output compared with the reference's (and, for a main trial, its gold), plus its values at the
    secret positions."""
    import torch

    from tritongym.core.worker.compare import compare_output

    judged = []
    for i, (out, ref) in enumerate(zip(outs, refs)):
        comparison = compare_output(i, out, ref, tolerances, gold[i] if gold and i < len(gold) else None)
        sample = None
        comparable = type(out) is torch.Tensor and out.shape == ref.shape and out.dtype == ref.dtype
        if comparable and out.device == ref.device and positions[i] is not None:
            sample = out.detach().reshape(-1)[positions[i]].cpu()
        judged.append({"comparison": comparison.model_dump_json(), "sample": sample})
    return judged


def poison_free_memory(device) -> None:
    """Fill the caching allocator's free blocks with 0xFF bytes (NaN in every float format).

    The reference's outputs and timing buffers were freed into the allocator's cache; a candidate that
    returns memory it never wrote would read them and pass as correct.  After this it reads NaN."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    held = []
    try:
        for segment in torch.cuda.memory_snapshot():
            if segment.get("device", index) != index:
                continue
            for block in segment.get("blocks", []):
                if block.get("state") == "inactive" and block.get("size", 0) > 0:
                    held.append(torch.empty(block["size"], dtype=torch.uint8, device=device).fill_(0xFF))
        trusted.synchronize(device)
    except RuntimeError:
        pass  # out of memory while poisoning: what was filled stays filled
    finally:
        del held


def tensor_bytes(values) -> int:
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


class GPUWorker:
    def __init__(self, channel: Channel, device_name: str) -> None:
        import torch

        from tritongym.core.fingerprint import local_fingerprint
        from tritongym.core.worker.launches import LaunchRecorder

        self.channel = channel
        self.device = torch.device(device_name)
        self.cuda = self.device.type == "cuda"
        self.recorder = LaunchRecorder("")
        self.recorder.install()
        install_autotune_policy()  # a no-op on a GPU; the pool's CPU workers run Triton's interpreter
        self.timer = None
        if self.cuda:
            release_gpu_while_compiling(channel)
            from tritongym.core.worker.gpu_profile import warm_profiler
            from tritongym.core.worker.timing import Timer

            # a new context, the calibration and the profiler's first run all touch the GPU: shared lock, so
            # they never overlap another worker's timing
            with channel.gpu(exclusive=False):
                torch.cuda.set_device(self.device)
                torch.empty(1, device=self.device)
                self.timer = Timer(self.device)
                warm_profiler()
                trusted.synchronize()
            name = torch.cuda.get_device_properties(self.device).name
            self.fingerprint = local_fingerprint(name, driver=driver_version(), cuda=torch.version.cuda)
        else:
            self.fingerprint = local_fingerprint()
        self.tasks = 0

    def ready_info(self) -> dict:
        return {
            "fingerprint": self.fingerprint.model_dump(),
            "l2_bytes": self.timer.l2_bytes if self.timer else None,
        }

    def run(self, task: WorkerTask) -> None:
        self.tasks += 1
        evidence = Evidence(stage="problem", fingerprint=self.fingerprint)
        taskdir = os.path.join(os.getcwd(), f"task-{self.tasks}")
        os.makedirs(taskdir, exist_ok=True)
        self.recorder.candidate_file = os.path.join(taskdir, "candidate.py")
        self.recorder.own_compiled.clear()
        self.recorder.own_kernels.clear()
        self.recorder.autotune.clear()
        self.channel.compile_s = 0.0
        self.channel.unlock_compiles = task.timing.unlock_compiles
        with failures_recorded(evidence):
            if task.mode == "screen":  # negative controls only: no candidate code, compared right here
                from tritongym.core.worker.gold import exact_reference
                from tritongym.core.worker.task_runner import run_screen

                configure_precision(task)
                with exact_reference():
                    run_screen(task, taskdir, evidence)
            else:
                self._run(task, taskdir, evidence)
        evidence.autotune = list(self.recorder.autotune.choices)  # also for a failed run: what it ran with
        if self.channel.compile_s:
            evidence.phases["compile_unlocked"] = round(self.channel.compile_s, 4)
        self.channel.send("DONE", evidence.model_dump_json().encode())

    def _run(self, task: WorkerTask, taskdir: str, evidence: Evidence) -> None:
        import time

        import torch

        clock = [time.perf_counter()]

        def lap(name: str) -> None:
            now = time.perf_counter()
            evidence.phases[name] = round(now - clock[0], 4)
            clock[0] = now

        from tritongym.core.worker.candidate_runner import run_candidate
        from tritongym.core.worker.compare import flatten_outputs
        from tritongym.core.worker.op_trace import traced_call

        configure_precision(task)
        reference = load_reference(task, taskdir)
        with self.channel.gpu(exclusive=False, needed=self.cuda):
            ref_model, init_inputs = build_reference(task, reference, self.device)
            trial_inputs = [make_inputs(reference, seed, self.device) for seed in task.seeds]
            ref_outputs = []
            try:
                with torch.no_grad(), exact_reference():
                    for inputs in trial_inputs:
                        raw, ops, work = traced_call(ref_model, *clone_all(inputs))
                        evidence.reference_torch_ops = evidence.reference_torch_ops or ops
                        evidence.reference_torch_work = evidence.reference_torch_work or work
                        ref_outputs.append(flatten_outputs(raw))
            except Exception as exc:
                raise StageError("problem", error_info(exc)) from None
            # the float64 gold of the main trials, kept on a sample of positions (gold.py); the full float64
            # outputs are freed trial by trial
            model64 = gold_model(ref_model)
            gold_generator = torch.Generator(device=self.device)
            gold_generator.manual_seed(task.init_seed ^ 0x601D)
            golds = [
                gold_samples(model64, xs, outs, gold_generator, ref_model)
                for xs, outs in zip(trial_inputs, ref_outputs)
            ]
            del model64
            # the shape-set and late trials (trial_plan.py): judged like the main ones, never timed
            extra = plan_extra_trials(task, reference, self.device, make_inputs, build_reference)
            planned = [{"seed": seed} for seed in task.seeds]
            all_inputs, kept = list(trial_inputs), []
            for trial in extra:
                with exact_reference():
                    outs = reference_outputs(task, reference, ref_model, trial)
                if outs is None:
                    continue
                ref_outputs.append(outs)
                planned.append(trial.evidence_fields())
                all_inputs.append(trial.inputs)
                kept.append(trial)
            extra = kept
            generator = torch.Generator(device=self.device)
            generator.manual_seed(task.init_seed ^ 0x5EED)
            positions, samples = zip(*(sample_reference(outs, generator) for outs in ref_outputs))
            if self.cuda:
                trusted.synchronize()
            ghost_inputs = make_inputs(reference, ghost_seed(task), self.device)
            precomputed_inputs = make_inputs(reference, precomputed_seed(task), self.device)
            degenerate = degenerate_probes(task, reference, self.device)
            try:
                with exact_reference():
                    probe_refs = reference_probe_outputs(
                        ref_model, trial_inputs, ghost_inputs, degenerate, precomputed_inputs
                    )
            except Exception as exc:
                raise StageError("problem", error_info(exc)) from None
            if self.cuda:
                trusted.synchronize()
        lap("reference")
        self.channel.send("REFO", frames.tensors_to_bytes({"samples": list(samples), "trials": planned}))
        lap("send_reference")

        def ref_forward(xs):
            return ref_model(*xs)

        timing = TimingReport(precision=task.precision)
        timed = self.cuda and task.timing.enabled
        if timed:
            params = [p for p in ref_model.parameters()] + [b for b in ref_model.buffers()]
            timing.bytes_moved = tensor_bytes(trial_inputs[0]) + tensor_bytes(params) + tensor_bytes(ref_outputs[0])
            with self.channel.gpu():
                from tritongym.core.worker.timing import measure_copy_bandwidth

                timing.bandwidth_gbps = task.bandwidth_gbps or measure_copy_bandwidth(self.device)
                rep = task.timing.check_ms if task.cached_reference else None
                timing.reference_before, _ = self.timer.time_forward(ref_forward, trial_inputs, task.timing, rep)
            lap("time_reference")
            if task.compile_reference and task.cached_compile_reference is None:
                self._time_compiled_reference(task, ref_model, trial_inputs, ref_outputs, timing, lap)
            self.channel.send("REFT", timing.model_dump_json().encode())
        evidence.stage = "import"
        if self.cuda and task.gpu_memory_fraction:
            torch.cuda.set_per_process_memory_fraction(task.gpu_memory_fraction, self.device)
        keep: dict = {}
        with self.channel.gpu(exclusive=False, needed=self.cuda):
            if self.cuda:
                poison_free_memory(self.device)
            report = run_candidate(
                task,
                taskdir,
                self.recorder,
                ref_model,
                init_inputs,
                trial_inputs,
                self.device,
                keep,
                ghost_inputs,
                extra,
                [(name, inputs) for name, _, inputs, _ in degenerate],
                precomputed_inputs,
            )
            probe_records = report.pop("probes")
            prior = report.pop("prior")
            evidence.probe_results = probe_results(report.pop("probe_results"), task.probes)
            report.pop("autotune", None)  # sent with DONE, tunings during timing included
            evidence.environment_changes = list(report.pop("environment_changes"))
            evidence.side_work = list(report.pop("side_work"))
            evidence.torch_ops = {str(k): int(v) for k, v in report.pop("torch_ops").items()}
            evidence.torch_work = {str(k): float(v) for k, v in report.pop("torch_work").items()}
            evidence.tf32_kernels = tf32_kernels(self.recorder.own_kernels)
            evidence.stage = "run"
            try:
                if self.cuda:
                    trusted.synchronize()  # device-wide: work a candidate left on a side stream is finished
                evidence.probes = compare_probes(probe_records, probe_refs, ref_outputs, task.tolerances)
                if prior is not None:
                    evidence.prior_answers = prior_answers(prior, probe_refs.get("precomputed", []), task.tolerances)
                for t, (inputs, sent) in enumerate(zip(all_inputs, report["trials"])):
                    after = sent.pop("inputs_after")
                    sent["mutated"] = [
                        i for i, (a, b) in enumerate(zip(after, inputs)) if a is not None and not same_value(a, b)
                    ]
                    outs = sent.pop("outputs")
                    sent["n_outputs"] = len(outs)
                    gold = golds[t] if t < len(golds) else None
                    sent["outputs"] = judge_outputs(outs, ref_outputs[t], positions[t], task.tolerances, gold)
                if self.cuda:
                    trusted.synchronize()
            except Exception as exc:  # an asynchronous CUDA error of the candidate's kernels surfaces here
                raise StageError("run", error_info(exc, self.recorder.candidate_file)) from None
        lap("candidate")
        self.channel.send("CAND", frames.tensors_to_bytes(report))
        lap("send_candidate")
        evidence.stage = report["stage"]
        if report["error"] is not None:
            return  # the parent builds the error from CAND
        decision, _ = self.channel.expect("TIME", "STOP")
        lap("parent_compare")
        if decision == "STOP" or not timed or "model" not in keep:
            return
        model = keep["model"]

        def forward(xs):
            return model(*xs)

        evidence.stage = "run"
        # The autotuner benchmarked on the candidate's first call: the first correctness trial above, on the
        # same inputs (same tuning key) and before TIME, so none of its benchmarking is in a timed sample.
        # A kernel that tunes again here (a key the trials did not produce) is labelled and noted.
        tuned = len(self.recorder.autotune.choices)
        try:
            with self.channel.gpu():
                lap("wait_gpu")
                cand_stats, last = self.timer.time_forward(forward, trial_inputs, task.timing)
                lap("time_candidate")
                timing.reference_after, _ = self.timer.time_forward(
                    ref_forward, trial_inputs, task.timing, task.timing.check_ms
                )
                pr, profile = None, []
                if task.timing.profile_calls:
                    from tritongym.core.worker.gpu_profile import profile_forward

                    lap("time_reference_again")
                    pr, profile = profile_forward(
                        forward, trial_inputs[0], task.timing.profile_calls, set(self.recorder.own_compiled)
                    )
                    lap("profile")
        except Exception as exc:
            if _note_environment_changes(evidence, keep):
                # the candidate changed torch, Triton or the timers and the timing broke: the change is the
                # finding (the environment check names it), not the error it caused
                evidence.phases["timing_error"] = 1.0
                evidence.stage = "done"
                return
            raise StageError("run", error_info(exc, self.recorder.candidate_file)) from None
        finally:
            for choice in self.recorder.autotune.choices[tuned:]:
                choice.when = "timing"
        during = self.recorder.autotune.choices[tuned:]
        if during:
            timing.notes.append(
                "autotuning ran during timing (" + "; ".join(c.describe() for c in during) + "): in the "
                "warm-up calls before any sample, on a tuning key the correctness trials did not produce"
            )
        timing.candidate = cand_stats
        _note_environment_changes(evidence, keep)  # a patch made (or undone) during timing is still a patch
        payload = {
            "timing": timing.model_dump_json(),
            "pr": pr,
            "profile": json.dumps([p.model_dump() for p in profile]),
            "timed": [
                (trial, len(flat), judge_outputs(flat, ref_outputs[trial], positions[trial], task.tolerances))
                for trial, flat in ((trial, flatten_outputs(outs)) for trial, outs in last)
            ],
        }
        self.channel.send("TIMD", frames.tensors_to_bytes(payload))
        lap("send_timing")
        evidence.stage = "done"

    def _time_compiled_reference(self, task, ref_model, trial_inputs, ref_outputs, timing, lap) -> None:
        """Compile the reference (shared hold: Triton's compiles give it back), check it against eager and
        time it (exclusive hold), all before the candidate is imported; a failure is a note, not an error."""
        from tritongym.core.worker.compiled_reference import CompiledReferenceUnavailable, compile_reference

        try:
            with self.channel.gpu(exclusive=False):
                compiled = compile_reference(ref_model, trial_inputs, ref_outputs, task.tolerances)
                trusted.synchronize()
            lap("compile_reference")
            with self.channel.gpu():
                timing.compile_reference, _ = self.timer.time_forward(compiled, trial_inputs, task.timing)
            timing.compile_reference_source = "measured"
            lap("time_compile_reference")
        except CompiledReferenceUnavailable as exc:
            timing.notes.append(f"no torch.compile reference: {exc}")
        except Exception as exc:  # noqa: BLE001 - the compiled baseline is optional; the eager one still stands
            timing.notes.append(f"no torch.compile reference: timing it failed: {type(exc).__name__}: {exc}"[:500])


def _note_environment_changes(evidence: Evidence, keep: dict) -> bool:
    """Add what changed since the pre-import snapshot to the evidence; whether anything has changed."""
    if "environment" not in keep:
        return False
    changes = environment_changes(keep["environment"])
    evidence.environment_changes += [c for c in changes if c not in evidence.environment_changes]
    return bool(changes)


def serve(in_fd: int, out_fd: int, log_path: str, device_name: str, started: float) -> None:
    """Warm up, say `REDY` (or `FAIL`), then run tasks until told to exit; never returns."""
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    channel = Channel(in_fd, out_fd)
    limits = WorkerTask(problem_name="", problem_source="", file_mb=int(os.environ.get("TRITONGYM_FILE_MB", "64")))
    apply_limits(limits)  # no address-space limit: CUDA's virtual reservations need it (the pool watches RSS)
    try:
        worker = GPUWorker(channel, device_name)
    except BaseException as exc:  # noqa: BLE001 - a worker that cannot start says why, then exits
        channel.send_json("FAIL", {"kind": type(exc).__name__, "message": str(exc)[:2000]})
        os._exit(1)
    channel.send_json("REDY", {**worker.ready_info(), "startup_s": round(time.monotonic() - started, 3)})
    while True:
        _, payload = channel.expect("TASK")
        worker.run(WorkerTask.model_validate_json(payload))


def main() -> None:
    serve(0, os.dup(1), sys.argv[1], sys.argv[2], STARTED)


if __name__ == "__main__":
    main()
