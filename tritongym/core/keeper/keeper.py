"""The reference keeper: one trusted process per GPU that holds everything a candidate must not reach.

The pool (`sandbox/gpu_pool.py`) starts one keeper per GPU, from the zygote like a worker, and never lets
candidate code into it.  For each task it builds, or finds already built, the reference's side of the
evaluation (a `ReferenceRecord`): the reference model, the trial inputs, the reference's outputs for every
trial (main, shape sets, late), their float64 gold samples and the probes' reference outputs.  The
candidate's worker, a separate process with its own CUDA context, builds the same inputs and weights from
the same secret seeds but never computes an answer; its outputs come here through handout buffers
(`handouts.py`) and are compared here, so a candidate that walks its frames, its heap or the caching
allocator finds no reference output in its own process, and cannot map one of this process's.

What is held when: a record is built one call at a time, keeps no input set (timing remakes
a few from their seeds) and parks reference outputs from `parking.PARK_BYTES` up in host memory; a candidate's
outputs are compared at the task's next request and their handouts freed (`_compare_pending`).

Records are kept per problem, shape sets, seeds and precision (least recently used first out), so the
candidates of one problem (an RL batch's samples) share one computation of the reference's outputs, gold and
probes; their device bytes are bounded by `cache_mb` (a share of the GPU) and their parked
bytes apart, by a share of the host's memory (`TRITONGYM_KEEPER_HOST_CACHE_SHARE` / `_MB`).  The pool shares
the reference's timing the same way and asks here only for a short drift check per candidate.

Requests are frames from the pool (`protocol.KeeperRequest`, handled by `HANDLERS`), answered one at a time with
`OKAY` (JSON) or `DENY` (`{"stage", "error"}`): `PREP` (a task: build or reuse its record), `RTIM` (time the
reference before the candidate), `DRFT` (the drift check after it, within the worker's exclusive timing hold),
`LEND` (lend handouts for a group of outputs: the worker asks once per call as the call ends), `FILL` (the outputs
themselves, on the CPU), `CMPR` / `CMPT` (compare a candidate's report / its timed calls), `FREE` (the task is
over), `EXIT`.  The pool holds the GPU lock a request needs while it waits.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import sys
import time
from collections import OrderedDict

from tritongym.core.keeper import screen as keeper_screen
from tritongym.core.keeper.device_copies import DeviceCopies
from tritongym.core.measure import trusted
from tritongym.core.measure.tensors import tensor_bytes
from tritongym.core.models import ErrorInfo, OutputComparison, TimingReport, TimingStats
from tritongym.core.timeline import mark
from tritongym.core.worker import frames
from tritongym.core.worker.parking import Parked, fetch, park_all, split_bytes
from tritongym.core.worker.protocol import MALFORMED, KeeperAnswer, KeeperRequest, Lifecycle, record_key, untagged
from tritongym.core.worker.scrub import scrubbed_empty_cache
from tritongym.core.worker.stages import StageError, error_info
from tritongym.core.worker.task_runner import configure_precision
from tritongym.core.worker_task import WorkerTask

STARTED = time.monotonic()
DEFAULT_CACHE_SHARE = 0.25  # of the GPU's memory, for records kept between tasks
DEFAULT_HOST_CACHE_SHARE = 0.0625  # of the host's memory, for the parked outputs of the records kept


class ReferenceRecord:
    """The reference's side of one problem, shape sets, seeds and precision, computed before any candidate, one
    call at a time: per trial the inputs made from the seed, the reference run, the gold sampled, the outputs
    parked (`parking.py`), the inputs dropped; then the shape sets and late trial, then the probes."""

    def __init__(self, task: WorkerTask, workdir: str, device) -> None:
        import torch

        from tritongym.core.measure.compare import flatten_outputs
        from tritongym.core.measure.gold import exact_reference, gold_model, gold_samples
        from tritongym.core.measure.tensors import clone_all
        from tritongym.core.worker.distributions import out_of_domain, output_scales, trial_distribution, trial_scales
        from tritongym.core.worker.input_source import InputSource
        from tritongym.core.worker.op_trace import traced_call
        from tritongym.core.worker.plugin_probes import reference_answers
        from tritongym.core.worker.probes import buffer_snapshot, generator_states, reference_probe_outputs
        from tritongym.core.worker.task_runner import build_reference, load_reference, make_inputs
        from tritongym.core.worker.trial_plan import plan_extra_trials, reference_outputs, shape_set_gold

        began = time.perf_counter()
        cuda = device.type == "cuda"
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
            baseline = torch.cuda.memory_allocated(device)
        configure_precision(task)
        self.device = device
        self.reference = load_reference(task, workdir)
        self.ref_model, _ = build_reference(task, self.reference, device)
        built = self.built = buffer_snapshot(self.ref_model)  # the mode probes start from the buffers as built
        self.source = InputSource.seeded(task, self.reference, device, make_inputs)
        self.ref_outputs: list[list] = []
        # per entry of ref_outputs, its inputs made again on demand: an index output that differs is held against
        # them for ties (`measure/ties.py`), rarely, so they are not kept
        self.trial_inputs: list = [functools.partial(self.source.trial, t) for t in range(self.source.n_main)]
        self.golds: list[list] = []
        self.torch_ops: dict = {}
        self.torch_work: dict = {}
        self.input_bytes = 0  # one main trial's inputs (timing's bytes moved)
        self.forward_peak_bytes = 0
        model64 = gold_model(self.ref_model)
        generator = torch.Generator(device=device)
        generator.manual_seed(task.init_seed ^ 0x601D)
        self.draws_random = False  # whether the reference's forward draws from torch's generators (dropout, randn)
        scales = []  # each main trial's outputs' size and NaN count: its tolerances follow, or it left the domain
        # where the build's seconds went, for the timeline (`keeper_request`'s parts): work queued on the GPU is
        # counted where the host next waits for it (parking copies to host memory)
        self.build_parts: dict[str, float] = {}
        lap = _stopwatch(self.build_parts)
        lap(None)
        for t in range(self.source.n_main):
            inputs = self.source.trial(t)
            self.input_bytes = self.input_bytes or tensor_bytes(inputs)
            before = generator_states()
            try:
                with torch.no_grad(), exact_reference():
                    raw, ops, work = traced_call(self.ref_model, *clone_all(inputs))
            except Exception as exc:
                raise StageError("problem", error_info(exc)) from None
            lap("forward")
            self.draws_random = self.draws_random or any(
                not torch.equal(a, b) for a, b in zip(before, generator_states())
            )
            self.torch_ops = self.torch_ops or ops
            self.torch_work = self.torch_work or work
            outputs = flatten_outputs(raw)
            del raw
            if cuda and t == 0:
                # one forward's peak (its inputs, their clone, its outputs and temporaries, with the weights and
                # their float64 copy): what a candidate's worker is sized from; the build's whole peak also holds
                # the float64 gold's temporaries (49 GiB for a 12 GiB ReLU forward), which no worker computes
                self.forward_peak_bytes = max(torch.cuda.max_memory_allocated(device) - baseline, 0)
            self.golds.append(gold_samples(model64, inputs, outputs, generator, self.ref_model))
            scales.append(output_scales(outputs))
            lap("gold")
            self.ref_outputs.append(park_all(outputs))
            lap("park")
            del inputs, outputs
        del model64
        self.trial_scales = trial_scales(scales)  # per main trial (`distributions.py`): tolerances are each task's
        self.planned: list[dict] = [
            {"seed": seed, "distribution": trial_distribution(k), "out_of_domain": outside}
            for k, (seed, outside) in enumerate(zip(task.seeds, out_of_domain(scales)))
        ]
        extra = plan_extra_trials(
            task, self.reference, device, make_inputs, build_reference, self.input_bytes, keep_inputs=False
        )
        for trial in extra:
            with exact_reference():
                outs = reference_outputs(task, self.reference, self.ref_model, trial)
            if outs is not None:
                # a shape set's gold (none for the late trial), at the same index as its outputs
                self.golds.append(shape_set_gold(self.reference, self.ref_model, trial, outs, generator))
                self.ref_outputs.append(park_all(outs))
                self.trial_inputs.append(trial.fresh_inputs)
                self.planned.append(trial.evidence_fields())
            del outs
            trial.ref_model = None  # the candidate's worker builds its own; the outputs are kept
        del extra
        lap("shape_sets")
        try:
            with exact_reference():
                # the `precomputed` probe's inputs are each task's own (`precomputed_seed`): its answer is
                # `precomputed_answer`'s, per task, not the record's
                self.probe_refs = reference_probe_outputs(
                    self.ref_model,
                    dataclasses.replace(self.source, precomputed=None),
                    keep=park_all,
                    same_as_trial=self._same_as_trial,
                    built=built,
                    wanted=set(task.probes),  # the declared probes only: `record_key` holds them
                )
                # the plugin probes' trusted halves, on the inputs the candidate's calls get (`plugin_probes.py`)
                self.probe_answers = reference_answers(self.ref_model, self.source, task.probes, built=built)
        except StageError:
            raise
        except Exception as exc:
            raise StageError("problem", error_info(exc)) from None
        if cuda:
            trusted.synchronize()
        lap("probes")
        if cuda:
            self.peak_bytes = max(torch.cuda.max_memory_allocated(device) - baseline, 0)
        else:
            self.peak_bytes = 0
        self.device_bytes, self.host_bytes = self._bytes()
        self.compute_s = time.perf_counter() - began

    def precomputed_answer(self, task: WorkerTask) -> tuple[list, list]:
        """The reference's answer to this task's `precomputed` inputs, one forward before the candidate runs:
        (the outputs to compare the probe's with, parked like the record's; the samples where the task's watch
        looks).  The task holds them, and the pool their host memory (`answer_host_mb`), until it ends."""
        import torch

        from tritongym.core.measure.compare import flatten_outputs
        from tritongym.core.measure.gold import exact_reference
        from tritongym.core.worker.input_source import InputSource
        from tritongym.core.worker.probes import answer_samples, prior_answer_seed, restore_buffers
        from tritongym.core.worker.task_runner import make_inputs

        source = InputSource.seeded(task, self.reference, self.device, make_inputs)
        was_training = self.ref_model.training
        restore_buffers(self.ref_model, self.built)  # as the record's probes began: from the buffers as built
        try:
            with torch.no_grad(), exact_reference():
                outputs = [
                    o.detach() if isinstance(o, torch.Tensor) else o
                    for o in flatten_outputs(self.ref_model(*source.precomputed()))
                ]
            samples = answer_samples(outputs, prior_answer_seed(task))
            return park_all(outputs), samples
        except Exception as exc:
            raise StageError("problem", error_info(exc)) from None
        finally:
            self.ref_model.train(was_training)

    def _same_as_trial(self, trial: int, outputs: list) -> list | None:
        """The trial's stored outputs if `outputs` equal them exactly (a mode probe of a reference that has no
        mode): shared, so a full-size problem parks three fewer copies of its output in host memory."""
        import torch

        stored = self.ref_outputs[trial]
        if len(stored) != len(outputs):
            return None
        for kept, value in zip(stored, outputs):
            if type(value) is not torch.Tensor or not isinstance(kept, (torch.Tensor, Parked)):
                return None
            if kept.shape != value.shape or kept.dtype != value.dtype:
                return None
            if not torch.equal(fetch(kept, value.device), value):
                return None
        return stored

    def _bytes(self) -> tuple[int, int]:
        """(bytes held on the keeper's device, bytes parked in host memory): weights, outputs, gold samples."""
        golds = [v for trial in self.golds for s in trial if s is not None for v in (s.positions, s.values)]
        outputs = [o for outs in self.ref_outputs for o in outs] + [o for v in self.probe_refs.values() for o in v]
        params = list(self.ref_model.parameters()) + list(self.ref_model.buffers())
        return split_bytes(list({id(v): v for v in outputs + golds + params}.values()))  # a shared output once

    @property
    def nbytes(self) -> int:
        return self.device_bytes + self.host_bytes

    def timing_inputs(self, least: int = 2) -> list[list]:
        """The pristine sets timing refreshes from, made again from their seeds (bounded by bytes; `least=1`: one
        set where memory is short, the reference being trusted)."""
        from tritongym.core.measure.tensors import timing_inputs

        return timing_inputs(self.source.trial, self.source.n_main, least=least)

    def tolerances_for(self, trial: int, tolerances: dict) -> dict:
        """A main trial's tolerance table (its `atol` scaled when its inputs were scaled up, its relative-norm bound
        when they were scaled down); others' as given."""
        from tritongym.core.worker.distributions import scaled_tolerances

        if not 0 <= trial < len(self.trial_scales):
            return tolerances
        return scaled_tolerances(tolerances, *self.trial_scales[trial])

    def inputs_of(self, where: list):
        """`["trial", t]`, or a probe run on a main trial's own values (`runs_on_trial_values`): a callable making
        those inputs again, for a lent index output that differs (`measure/ties.py`); None for other probes."""
        from tritongym.core.worker.probes import runs_on_trial_values

        if where[0] == "trial":
            return self.trial_inputs[int(where[1])]
        name, trial = str(where[1]), int(where[2])
        return self.trial_inputs[trial] if runs_on_trial_values(name) and 0 <= trial < self.source.n_main else None

    def refs_for(self, where: list, probe_refs: dict) -> list:
        """The reference outputs a group of candidate outputs is compared with: `["trial", t]` or
        `["probe", name, trial]` (refresh and repeat compare with a trial's outputs; a probe's from the task's
        `probe_refs`: the record's, with the task's own `precomputed` answer)."""
        if where[0] == "trial":
            return self.ref_outputs[int(where[1])]
        name, trial = str(where[1]), int(where[2])
        if name in ("refresh", "repeat"):
            return self.ref_outputs[trial]
        return probe_refs.get(name, [])


def _stopwatch(into: dict[str, float]):
    """`lap(name)`: the seconds since the last lap added to `into[name]` (`lap(None)` restarts the clock)."""
    clock = [time.perf_counter()]

    def lap(name: str | None) -> None:
        now = time.perf_counter()
        if name is not None:
            into[name] = into.get(name, 0.0) + now - clock[0]
        clock[0] = now

    return lap


def _dtype(name: str):
    import torch

    value = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"{name!r} is not a torch dtype")
    return value


