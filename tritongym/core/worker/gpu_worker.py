"""The warm GPU worker: `python -m tritongym.core.worker.gpu_worker LOGFILE DEVICE`, frames on stdin/stdout.

Started by `gpu_pool` ahead of need, one or more per GPU (`CUDA_VISIBLE_DEVICES` names its GPU): it
imports torch and Triton, initialises CUDA, allocates the L2 flush buffer, loads the profiler and says
`REDY` before any candidate exists.  This is the candidate's process: the reference's outputs, gold and
timing live in the GPU's reference keeper (`keeper.py`), another process with its own CUDA context, which
the pool asks before handing this worker the task.  Per task (the protocol of ARCHITECTURE.md §3):

1. the reference module is loaded and `Model` built under the secret seed, for its weights only, and the
   calls planned with the same seeds as the keeper's (the shape sets the keeper kept, `kept_trials`); no
   reference output is ever computed here;
2. the candidate is imported, built, bound and run on every trial and probe
   (`candidate_runner.run_candidate`), streaming: each call gets a fresh input set made from its seed
   (`input_source.py`), and once it returns (synchronised) its outputs are lent to the keeper (one `HOUT` per
   call, answered `HAND`: CUDA IPC handles of buffers the keeper allocated, copied into here; on the CPU the
   values travel as `HDAT`) and dropped; a trial's inputs after the call are compared with a set made again
   from its seed (`mutated`).  So about one call is held at a time.  The report, outputs
   replaced by handout numbers, goes to the parent (`CAND`), which has the keeper judge it.  The parent
   answers `TIME` only if everything matched;
3. under the GPU lock the candidate is timed and a few forwards profiled, and in the same exclusive hold the
   keeper re-times the reference briefly (`RCHK`, answered `RCHD`: the drift check, its numbers never sent
   here); then the timed calls' outputs are lent like the trials' and the timing sent (`TIMD`);
4. `DONE` carries the rest of the evidence (stage, error).

Everything this process sends comes from a process the candidate has run in, which is why the judging
happens in the keeper, and why the pool gives every candidate a fresh worker by default.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from tritongym.core.measure import trusted
from tritongym.core.measure.tensors import plain_output, same_value, timing_inputs
from tritongym.core.models import Evidence, TimingReport
from tritongym.core.worker import cuda_schedule, frames, triton_cache
from tritongym.core.worker.input_source import InputSource
from tritongym.core.worker.launches import tf32_kernels
from tritongym.core.worker.probes import environment_changes
from tritongym.core.worker.protocol import (
    COMPILING,
    FromWorker,
    HandoutAsk,
    HandoutsLent,
    Lifecycle,
    StartFailure,
    ToWorker,
    encode,
)
from tritongym.core.worker.scrub import poison_free_memory, scrubbed_empty_cache
from tritongym.core.worker.stages import StageError, enter_pool_process, error_info, failures_recorded
from tritongym.core.worker.task_runner import (
    build_reference,
    configure_precision,
    install_autotune_policy,
    load_reference,
    make_inputs,
    weight_binding,
)
from tritongym.core.worker.timing_flag import ENV as TIMING_WAITS_ENV
from tritongym.core.worker.timing_flag import TimingWaits
from tritongym.core.worker.trial_plan import plan_extra_trials
from tritongym.core.worker_task import WorkerTask

STARTED = time.monotonic()  # close enough to the process start: how long a warm-up took


class Channel:
    """The worker's side of the pool's frames."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self.holding: str | None = None  # "shared" or "exclusive" while the parent has granted the GPU
        self.compile_s = 0.0  # time spent compiling Triton kernels with the GPU given back
        self.unlock_compiles = False  # TimingOptions.unlock_compiles of the task in hand
        self.yield_calls = False  # TimingOptions.yield_between_calls of the task in hand
        self.yield_to_timings = False  # TimingOptions.yield_to_waiting_timings of the task in hand
        self.timing_waits = TimingWaits(os.environ.get(TIMING_WAITS_ENV))  # the pool's flag (`timing_flag.py`)
        self.yields = 0  # holds given back between calls in the task in hand

    def send(self, kind: str, payload: bytes = b"") -> None:
        frames.send(self.out_fd, kind, payload)

    def send_json(self, kind: str, value) -> None:
        self.send(kind, json.dumps(value).encode())

    def expect(self, *kinds: str) -> tuple[str, bytes]:
        frame = frames.receive(self.in_fd)
        if frame is None or frame[0] == Lifecycle.EXIT:
            os._exit(0)
        if frame[0] not in kinds:
            raise RuntimeError(f"pool protocol: got {frame[0]}, expected one of {kinds}")
        return frame

    def _take(self, exclusive: bool, resume: bool = False) -> None:
        self.send(FromWorker.LOCK if exclusive else FromWorker.RESUME if resume else FromWorker.SHARE)
        self.expect(ToWorker.GRANTED)
        self.holding = "exclusive" if exclusive else "shared"

    def _give_back(self, why: bytes = b"") -> None:
        self.send(FromWorker.UNLOCK, why)
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

    def yield_hold(self) -> None:
        """Between two correctness calls (the last one synchronised, in handouts): step aside for a waiting timing
        (`YILD`: the parent gives the shared hold back and grants it again once that timing has had the GPU,
        `GPULock.step_aside`), so it waits for one call of this worker rather than all of its calls.  Nothing of this
        process runs on the GPU meanwhile.  Always with `yield_between_calls`; with `yield_to_waiting_timings` only
        while the pool's flag says a timing waits (one byte read, no round trip otherwise).  Taken again behind
        every queued timing instead (a plain `SHAR`), a sharer waited for the whole queue after every call: 228 s
        against 105 s for 64 RL candidates on an H100."""
        if self.holding != "shared":
            return
        if not (self.yield_calls or (self.yield_to_timings and self.timing_waits)):
            return
        self.yields += 1
        self.send(FromWorker.YIELD)
        self.expect(ToWorker.GRANTED)

    @contextlib.contextmanager
    def cpu_only(self):
        """Give a shared hold back while this process works on the CPU alone, then take it again.

        Triton compiles a kernel (seconds of LLVM and ptxas, no GPU work) inside the candidate's first
        call, which runs under the shared lock; holding it there would make every timing on this GPU wait
        for other workers' compilers. An exclusive hold is kept: a timing is never split."""
        if self.holding != "shared" or not self.unlock_compiles:
            yield
            return
        self._give_back(COMPILING)  # the pool keeps the compile's seconds off the candidate's budget (a cap)
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
        self.startup_parts: dict[str, float] = {}
        # how CUPTI is set up at the start (`PoolOptions.profiler_warm_up`): "unlocked" (a session that launches no
        # kernel, holding nothing), "startup" (a kernel, under the start's shared hold) or "cupti" (no torch.profiler:
        # CUPTI's activity API read directly, `measure/cupti_activity.py`).  Never later: set up
        # after the candidate's trials, in a thread beside them or before its timing, it missed the candidate's kernels
        # (apparently those of modules loaded before it) and every honest candidate of an RL batch was judged
        # `hacked` (stops 37 and 38)
        self.profiler_warm_up = os.environ.get(frames.PROFILER_WARM_UP_ENV, "cupti")
        if self.cuda:
            release_gpu_while_compiling(channel)
            from tritongym.core.measure.gpu_profile import set_up_cupti, set_up_profiler, warm_profiler
            from tritongym.core.measure.timing import Timer

            # a new context and the timer's buffers launch no kernel: another process's timed matmul is unchanged beside
            # a context's creation (`benchmarks/profiler_warmup.py --interference`, ratio 0.99-1.00 on an H100), so
            # they take no GPU hold, and no timing waits for a worker's start (on two H200s 8-11 s of each GPU's
            # draining waited for starts, `GPULock.drained_by`); the profiler's first run under "startup"
            # launches a kernel and takes a shared hold
            began = time.perf_counter()
            with channel.gpu(exclusive=False, needed=self.profiler_warm_up == "startup"):
                parts = {"lock_wait": time.perf_counter() - began}
                cuda_schedule.apply(self.device.index or 0)  # before the context exists (`PoolOptions.device_schedule`)
                torch.cuda.set_device(self.device)
                torch.empty(1, device=self.device)
                parts["context"] = time.perf_counter() - began - sum(parts.values())
                self.timer = Timer(self.device)
                parts["timer"] = time.perf_counter() - began - sum(parts.values())
                triton_cache.activate()  # Triton's driver now, not at the candidate's first launch
                parts["triton_driver"] = time.perf_counter() - began - sum(parts.values())
                if self.profiler_warm_up == "startup":
                    warm_profiler()  # ~4 s of CUPTI set-up (`benchmarks/profiler_warmup.py`): never inside a timing
                trusted.synchronize()
                parts["profiler"] = time.perf_counter() - began - sum(parts.values())
            if self.profiler_warm_up == "unlocked":
                set_up_profiler()  # launches nothing: no hold, so no timing waits for this worker's ~4 s of it
                parts["profiler"] += time.perf_counter() - began - sum(parts.values())
            elif self.profiler_warm_up == "cupti":
                set_up_cupti()  # CUPTI's activity API without Kineto: ~0.02 s, and it sees kernels loaded before it
                parts["profiler"] += time.perf_counter() - began - sum(parts.values())
            # where a replacement worker's start goes (RL batch on an H100: ~5.8 s of slot time per evaluation)
            self.startup_parts = {k: round(v, 3) for k, v in parts.items()}
            name = torch.cuda.get_device_properties(self.device).name
            self.fingerprint = local_fingerprint(name, driver=driver_version(), cuda=torch.version.cuda)
        else:
            self.fingerprint = local_fingerprint()
        self.tasks = 0
        self.handout_requests = 0  # HOUT requests of the task in hand (one per call once streaming)

    def ready_info(self) -> dict:
        return {
            "fingerprint": self.fingerprint.model_dump(),
            "l2_bytes": self.timer.l2_bytes if self.timer else None,
            "startup_parts": self.startup_parts,
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
        self.channel.yield_calls = task.timing.yield_between_calls
        self.channel.yield_to_timings = task.timing.yield_to_waiting_timings
        self.channel.yields = 0
        with failures_recorded(evidence):
            if task.mode == "screen":  # negative controls only: no candidate code, compared right here
                from tritongym.core.measure.gold import exact_reference
                from tritongym.core.worker.task_runner import run_screen

                configure_precision(task)
                with exact_reference():
                    # the controls run the reference's forwards: GPU work, so under shared holds like any other
                    # (without them a screen's forwards ran beside other tasks' timings: references timed 2x slow)
                    run_screen(task, taskdir, evidence, hold=lambda: self.channel.gpu(False, needed=self.cuda))
                # this worker takes a candidate next (`WorkerPool.run`): the screen's outputs, on the screen's own
                # inputs, go back to the driver poisoned rather than stay cached where the candidate could look
                with self.channel.gpu(exclusive=False, needed=self.cuda):
                    scrubbed_empty_cache(self.device)
            else:
                self._run(task, taskdir, evidence)
        evidence.autotune = list(self.recorder.autotune.choices)  # also for a failed run: what it ran with
        if self.cuda:  # for the fork server, which builds these launchers once for the workers after this one
            evidence.launchers = triton_cache.launcher_signatures(self.recorder.own_kernels.values())
        if self.channel.compile_s:
            evidence.phases["compile_unlocked"] = round(self.channel.compile_s, 4)
        self.channel.send(FromWorker.DONE, evidence.model_dump_json().encode())

    def _run(self, task: WorkerTask, taskdir: str, evidence: Evidence) -> None:
        import time

        import torch

        clock = [time.perf_counter()]

        def lap(name: str | None) -> None:
            now = time.perf_counter()
            if name is not None:  # None: a stretch another process times under its own name
                evidence.phases[name] = round(now - clock[0], 4)
            clock[0] = now

        from tritongym.core.measure.compare import flatten_outputs
        from tritongym.core.worker.candidate_runner import run_candidate

        configure_precision(task, candidate=True)
        reference = load_reference(task, taskdir)
        # the reference's weights, and the trial inputs' seeds, the same secret ones as the keeper's: never its
        # outputs (the keeper holds those in its own process; the answers reach no memory of this one).  No input
        # set is held: each is made from its seed when its call comes (`input_source.py`)
        with self.channel.gpu(exclusive=False, needed=self.cuda):
            ref_model, init_inputs = build_reference(task, reference, self.device)
            source = InputSource.seeded(task, reference, self.device, make_inputs)
            main = source.trial(0)
            extra = plan_extra_trials(
                task, reference, self.device, make_inputs, build_reference, main, keep_inputs=False
            )
            del main
            if task.kept_trials is not None:  # the keeper judges only the shape sets the reference could run
                extra = [trial for trial in extra if trial.seed in task.kept_trials]
            if self.cuda:
                trusted.synchronize()
        lap("inputs")
        evidence.stage = "import"
        if self.cuda and task.gpu_memory_fraction:
            torch.cuda.set_per_process_memory_fraction(task.gpu_memory_fraction, self.device)
        keep: dict = {}
        self.handout_requests = 0

        def pristine(trial: int) -> list:
            return source.trial(trial) if trial < source.n_main else extra[trial - source.n_main].fresh_inputs()

        def on_outputs(where: list, record: dict) -> None:
            """One call done (and synchronised): its outputs to the keeper at once, then dropped here; a trial's
            inputs after the call compared with a pristine set made again from its seed."""
            self.fill_handouts([(where, record["outputs"])])
            if where[0] == "trial":
                _account_trial(record, pristine(int(where[1])))
            self.channel.yield_hold()

        with self.channel.gpu(exclusive=False, needed=self.cuda):
            if self.cuda:
                poison_free_memory(self.device)
            report = run_candidate(
                task, taskdir, self.recorder, ref_model, init_inputs, source, self.device, keep, extra,
                on_outputs=on_outputs,
            )  # fmt: skip
            report["weights"] = weight_binding(task, ref_model, report["weights"]).model_dump()
            report.pop("autotune", None)  # sent with DONE, tunings during timing included
            evidence.environment_changes = list(report.pop("environment_changes"))
            evidence.side_work = list(report.pop("side_work"))
            evidence.torch_ops = {str(k): int(v) for k, v in report.pop("torch_ops").items()}
            evidence.torch_work = {str(k): float(v) for k, v in report.pop("torch_work").items()}
            evidence.phases.update(report.pop("seconds"))
            evidence.tf32_kernels = tf32_kernels(self.recorder.own_kernels)
            evidence.stage = "run"
            lap("candidate")
            failed = report["error"] is not None
            try:
                # what streaming left (a call whose handout failed): accounted, copied into handouts as one group
                if self.cuda:
                    trusted.synchronize()  # device-wide: work a candidate left on a side stream is finished
                for t, sent in enumerate(report["trials"]):
                    if "mutated" not in sent:
                        _account_trial(sent, pristine(t))
                groups = [(["trial", t], sent["outputs"]) for t, sent in enumerate(report["trials"])]
                groups += [(["probe", p["probe"], p["trial"]], p["outputs"]) for p in report["probes"]]
                self.fill_handouts(groups)
            except Exception as exc:  # an asynchronous CUDA error of the candidate's kernels surfaces here
                if not failed:
                    raise StageError("run", error_info(exc, self.recorder.candidate_file)) from None
                # the call that failed already named where (a fault at a shape set, after the main trials were
                # copied into handouts and judged): its error is the finding, and CAND still goes, so the parent
                # judges the main trials (`verdict.crashed_at_shape_set`) instead of seeing only this later symptom
            evidence.counts["handout_requests"] = self.handout_requests
            evidence.counts["yields"] = self.channel.yields
            lap("fill_handouts")
        self.channel.send(FromWorker.CANDIDATE, frames.tensors_to_bytes(report))
        lap("send_candidate")
        evidence.stage = report["stage"]
        if report["error"] is not None:
            return  # the parent builds the error from CAND
        decision, _ = self.channel.expect(ToWorker.TIME, ToWorker.STOP)
        lap(None)  # waiting for TIME/STOP: the keeper's comparison, which the driver times as `pool_compare`
        timed = self.cuda and task.timing.enabled
        if decision == ToWorker.STOP or not timed or "model" not in keep:
            return
        model = keep["model"]

        def forward(xs):
            return model(*xs)

        evidence.stage = "run"
        # The autotuner benchmarked on the candidate's first call: the first correctness trial above, on the
        # same inputs (same tuning key) and before TIME, so none of its benchmarking is in a timed sample.
        # A kernel that tunes again here (a key the trials did not produce) is labelled and noted.
        tuned = len(self.recorder.autotune.choices)
        timing = TimingReport(precision=task.precision)
        try:
            with self.channel.gpu():
                lap("wait_gpu")
                pristine_sets = timing_inputs(source.trial, source.n_main)
                cand_stats, last = self.timer.time_forward(forward, pristine_sets, task.timing)
                del pristine_sets
                lap("time_candidate")
                pr, profile = None, []
                if task.timing.profile_calls:
                    from tritongym.core.measure.gpu_profile import profile_forward

                    pr, profile = profile_forward(
                        forward,
                        source.trial(0),
                        task.timing.profile_calls,
                        set(self.recorder.own_compiled),
                        via="cupti" if self.profiler_warm_up == "cupti" else "kineto",
                    )
                    lap("profile")
                # the reference's drift check, in this same exclusive hold (no second drain of the GPU's sharers):
                # the keeper re-times the reference while this process waits; the answer carries no numbers
                self.channel.send(FromWorker.CHECK_IN_HOLD)
                self.channel.expect(ToWorker.CHECKED)
                lap("drift_check")
        except Exception as exc:
            if _note_environment_changes(evidence, keep):
                # the candidate changed torch, Triton or the timers and the timing broke: the change is the
                # finding (the environment check names it), not the error it caused
                evidence.flags["timing_error"] = True
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
        timed_outputs = [(trial, [plain_output(o) for o in flatten_outputs(outs)]) for trial, outs in last]
        del last
        try:
            with self.channel.gpu(exclusive=False):
                self.fill_handouts([(["trial", trial], flat) for trial, flat in timed_outputs])
            lap("fill_handouts_timed")
        except Exception as exc:
            raise StageError("run", error_info(exc, self.recorder.candidate_file)) from None
        payload = {
            "timing": timing.model_dump_json(),
            "pr": pr,
            "profile": json.dumps([p.model_dump() for p in profile]),
            "timed": [(trial, len(flat), flat) for trial, flat in timed_outputs],
        }
        self.channel.send(FromWorker.TIMED, frames.tensors_to_bytes(payload))
        lap("send_timing")
        evidence.stage = "done"

    LARGE_HAND_OUT = 1 << 30
    """Bytes of outputs from which a handout first gives this process's cached but unused blocks back: the keeper
    allocates as many for the handouts, outside any cache, and a full-size level-1 norm (8 GiB in, 8 GiB out)
    found too little of the GPU free for them while this worker kept its temporaries cached (on an H100)."""

    def fill_handouts(self, groups: list[tuple[list, list]]) -> None:
        """Each group's outputs (a list, changed in place) into the keeper's handouts (`handouts.py`).

        The pool lends a handout per output whose shape and dtype match the reference's; every output
        becomes `{"handout": id}` or, when none was lent, `{"stand_in": description}` (judged by its shape,
        dtype and device alone).  On a GPU the values are copied through CUDA IPC; on the CPU they travel as
        bytes (`HDAT`)."""
        import torch

        from tritongym.core.worker import handouts

        asked = []
        for where, outputs in groups:
            for i, out in enumerate(outputs):
                if type(out) is torch.Tensor:
                    device = str(out.device)
                    asked.append(
                        {
                            "where": where,
                            "index": i,
                            "shape": list(out.shape),
                            "dtype": str(out.dtype),
                            "device": device,
                        }
                    )
        if not asked:
            return
        if self.cuda and sum(out.nbytes for _, outs in groups for out in outs if type(out) is torch.Tensor) >= (
            self.LARGE_HAND_OUT
        ):
            torch.cuda.empty_cache()  # what this process cached but no longer uses, back before the keeper allocates
        self.handout_requests += 1
        self.channel.send(FromWorker.ASK_HANDOUTS, encode(HandoutAsk(outputs=asked)))
        _, answer = self.channel.expect(ToWorker.HANDOUTS)
        lent = HandoutsLent.model_validate_json(answer).lent
        if len(lent) != len(asked):
            raise RuntimeError("pool protocol: HAND lends a different number of handouts than were asked for")
        values, by_bytes = [], {"ids": [], "values": []}
        k = 0
        for _, outputs in groups:
            for i, out in enumerate(outputs):
                if type(out) is not torch.Tensor:
                    continue
                grant, k = lent[k], k + 1
                if grant is None:
                    outputs[i] = {
                        "stand_in": {"shape": list(out.shape), "dtype": str(out.dtype), "device": str(out.device)}
                    }
                    continue
                if grant["handle"] is not None:
                    values.append((grant, out.detach()))
                elif grant["nbytes"] == 0 and out.numel() and not self.cuda:
                    by_bytes["ids"].append(grant["id"])
                    by_bytes["values"].append(out.detach().contiguous())
                outputs[i] = {"handout": grant["id"]}
        if values:
            handouts.copy_into([g for g, _ in values], [v for _, v in values])
        if by_bytes["ids"]:
            self.channel.send(FromWorker.HANDOUT_BYTES, frames.tensors_to_bytes(by_bytes))
            self.channel.expect(ToWorker.BYTES_TAKEN)


def _account_trial(sent: dict, pristine: list) -> None:
    """A trial's record as the keeper reads it: `inputs_after` turned into `mutated` (the inputs the call changed,
    against `pristine`, a set made again from the trial's seed) and `n_outputs`."""
    after = sent.pop("inputs_after")
    sent["mutated"] = [i for i, (a, b) in enumerate(zip(after, pristine)) if a is not None and not same_value(a, b)]
    sent["n_outputs"] = len(sent["outputs"])


def _note_environment_changes(evidence: Evidence, keep: dict) -> bool:
    """Add what changed since the pre-import snapshot to the evidence; whether anything has changed."""
    if "environment" not in keep:
        return False
    changes = environment_changes(keep["environment"])
    evidence.environment_changes += [c for c in changes if c not in evidence.environment_changes]
    return bool(changes)


def serve(in_fd: int, out_fd: int, log_path: str, device_name: str, started: float) -> None:
    """Warm up, say `REDY` (or `FAIL`), then run tasks until told to exit; never returns."""
    enter_pool_process(log_path)  # called in its own session: the whole group goes, the candidate's children too
    channel = Channel(in_fd, out_fd)
    try:
        worker = GPUWorker(channel, device_name)
    except BaseException as exc:  # noqa: BLE001 - a worker that cannot start says why, then exits
        channel.send(Lifecycle.START_FAILED, encode(StartFailure(kind=type(exc).__name__, message=str(exc)[:2000])))
        os._exit(1)
    channel.send_json(Lifecycle.READY, {**worker.ready_info(), "startup_s": round(time.monotonic() - started, 3)})
    while True:
        _, payload = channel.expect(ToWorker.TASK)
        worker.run(WorkerTask.model_validate_json(payload))


def main() -> None:
    serve(0, os.dup(1), sys.argv[1], sys.argv[2], STARTED)


if __name__ == "__main__":
    main()