def _shape(value) -> list[int]:
    if not isinstance(value, list) or not all(type(n) is int and n >= 0 for n in value) or len(value) > 32:
        raise ValueError(f"{value!r} is not a shape")
    return list(value)


class Keeper:
    """The keeper's state: its device, timer, the record cache and each running task's handouts."""

    def __init__(self, device_name: str) -> None:
        import torch

        from tritongym.core.fingerprint import local_fingerprint
        from tritongym.core.worker.gpu_worker import driver_version

        self.device = torch.device(device_name)
        self.cuda = self.device.type == "cuda"
        self.timer = None
        if self.cuda:
            from tritongym.core.measure.gpu_profile import warm_profiler  # noqa: F401 - loaded like a worker's
            from tritongym.core.measure.timing import Timer
            from tritongym.core.worker import cuda_schedule

            cuda_schedule.apply(self.device.index or 0)  # before the context exists (`PoolOptions.device_schedule`)
            torch.cuda.set_device(self.device)
            torch.empty(1, device=self.device)
            self.timer = Timer(self.device)
            trusted.synchronize()
            props = torch.cuda.get_device_properties(self.device)
            self.total_bytes = props.total_memory
            self.fingerprint = local_fingerprint(props.name, driver=driver_version(), cuda=torch.version.cuda)
        else:
            self.total_bytes = 0
            self.fingerprint = local_fingerprint()
        share = float(os.environ.get("TRITONGYM_KEEPER_CACHE_SHARE", DEFAULT_CACHE_SHARE))
        # the share is of what the GPU has beside processes outside the pool (a trainer beside the judge)
        outside_mb = float(os.environ.get("TRITONGYM_KEEPER_OUTSIDE_MB", 0.0))
        default_mb = share * max(self.total_bytes / 2**20 - outside_mb, 0.0) if self.cuda else 2048
        self.cache_bytes = int(float(os.environ.get("TRITONGYM_KEEPER_CACHE_MB", default_mb)) * 2**20)
        # parked outputs (host memory) are bounded apart: they must not count against the GPU's share
        host_share = float(os.environ.get("TRITONGYM_KEEPER_HOST_CACHE_SHARE", DEFAULT_HOST_CACHE_SHARE))
        host_default_mb = host_share * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
        self.host_cache_bytes = int(float(os.environ.get("TRITONGYM_KEEPER_HOST_CACHE_MB", host_default_mb)) * 2**20)
        self.records: OrderedDict[str, ReferenceRecord] = OrderedDict()
        # parked outputs compared again (the next candidates of a problem) from a copy on the device, in the room
        # the kept records leave in the cache share (`device_copies.py`)
        self.device_copies = DeviceCopies(self.device, self.cache_bytes)
        self.tasks: dict[str, dict] = {}
        self.handout_ids = 0
        self.builds = 0
        # per problem, shapes and precision (`_field_key`): the reference's timing under the field's convention
        # and the float32 ops that made it differ (None and []: the same as its own class), kept for the keeper's
        # life like the pool's own-class timings; a problem always comes to the same keeper
        self.field_timings: dict[str, tuple[TimingStats | None, list[str]]] = {}

    def ready_info(self) -> dict:
        return {
            "fingerprint": self.fingerprint.model_dump(),
            "l2_bytes": self.timer.l2_bytes if self.timer else None,
            "total_mb": round(self.total_bytes / 2**20, 1),
            "role": "keeper",
        }

    # --- requests ----------------------------------------------------------------------------------------

    def prep(self, payload: bytes) -> dict:
        data = json.loads(payload)
        task = WorkerTask.model_validate(data["task"])
        key = record_key(task)
        cached = key in self.records
        if cached:
            record = self.records[key]
            self.records.move_to_end(key)
        else:
            workdir = os.path.join(os.getcwd(), f"record-{self.builds}")
            self.builds += 1
            os.makedirs(workdir, exist_ok=True)
            record = self._build(task, workdir)
            # kept at once, not when the task ends: the other samples of an RL batch's problem, running beside
            # this one, share it instead of each building its own
            self._keep(key, record)
        parts = {} if cached else dict(record.build_parts)
        lap = _stopwatch(parts)
        lap(None)
        configure_precision(task)
        # `precomputed`'s inputs are this task's own: answered per task, when a check declares the probe
        answer, samples = record.precomputed_answer(task) if "precomputed" in task.probes else ([], [])
        lap("precomputed")
        # the build's temporaries and this forward's go back to the GPU now, not when the task ends: the pool
        # reserved them for `PREP` only (a full-size build's peak, 55 GiB for a 12 GiB forward, held by the keeper
        # ran the judging of the candidate's outputs out of memory beside its worker); scrubbed, so the answer
        # just computed cannot reach the candidate's worker in the memory it is given
        scrubbed_empty_cache(self.device)
        lap("scrub")
        self.tasks[data["task_id"]] = {
            "task": task,
            "record": record,
            "refs": {**record.probe_refs, "precomputed": answer},  # the record's, and this task's own answer
            "answer_samples": samples,
            "key": key,
            "handouts": {},
            "pending": [],
            "compared": {},
        }
        return {
            "planned": record.planned,
            "output_counts": [len(outs) for outs in record.ref_outputs],
            "reference_torch_ops": record.torch_ops,
            "reference_torch_work": record.torch_work,
            "cached": cached,
            "peak_mb": round(record.peak_bytes / 2**20, 2),
            "forward_peak_mb": round(record.forward_peak_bytes / 2**20, 2),
            "record_mb": round(record.nbytes / 2**20, 2),
            "record_host_mb": round(record.host_bytes / 2**20, 2),
            "record_device_mb": round(record.device_bytes / 2**20, 2),
            # what one call's handouts take on the device while the candidate's outputs are judged
            "lent_mb": round(sum(split_bytes(record.ref_outputs[0])) / 2**20, 2) if record.ref_outputs else 0.0,
            "answer_host_mb": round(split_bytes(answer)[1] / 2**20, 2),
            "compute_s": round(record.compute_s, 4),
            "draws_random": record.draws_random,
            **self._memory_held("after_prep"),
            "_parts": {name: round(seconds, 6) for name, seconds in parts.items()},
        }

    def size(self, payload: bytes) -> dict:
        """`SIZE`: what the pool should reserve before `PREP`: the measured peak of a record
        this keeper holds, or one forward weighed on the meta device (`footprint.py`: nothing allocated)."""
        from tritongym.core.footprint import forward_bytes, weigh
        from tritongym.core.worker.parking import park_threshold
        from tritongym.core.worker.task_runner import load_reference

        task = WorkerTask.model_validate(json.loads(payload)["task"])
        record = self.records.get(record_key(task))
        if record is not None:
            return {"peak_mb": round(record.peak_bytes / 2**20, 2)}
        workdir = os.path.join(os.getcwd(), f"size-{self.builds}")
        os.makedirs(workdir, exist_ok=True)
        try:
            found = weigh(load_reference(task, workdir))
        except StageError as exc:  # a problem that does not load: PREP will say so, with its error
            found = {"error": exc.info.message}
        weighed = forward_bytes(found)
        outputs = found.get("outputs")
        return {
            "forward_mb": None if weighed is None else round(weighed / 2**20, 2),
            "outputs_mb": None if outputs is None else round(outputs / 2**20, 2),
            "park_mb": round(park_threshold() / 2**20, 4),  # outputs this large are parked in host memory
            "error": found.get("error"),
        }

    def _build(self, task: WorkerTask, workdir: str) -> ReferenceRecord:
        """A new record; a reference that cannot fit the GPU is the problem's error, with its size in it."""
        import torch

        self.device_copies.clear()  # another problem's: the build, or a task that has the GPU alone, may need it
        try:
            return ReferenceRecord(task, workdir, self.device)
        except torch.OutOfMemoryError as exc:
            self.records.clear()  # nothing kept from other problems stands in its way next time
            scrubbed_empty_cache(self.device)
            total = self.total_bytes / 2**30
            raise StageError(
                "problem",
                ErrorInfo(
                    kind="OutOfMemory",
                    message=f"the reference's outputs, gold and probes do not fit this GPU ({total:.1f} GiB): {exc}"[
                        :2000
                    ],
                ),
            ) from None

    def _state(self, data: dict) -> dict:
        state = self.tasks.get(data.get("task_id"))
        if state is None:
            raise ValueError(f"no task {data.get('task_id')!r} is prepared here")
        return state

    def time_reference(self, payload: bytes) -> dict:
        """The reference timed before the candidate (shortly when a timing is already known) and, when
        asked, torch.compile's; what the old single worker sent as `REFT`."""
        data = json.loads(payload)
        state = self._state(data)
        task, record = state["task"], state["record"]
        timing = TimingReport(precision=task.precision)
        if not (self.cuda and task.timing.enabled):
            return {"timing": timing.model_dump_json()}
        configure_precision(task)  # timed in the policy's class; the keeper serves every policy in turn
        from tritongym.core.measure.timing import measure_copy_bandwidth

        params = list(record.ref_model.parameters()) + list(record.ref_model.buffers())
        timing.bytes_moved = record.input_bytes + tensor_bytes(params) + sum(split_bytes(record.ref_outputs[0]))
        timing.bandwidth_gbps = task.bandwidth_gbps or measure_copy_bandwidth(self.device)
        # a timing the pool already holds (from the registry, or from a task of this problem beside this one)
        known = task.cached_reference is not None or bool(data.get("known"))
        rep = task.timing.check_ms if known else None
        phases: dict[str, float] = {}
        began = time.perf_counter()
        timing.reference_before = self._time_lean_on_oom(record, task, rep)
        scrubbed_empty_cache(self.device)  # the timing's input sets and outputs back before the candidate's worker
        phases["time_reference"] = round(time.perf_counter() - began, 4)
        memory = self._memory_held("after_timing")  # seconds and sizes apart: `Evidence.phases`, `.memory_mb`
        compile_known = task.cached_compile_reference is not None or bool(data.get("compile_known"))
        if task.compile_reference and not compile_known:
            self._time_compiled(task, record, timing, phases)
        self._time_field(task, record, timing, phases)
        return {"timing": timing.model_dump_json(), "phases": phases, "memory_mb": memory}

    @staticmethod
    def _field_key(task: WorkerTask) -> str:
        """What the field's timing depends on: the problem, its shapes and the policy (whose own class it differs
        from), not the draw of seeds."""
        identity = json.dumps([task.problem_source, task.sizes, task.precision], sort_keys=True, default=str)
        return hashlib.sha256(identity.encode()).hexdigest()

    def _time_field(self, task: WorkerTask, record: ReferenceRecord, timing: TimingReport, phases: dict) -> None:
        """The reference timed under the field's convention (`measure/field_convention.py`: torch's TF32 defaults,
        as KernelBench's published baselines), before the candidate exists, where it differs from the reference's
        own class: once per problem, shapes and policy (the registry's copy, else this keeper's).  Whether it
        differs is measured: one forward traced for float32 ops whose TF32 switch is not the field's.  A failure
        here leaves the field's speedup unknown (with a note), never the verdict."""
        from tritongym.core.measure.field_convention import differing_switches, field_switches, sensitive_ops

        if task.cached_field_reference is not None:
            timing.field_reference = TimingStats.model_validate(task.cached_field_reference)
            timing.field_reference_source = "cached"
            return
        key = self._field_key(task)
        if key in self.field_timings:
            stats, ops = self.field_timings[key]
            timing.field_reference, timing.field_ops = stats, list(ops)
            timing.field_reference_source = "same_as_own" if stats is None else "cached"
            return
        began = time.perf_counter()
        try:
            ops = sensitive_ops(record.ref_model, record.source.trial(0), differing_switches(task.precision))
            stats = None
            if ops:
                with field_switches():
                    stats = self._time_lean_on_oom(record, task, None)
                scrubbed_empty_cache(self.device)
        except Exception as exc:  # noqa: BLE001 - the own-class timing stands; the field's speedup stays unknown
            timing.notes.append(f"no field-convention reference: {type(exc).__name__}: {exc}"[:500])
            return
        self.field_timings[key] = (stats, ops)
        timing.field_reference, timing.field_ops = stats, ops
        timing.field_reference_source = "same_as_own" if stats is None else "measured"
        phases["time_field_reference"] = round(time.perf_counter() - began, 4)

    def _time_lean_on_oom(self, record: ReferenceRecord, task: WorkerTask, rep_ms: float | None):
        """The reference timed; out of GPU memory, timed again with one pristine input set and the cache given
        back first.  Level 1's 96_HuberLoss (two 4 GiB inputs) ran its keeper out of memory here on an H100,
        alone on the GPU: two pristine sets, the buffers, the warm-up's and the graph's temporaries."""
        import torch

        def timed(least: int):
            stats, _ = self.timer.time_forward(
                self._forward(record), record.timing_inputs(least=least), task.timing, rep_ms
            )
            return stats

        try:
            return timed(least=2)
        except torch.OutOfMemoryError:
            pass
        scrubbed_empty_cache(self.device)  # out of the except block: the traceback's tensors are gone
        return timed(least=1)

    def drift_check(self, payload: bytes) -> dict:
        """The short paired re-timing after the candidate's timing: a slower reference says the candidate left
        work on the GPU that slows others down."""
        data = json.loads(payload)
        state = self._state(data)
        task, record = state["task"], state["record"]
        configure_precision(task)
        budget_ms = task.timing.check_ms
        if data.get("settle"):
            # the pool's second look at a slower reference: what was queued has finished, the caching
            # allocator's spare blocks are back (a nearly full GPU made allocations slow), a longer sample

            trusted.synchronize()
            scrubbed_empty_cache(self.device)
            time.sleep(0.05)
            budget_ms *= 2
        stats, _ = self.timer.time_forward(self._forward(record), record.timing_inputs(), task.timing, budget_ms)
        return {"reference_after": stats.model_dump_json()}

    @staticmethod
    def _forward(record: ReferenceRecord):
        model = record.ref_model

        def forward(xs):
            return model(*xs)

        return forward

    def _time_compiled(self, task: WorkerTask, record: ReferenceRecord, timing: TimingReport, phases: dict) -> None:
        from tritongym.core.worker.compiled_reference import CompiledReferenceUnavailable, compile_reference

        def trials():  # one trial's inputs and outputs on the device at a time
            for t in range(record.source.n_main):
                yield record.source.trial(t), [fetch(r, self.device) for r in record.ref_outputs[t]]

        began = time.perf_counter()
        try:
            compiled = compile_reference(record.ref_model, trials(), task.tolerances)
            trusted.synchronize()
            phases["compile_reference"] = round(time.perf_counter() - began, 4)
            began = time.perf_counter()
            timing.compile_reference, _ = self.timer.time_forward(compiled, record.timing_inputs(), task.timing)
            phases["time_compile_reference"] = round(time.perf_counter() - began, 4)
            timing.compile_reference_source = "measured"
        except CompiledReferenceUnavailable as exc:
            timing.notes.append(f"no torch.compile reference: {exc}")
        except Exception as exc:  # noqa: BLE001 - the compiled baseline is optional; the eager one still stands
            timing.notes.append(f"no torch.compile reference: timing it failed: {type(exc).__name__}: {exc}"[:500])

    def lend(self, payload: bytes) -> dict:
        """Handouts for the outputs a group names whose shape and dtype match the reference's (the others are
        judged from their description alone): a handle per output, or None."""
        import torch

        from tritongym.core.worker import handouts

        data = json.loads(payload)
        state = self._state(data)
        began = time.perf_counter()
        self._compare_pending(state)
        compared = time.perf_counter()
        record: ReferenceRecord = state["record"]
        lent = []
        for item in data["outputs"]:
            refs = record.refs_for(item["where"], state["refs"])
            index = int(item["index"])
            ref = refs[index] if index < len(refs) else None
            shape, dtype = _shape(item["shape"]), _dtype(item["dtype"])
            matches = (
                _is_ref(ref)
                and list(ref.shape) == shape
                and ref.dtype == dtype
                and str(item["device"]).split(":")[0] == self.device.type
            )
            if not matches:
                lent.append(None)
                continue
            nbytes = sum(split_bytes([ref]))
            state["lent_bytes"] = state.get("lent_bytes", 0) + nbytes
            if state["lent_bytes"] > 4 * record.nbytes + (64 << 20):
                raise ValueError("the worker asked for more handouts than the reference has outputs to compare")
            self.handout_ids += 1
            ident = self.handout_ids
            state["pending"].append((ident, list(item["where"]), index))
            if self.cuda and nbytes:
                handout = self._allocate_handout(dtype, shape)
                state["handouts"][ident] = handout
                lent.append({"id": ident, "handle": handout.handle, "nbytes": handout.nbytes})
            else:  # the CPU (or an empty output): the values come as bytes (`FILL`), or there are none
                state["handouts"][ident] = torch.empty(shape, dtype=dtype, device=self.device)
                lent.append({"id": ident, "handle": None, "nbytes": 0})
        if self.cuda and any(grant and grant["handle"] for grant in lent):
            # `cuMemsetD8` is asynchronous to the host: unfinished, it could overwrite the candidate's copy with
            # 0xFF after the handle was sent (all NaN: a correct kernel judged incorrect, seen once on an H100)
            allocated = time.perf_counter()
            handouts.synchronize()
        else:
            allocated = time.perf_counter()
        # its parts, on the timeline (`serve`): a warm relu task's lends took 10-15 ms each on an H200, of which
        # the comparison (one pass, `fused_stats.py`) is under 1 ms
        parts = {"compare": compared - began, "allocate": allocated - compared, "sync": time.perf_counter() - allocated}
        return {"lent": lent, "_parts": {k: round(v, 6) for k, v in parts.items()}}

    def _allocate_handout(self, dtype, shape: list[int]):
        """A handout, its allocation tried again once after this process's cached blocks went back to the driver
        (the handouts are allocated outside torch's cache, so blocks cached from the build stand in their way);
        out of memory then, the error says what the GPU had free."""
        import torch

        from tritongym.core.worker.handouts import CudaError, Handout

        try:
            return Handout(dtype, shape)
        except CudaError as exc:
            if "out of memory" not in str(exc):
                raise
        self.device_copies.clear()
        scrubbed_empty_cache(self.device)
        try:
            return Handout(dtype, shape)
        except CudaError as exc:
            free, total = torch.cuda.mem_get_info(self.device)
            mine = torch.cuda.memory_reserved(self.device)
            mib = 1 << 20
            raise CudaError(
                f"{exc}: a handout of {math.prod(shape) * dtype.itemsize // mib} MiB for the candidate's output, "
                f"with {free // mib} of {total // mib} MiB of the GPU free and {mine // mib} MiB cached by the keeper"
            ) from None

    def receive(self, payload: bytes) -> dict:
        """The CPU's handouts: the values themselves, each checked against what was lent."""
        import torch

        task_id, data = _from_worker(payload)
        state = self._state({"task_id": task_id})
        for ident, value in zip(data["ids"], data["values"]):
            lent = state["handouts"].get(int(ident))
            if type(lent) is not torch.Tensor or type(value) is not torch.Tensor:
                raise ValueError(f"handout {ident} was not lent as a tensor")
            if value.shape != lent.shape or value.dtype != lent.dtype:
                raise ValueError(f"handout {ident} came back as {value.dtype}{list(value.shape)}")
            lent.copy_(value)
        return {}

    def _compare_pending(self, state: dict) -> None:
        """The outputs lent before this request (filled by now: the worker asks again only once its copies are
        done) compared at once against the reference their group named (gold for a main trial before `CMPR`; a
        degeneracy probe's also against the control's answer), and their handouts freed."""
        from tritongym.core.worker.handouts import Handout

        task, record = state["task"], state["record"]
        for ident, where, index in state["pending"]:
            lent = state["handouts"].pop(ident)
            out = lent.tensor if isinstance(lent, Handout) else lent
            t = int(where[1]) if where[0] == "trial" and not state.get("timed") else -1
            # the main trials' and the shape sets', before `CMPR`
            golds = record.golds[t] if 0 <= t < len(record.golds) else []
            gold = golds[index] if index < len(golds) else None
            ref = record.refs_for(where, state["refs"])[index]
            # a trial's outputs, or a probe's on a main trial's inputs (`["probe", name, trial]`): that trial's table
            on = int(where[1]) if where[0] == "trial" else int(where[2])
            remake = record.inputs_of(where)
            comparison = self._compared(index, out, ref, record.tolerances_for(on, task.tolerances), gold, remake)
            control = None
            answer = record.probe_refs.get(f"{where[1]}#control", []) if where[0] == "probe" else []
            if index < len(answer) and _is_ref(answer[index]):
                control = self._compared(index, out, answer[index], task.tolerances)
            state["compared"][ident] = (where, index, comparison, control)
            if isinstance(lent, Handout):
                lent.free()
            del out, lent
        state["pending"].clear()

    def _output(self, state: dict, entry, where: list, index: int):
        """A report's entry as compared: a handout's comparison (named where it was lent), a stand-in of the
        described shape (no memory: only its description is compared), or the name of a type that is no tensor."""
        import torch

        if isinstance(entry, dict) and "handout" in entry:
            compared = state["compared"].get(int(entry["handout"]))
            if compared is None:
                raise ValueError(f"the report names handout {entry['handout']}, which was not lent")
            if compared[:2] != (where, index):
                raise ValueError(
                    f"the report names handout {entry['handout']} as output {index} of {where}; "
                    f"it was lent for output {compared[1]} of {compared[0]}"
                )
            return _Compared(*compared[2:])
        if isinstance(entry, dict) and "stand_in" in entry:
            d = entry["stand_in"]
            stand_in = torch.empty(_shape(d["shape"]), dtype=_dtype(d["dtype"]), device="meta")
            stand_in.tritongym_device = str(d["device"])[:40]
            return stand_in
        if isinstance(entry, dict) and "not_a_tensor" in entry:
            return {"not_a_tensor": str(entry["not_a_tensor"])[:200]}
        return {"not_a_tensor": "unknown"}

    def _compared(self, index: int, out, stored, tolerances, gold=None, inputs=None) -> OutputComparison:
        """`compare_output` against a stored reference output; a parked one is brought to this device a chunk at
        a time, never whole: a full-size output fetched whole beside the candidate's handout of it (both 8 GiB,
        level 1's 87_conv_pointwise_2D) ran the keeper out of GPU memory on the H100, even with the GPU alone."""
        from tritongym.core.measure.compare import compare_output

        if isinstance(stored, Parked):
            copy = self.device_copies.get(stored, self._copy_room())
            if copy is None:
                return compare_output(
                    index, out, stored.host, tolerances, gold, ref_device=self.device, inputs=inputs, fused=True
                )
            stored = copy
        return compare_output(index, out, stored, tolerances, gold, inputs=inputs, fused=True)

    def _copy_room(self) -> int:
        """The cache share's bytes that the kept records leave for device copies of parked outputs."""
        return self.cache_bytes - sum(r.device_bytes for r in self.records.values())

    def _live_parked(self) -> set[int]:
        """The identities of the parked outputs that a kept record or a running task's record holds."""
        records = list(self.records.values()) + [s["record"] for s in self.tasks.values() if "record" in s]
        return {
            id(value)
            for record in {id(r): r for r in records}.values()
            for outputs in [*record.ref_outputs, *record.probe_refs.values()]
            for value in outputs
            if isinstance(value, Parked)
        }

    def _compare(self, tolerances):
        """A handout's comparison, or an unlent output (stand-in, type name) compared with its reference."""

        def compare(i: int, out, stored, against_control: bool = False, gold=None):
            if isinstance(out, _Compared):
                return out.control if against_control else out.comparison
            if not _is_ref(stored):
                return None
            return _described(self._compared(i, out, stored, tolerances, gold), out)

        return compare

    def compare(self, payload: bytes) -> dict:
        """The candidate's report (outputs as handouts) compared with the record: per trial the output
        comparisons (with gold for the main trials), the probes, and the `precomputed` probe's prior answers."""
        from tritongym.core.worker.plugin_probes import probe_calls
        from tritongym.core.worker.probes import compare_probes, prior_answers

        task_id, report = _from_worker(payload)
        state = self._state({"task_id": task_id})
        self._compare_pending(state)
        task, record = state["task"], state["record"]
        trials = []
        for t, sent in enumerate(report["trials"][: len(record.ref_outputs)]):
            compare = self._compare(record.tolerances_for(t, task.tolerances))
            golds = record.golds[t] if t < len(record.golds) else []
            outs = [self._output(state, e, ["trial", t], i) for i, e in enumerate(sent["outputs"])]
            pairs = enumerate(zip(outs, record.ref_outputs[t]))
            found = [compare(i, out, ref, gold=golds[i] if i < len(golds) else None) for i, (out, ref) in pairs]
            trials.append([c for c in found if c is not None])
        compare = self._compare(task.tolerances)
        records = []
        for probe in report["probes"]:
            where = ["probe", probe["probe"], probe["trial"]]
            outs = [self._output(state, e, where, i) for i, e in enumerate(probe["outputs"])]
            records.append({**probe, "outputs": outs})
        prior = report.get("prior")
        # the decoy: the ghost probe's answer (other inputs, drawn alike), sampled where each record was
        decoys = state["refs"].get("ghost", [])
        found = prior_answers(prior, state["answer_samples"], task.tolerances, decoys) if prior else []
        main_refs, found = record.ref_outputs[: len(task.seeds)], {"precomputed": found}
        calls = compare_probes(records, state["refs"], main_refs, task.tolerances, compare, findings=found)
        for call, rec in zip(calls, records):
            for comparison in call.outputs + call.control_outputs:
                _described(comparison, rec["outputs"][comparison.index])
        # the plugin probes' answers, parsed and bounded here (they come from the candidate's process), each beside
        # its trusted half's answer from the record
        calls += probe_calls(report.get("plugin_answers"), task.probes, record.probe_answers)
        self._give_back(state)
        state["timed"] = True  # outputs lent from now on are the timed calls': compared without gold, as before
        return {
            "trials": [[c.model_dump(mode="json") for c in cs] for cs in trials],
            "probes": [c.model_dump(mode="json") for c in calls],
        }

    def compare_timed(self, payload: bytes) -> dict:
        data = frames.tensors_from_bytes(payload)
        state = self._state(data)
        self._compare_pending(state)
        task, record = state["task"], state["record"]
        compared = []
        for trial, n_outputs, entries in data["timed"]:
            compare = self._compare(record.tolerances_for(int(trial), task.tolerances))
            outs = [self._output(state, e, ["trial", int(trial)], i) for i, e in enumerate(entries)]
            found = [compare(i, o, r) for i, (o, r) in enumerate(zip(outs, record.ref_outputs[int(trial)]))]
            comparisons = [c for c in found if c is not None]
            compared.append([int(trial), int(n_outputs), [c.model_dump(mode="json") for c in comparisons]])
        self._give_back(state)
        return {"timed": compared}

    def _give_back(self, state: dict) -> None:
        from tritongym.core.worker.handouts import Handout

        for lent in state["handouts"].values():
            if isinstance(lent, Handout):
                lent.free()
        state["handouts"].clear()
        state["pending"].clear()
        state["compared"].clear()

    def _memory_held(self, when: str) -> dict[str, float]:
        """This keeper's GPU memory in MiB, allocated (live tensors) and reserved (its cache too), every record and
        task of it together: on an H100 the keeper of level 1's 96_HuberLoss held 48.77 GiB through its
        candidate's run and the next problem's screen while its record said a few bytes; the results' `memory_mb`
        (`keeper_{allocated,reserved}_mb_{when}`) say which request leaves what behind."""
        if not self.cuda:
            return {}
        import torch

        mib = 2**20
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        # segments of a private pool (a CUDA graph's) apart from the allocator's own: a graph kept alive holds its
        # temporaries there, which `empty_cache` cannot give back
        try:
            segments = torch.cuda.memory_snapshot(include_traces=False)
        except TypeError:  # a torch before `include_traces`
            segments = torch.cuda.memory_snapshot()
        private = sum(
            s.get("total_size", 0)
            for s in segments
            if s.get("device", index) == index and tuple(s.get("segment_pool_id") or (0, 0)) != (0, 0)
        )
        return {
            f"keeper_allocated_mb_{when}": round(torch.cuda.memory_allocated(self.device) / mib, 1),
            f"keeper_reserved_mb_{when}": round(torch.cuda.memory_reserved(self.device) / mib, 1),
            f"keeper_private_pool_mb_{when}": round(private / mib, 1),
        }

    def release_cache(self) -> None:
        """This process's cached but unused GPU blocks back to the driver (poisoned first), after a failed request."""
        try:
            self.device_copies.clear()
            scrubbed_empty_cache(self.device)
        except Exception as exc:  # noqa: BLE001 - a broken context fails the next request, which says so
            print(f"tritongym keeper: could not release the cache: {exc}", file=sys.stderr, flush=True)

    def free(self, payload: bytes) -> dict:
        """The task is over: its handouts go back, its record stays if the cache has room for it."""
        state = self.tasks.pop(json.loads(payload).get("task_id"), None)
        if state is None:
            return {}
        self._give_back(state)
        self._keep(state["key"], state["record"])
        scrubbed_empty_cache(self.device)
        return {"cached_records": len(self.records)}

    def _keep(self, key: str, record: ReferenceRecord) -> None:
        """The record, newest in the cache; the oldest go while the cache is over its budgets (a record a
        running task still holds lives on in that task until it ends)."""
        self.records[key] = record
        self.records.move_to_end(key)
        while self.records and (
            sum(r.device_bytes for r in self.records.values()) > self.cache_bytes
            or sum(r.host_bytes for r in self.records.values()) > self.host_cache_bytes
        ):
            self.records.popitem(last=False)
        self.device_copies.keep_only(self._live_parked())
        self.device_copies.trim(self._copy_room())


class _Compared:
    """A lent output's comparisons: with its reference and (or None) with the control's answer."""

    def __init__(self, comparison: OutputComparison, control: OutputComparison | None) -> None:
        self.comparison, self.control = comparison, control


def _is_ref(value) -> bool:
    """A stored reference that is a tensor (on the device, or parked)."""
    import torch

    return type(value) is torch.Tensor or isinstance(value, Parked)


def _described(comparison: OutputComparison, out) -> OutputComparison:
    """`compare_output` ran on a stand-in (a meta tensor: shape and dtype, no memory, judged by its description
    alone): the comparison names the device the candidate's output was on."""
    device = getattr(out, "tritongym_device", None)
    if device is not None and comparison.device == "meta":
        comparison.device = device
    return comparison


def _from_worker(payload: bytes):
    """A worker's tensors that the pool relayed unopened (`protocol.tagged`): (task id, what they decode to).  Bytes
    that do not decode are the worker's malformed frame (stage `protocol.MALFORMED`), not the keeper's failure."""
    try:
        task_id, sent = untagged(payload)
        return task_id, frames.tensors_from_bytes(sent)
    except Exception as exc:  # noqa: BLE001 - whatever the bytes were, they are the worker's
        raise StageError(MALFORMED, ErrorInfo(kind=type(exc).__name__, message=f"undecodable: {exc}"[:2000])) from None


HANDLERS = {
    KeeperRequest.SIZE: Keeper.size,
    KeeperRequest.PREPARE: Keeper.prep,
    KeeperRequest.TIME_REFERENCE: Keeper.time_reference,
    KeeperRequest.DRIFT_CHECK: Keeper.drift_check,
    KeeperRequest.LEND: Keeper.lend,
    KeeperRequest.FILL: Keeper.receive,
    KeeperRequest.COMPARE: Keeper.compare,
    KeeperRequest.COMPARE_TIMED: Keeper.compare_timed,
    KeeperRequest.FREE: Keeper.free,
    KeeperRequest.SCREEN: keeper_screen.screen,
}
"""The keeper's side of `protocol.KeeperRequest`: one method per request."""


def serve(in_fd: int, out_fd: int, log_path: str, device_name: str, started: float) -> None:
    """Warm up, say `REDY` (or `FAIL`), then answer requests until told to exit; never returns."""
    from tritongym.core.worker.stages import enter_pool_process

    enter_pool_process(log_path)
    try:
        keeper = Keeper(device_name)
    except BaseException as exc:  # noqa: BLE001 - a keeper that cannot start says why, then exits
        failure = {"kind": type(exc).__name__, "message": str(exc)[:2000]}
        frames.send(out_fd, Lifecycle.START_FAILED, json.dumps(failure).encode())
        os._exit(1)
    info = {**keeper.ready_info(), "startup_s": round(time.monotonic() - started, 3)}
    frames.send(out_fd, Lifecycle.READY, json.dumps(info).encode())
    if keeper.cuda:  # the one-pass comparison's kernel, compiled while the first requests come in
        from tritongym.core.measure import fused_stats

        fused_stats.warm_up(keeper.device)
    while True:
        frame = frames.receive(in_fd)
        if frame is None or frame[0] == Lifecycle.EXIT:
            os._exit(0)
        kind, payload = frame
        handler = HANDLERS.get(kind)
        began = time.perf_counter()
        failed = False
        try:
            if handler is None:
                raise ValueError(f"the keeper does not know request {kind}")
            answer = handler(keeper, payload)
            parts = answer.pop("_parts", None)  # where a request's time went (`lend`), for the timeline only
            # its own time, so the pool can tell work here from waiting for this keeper (phase `keeper_queue`)
            answer["_keeper_s"] = round(time.perf_counter() - began, 6)
            frames.send(out_fd, KeeperAnswer.OKAY, json.dumps(answer).encode())
            # on the timeline (when one is named: `timeline.py`), each request with its own seconds: a cold eval's
            # 3.3 s inside the keeper was a `SIZE` (its first meta forward), not the screen it was taken for
            mark("keeper_request", kind=kind, seconds=answer["_keeper_s"], **({"parts": parts} if parts else {}))
        except StageError as exc:
            failed = True
            refusal = {"stage": exc.stage, "error": exc.info.model_dump()}
            frames.send(out_fd, KeeperAnswer.DENY, json.dumps(refusal).encode())
        except Exception as exc:  # noqa: BLE001 - a request that fails is answered, the keeper lives on
            failed = True
            info = ErrorInfo(kind=type(exc).__name__, message=f"the reference keeper failed on {kind}: {exc}"[:2000])
            frames.send(out_fd, KeeperAnswer.DENY, json.dumps({"stage": "keeper", "error": info.model_dump()}).encode())
            print(f"tritongym keeper: {kind} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        if failed:
            # the failed request's tensors went with its traceback; their cached blocks go back to the driver:
            # kept, a keeper whose timing ran out of memory held 48 GiB through the next problem's screen, which
            # then ran out too (level 1's 96 and 97, on an H100)
            keeper.release_cache()


def main() -> None:
    serve(0, os.dup(1), sys.argv[1], sys.argv[2], STARTED)


if __name__ == "__main__":
    main()
