"""Issue 27 item 1, "tensors released between trials, shape sets and controls": the worker streams its calls
(one input set and one call's outputs at a time, each handed to the keeper as soon as the call is done) and the
keeper parks large tensors in host memory (`worker/parking.py`).  Run for real on the CPU pool (Triton's
interpreter), like tests/test_pool.py.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest
import torch

from tests.conftest import RELU_KERNEL, settled, task_for, waits_in
from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.problems import load_problem
from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
from tritongym.core.worker_task import WorkerTask

CANDIDATES = Path(__file__).resolve().parent / "hacks" / "candidates"
ROWS, COLS = 3072, 4096  # 48 MiB of float32 per input set, and per output
SET_MB = ROWS * COLS * 4 / 2**20

BIG_RELU = f"""
import torch
import torch.nn as nn

ROWS = {ROWS}
COLS = {COLS}


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
"""

BIG_RELU_KERNEL = RELU_KERNEL.replace("1024", str(1 << 20))  # few programs: Triton's interpreter is slow per program


def big_task(**fields) -> WorkerTask:
    """A CPU pool task for BIG_RELU (48 MiB in, 48 MiB out), ieee tolerances; `fields` set or override the rest."""
    defaults = {"problem_name": "big_relu", "problem_source": BIG_RELU, "device": "cpu", "seeds": [1]}
    return WorkerTask(tolerances=tolerances_for("ieee", {}), **{**defaults, **fields})


def _status(pid: int) -> dict[str, float]:
    """The process's memory lines of /proc/PID/status, in MiB."""
    found = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    return found


# slow tier (107 s on two shared CPUs): a dozen 48 MiB calls through the interpreter; the fast tier's
# memory-peak test is test_a_screen_holds_one_input_transform_at_a_time, on the same problem
@pytest.mark.slow
def test_the_worker_holds_about_one_call_at_a_time():
    """A problem whose one forward holds 48 MiB in and 48 MiB out, evaluated with three trials, a shape set, the
    late trial and every probe (a dozen calls): the worker's resident memory grows by a few sets, not by every
    set and output of the task (the hoarding design of b256a7d grew by about 1.9 GiB here: every input set,
    every output, and all outputs serialised at once for the keeper)."""
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=2, memory_mb=8192))
    try:
        worker = pool._take()  # the only worker; it serves this task and stays (max_tasks=2) to be measured
        with open(f"/proc/{worker.pid}/clear_refs", "w") as f:
            f.write("5")  # the peak (VmHWM) starts again from the resident memory now
        before = _status(worker.pid)["VmRSS"]
        pool.ready.put(worker)
        task = big_task(candidate_source=BIG_RELU_KERNEL, seeds=[1, 2, 3], extra_sizes=[{"ROWS": 1024}])
        evidence = pool.run(task, timeout_s=600)
        grown = _status(worker.pid)["VmHWM"] - before
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert len(evidence.trials) == 5 and evidence.trials[-1].late  # three trials, the shape set, the late one
        assert all(o.mismatched == 0 for t in evidence.trials for o in t.outputs)
        assert grown < 8 * SET_MB, f"the worker's peak grew by {grown:.0f} MiB during the task"
    finally:
        pool.close()


def _judged(evidence, exact: bool = True) -> str:
    """What the keeper judged, as text: every trial's and probe's comparisons (the ghost probe's but its values),
    the inputs found changed and the prior answers (no timings).  Not `exact`: whether each output was wrong,
    not by how much (for a candidate that returns memory whose values are not reproducible)."""
    fields = ("index", "shape", "dtype", "device", "mismatched", "max_abs_err", "rel_norm_err", "gold_err", "note")

    def comparisons(outputs) -> list:
        if not exact:
            return [[o.index, o.shape, o.dtype, o.device, bool(o.mismatched)] for o in outputs]
        return [{k: getattr(o, k) for k in fields} for o in outputs]

    trials = [[t.seed, t.late, t.n_outputs, t.mutated_inputs, comparisons(t.outputs)] for t in evidence.trials]
    probes = [
        [p.probe, p.trial, p.n_outputs, p.ref_n_outputs, p.error]
        # the ghost's kernels are skipped: its outputs hold whatever `empty` memory held, not reproducible
        + ([] if p.probe == "ghost" else [comparisons(p.outputs), comparisons(p.control_outputs)])
        for p in evidence.probes
    ]
    return json.dumps([trials, probes, [p.findings for p in evidence.probes]], default=str)


def _task(problem, source: str) -> WorkerTask:
    return task_for(
        problem,
        source,
        extra_sizes=list(problem.extra_sizes)[:1],
        degenerate={"zeros": "negated", "other_seed_output": "scaled"},
    )


@pytest.fixture(scope="module")
def pools():
    """A pool whose keeper parks what it parks by default and one that parks every tensor, for the module's tests
    (a pool's start, its zygote and keeper, is about 5 s of CPU); two workers in the second, for the samples of a
    batch run side by side.  A test that gives a pool budgets of its own does so in `budgets`."""
    from tritongym.core.worker.parking import PARK_BYTES

    default = {"TRITONGYM_PARK_BYTES": str(PARK_BYTES)}  # also when the suite runs with TRITONGYM_PARK_BYTES set
    plain = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, extra_env=default))
    parked = WorkerPool(
        PoolOptions(gpus=["cpu"], workers_per_gpu=2, memory_mb=4096, extra_env={"TRITONGYM_PARK_BYTES": "1"})
    )
    yield plain, parked
    plain.close()
    parked.close()


@contextlib.contextmanager
def budgets(pool: WorkerPool):
    """The module pool's memory budgets and measured peaks as a test sets them meanwhile, as they were afterwards."""
    names = ("memory", "total_mb", "peaks", "host_peaks")
    saved = {name: dict(getattr(pool, name)) for name in names}
    host = pool.host_memory
    pool.keeper("cpu")  # up first: a keeper's start is where a pool learns its budgets
    try:
        yield pool
    finally:
        for name in names:
            getattr(pool, name).clear()
            getattr(pool, name).update(saved[name])
        pool.host_memory = host


def _finding_honest(evidence) -> bool:
    main = [p for p in evidence.probes if p.probe != "ghost"]
    return all(o.mismatched == 0 for t in evidence.trials for o in t.outputs) and all(
        o.mismatched == 0 for p in main for o in p.outputs
    )


CASES = [
    ("relu", None, _finding_honest, True),
    ("relu", "wrong", lambda e: all(o.mismatched for t in e.trials for o in t.outputs), True),
    ("relu", "input_mutation_inplace.py", lambda e: any(t.mutated_inputs for t in e.trials), True),
    (
        "relu",
        "late_call_count_cache.py",  # its stale answer is a buffer an earlier call returned: values not reproducible
        lambda e: e.trials[-1].late and e.trials[-1].outputs[0].mismatched and not e.trials[0].outputs[0].mismatched,
        False,
    ),
    ("gelu", "call_count_cache.py", lambda e: any(o.mismatched for p in e.probes for o in p.outputs), True),
]


@pytest.mark.parametrize("problem_name, candidate, finding, exact", CASES, ids=[c[1] or "solution" for c in CASES])
def test_a_keeper_that_parks_every_tensor_judges_the_same(pools, problem_name, candidate, finding, exact):
    """With `TRITONGYM_PARK_BYTES=1` every reference output and probe reference is parked (on the CPU: wrapped, so
    every comparison goes through `parking.fetch`); the keeper's judgement is the same, to the last field, as a
    keeper that parks nothing, and it still sees what the candidate did."""
    problem = load_problem(problem_name)
    if candidate is None:
        source = problem.solution
    elif candidate == "wrong":
        source = problem.solution.replace("return out", "return out * 2")
    else:
        source = (CANDIDATES / candidate).read_text()
    plain, parked = pools
    kept = plain.run(_task(problem, source), timeout_s=300)
    moved = parked.run(_task(problem, source), timeout_s=300)
    assert kept.error is None and moved.error is None, (kept.error, moved.error)
    assert kept.memory_mb["reference_host_mb"] == 0 and moved.memory_mb["reference_host_mb"] > 0
    assert _judged(moved, exact) == _judged(kept, exact)
    assert finding(moved), _judged(moved)[:2000]
    # several handouts per task: one per call with outputs, each answered before the next call
    calls = len(moved.trials) + sum(1 for p in moved.probes if p.n_outputs)
    assert moved.counts["handout_requests"] == calls and calls > 10
    assert {"degenerate:zeros", "degenerate:other_seed_output"} <= {p.probe for p in moved.probes}


DROPOUT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(torch.relu(x))


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
"""


def test_a_mode_probe_that_repeats_a_trial_shares_its_stored_outputs(tmp_path):
    """The mode probes run the reference on trial inputs: for a reference with no train/eval or grad behaviour
    their outputs are the trial's, held once (a full-size problem parks three fewer copies); a reference whose
    train mode differs (dropout) keeps its own copy for that probe."""
    from tritongym.core.keeper.keeper import ReferenceRecord
    from tritongym.core.worker.parking import split_bytes
    from tritongym.core.worker.probes import MODE_PROBES, mode_probe_name

    relu = load_problem("relu")
    record = ReferenceRecord(_task(relu, BIG_RELU_KERNEL), str(tmp_path), torch.device("cpu"))
    for k, (grad, train) in enumerate(MODE_PROBES):
        assert record.probe_refs[mode_probe_name(grad, train)] is record.ref_outputs[k % 3]
    outputs = [o for outs in record.ref_outputs for o in outs] + [o for v in record.probe_refs.values() for o in v]
    golds = [v for trial in record.golds for g in trial if g is not None for v in (g.positions, g.values)]
    counted_twice = sum(split_bytes(outputs + golds + list(record.ref_model.parameters())))
    one_output = record.ref_outputs[0][0].numel() * record.ref_outputs[0][0].element_size()
    assert record.nbytes == counted_twice - 3 * one_output  # the three shared outputs are counted once

    task = _task(relu, BIG_RELU_KERNEL).model_copy(update={"problem_source": DROPOUT, "sizes": {}, "extra_sizes": []})
    (tmp_path / "dropout").mkdir()
    dropout = ReferenceRecord(task, str(tmp_path / "dropout"), torch.device("cpu"))
    for k, (grad, train) in enumerate(MODE_PROBES):  # the trials ran in train mode (the module's default)
        if not train:  # eval mode skips the dropout: other values, a copy of its own
            probe = dropout.probe_refs[mode_probe_name(grad, train)]
            assert not any(probe is outs for outs in dropout.ref_outputs)
            assert not torch.equal(probe[0], dropout.ref_outputs[k % 3][0])


def test_samples_of_one_problem_running_side_by_side_share_the_keepers_record(tmp_path, monkeypatch):
    """Issue 27 item 3: an RL batch's samples of one problem run at once on a GPU's workers; the second task's
    `PREP` arrives while the first is still running, and must find the record the first one built (it was kept
    only when a task ended: every sample of a batch built its own)."""
    import json

    from tritongym.core.keeper.keeper import Keeper

    monkeypatch.chdir(tmp_path)
    keeper = Keeper("cpu")
    relu = load_problem("relu")
    first = keeper.prep(json.dumps({"task": task_for(relu, RELU_KERNEL).model_dump(mode="json"), "task_id": "a"}))
    other = RELU_KERNEL + "\n# another sample\n"
    second = keeper.prep(json.dumps({"task": task_for(relu, other).model_dump(mode="json"), "task_id": "b"}))
    assert (first["cached"], second["cached"]) == (False, True)
    assert keeper.tasks["a"]["record"] is keeper.tasks["b"]["record"] and keeper.builds == 1
    keeper.free(json.dumps({"task_id": "a"}))
    keeper.free(json.dumps({"task_id": "b"}))
    assert len(keeper.records) == 1


def test_an_rl_batch_draws_one_set_of_seeds_per_problem(evaluator):
    """Issue 27 item 3 through the Evaluator: the samples of one problem in a batch get the same fresh seeds and
    weight seed, the key under which the keeper shares one record among them (test_pool's
    `..._reference_once_for_all_its_candidates`); another problem, and the next batch, draw anew."""
    relu, silu = load_problem("relu"), load_problem("silu")
    samples = [(relu.solution + f"\nSAMPLE = {k}\n", relu) for k in range(2)] + [(silu.solution, silu)]
    tasks = []
    make_task = evaluator._task
    evaluator._task = lambda *args, **kwargs: tasks.append(make_task(*args, **kwargs)) or tasks[-1]  # what reached it
    results = evaluator.evaluate_many(samples)
    assert [r.status.value for r in results] == ["ok"] * 3, [r.message for r in results]
    assert len({(tuple(t.seeds), t.init_seed) for t in tasks[:2]}) == 1
    assert (tasks[2].seeds, tasks[2].init_seed) != (tasks[0].seeds, tasks[0].init_seed)
    evaluator.evaluate(relu.solution + "\nSAMPLE = 2\n", relu)
    assert (tasks[3].seeds, tasks[3].init_seed) != (tasks[0].seeds, tasks[0].init_seed)


def test_a_screen_holds_one_input_transform_at_a_time():
    """The negative-control screen of a problem with 48 MiB in and 48 MiB out: one seed, three controls, three
    input transforms.  It held every transform's inputs and outputs at once (about ten sets: a full-size
    KernelBench screen ran out of the H100's memory, issue 27); now at most five sets are alive (5.6 measured,
    the comparisons' temporaries included; 13.5 before).  The screen runs in the GPU's keeper
    (`keeper/screen.py`), so the keeper's peak is the one watched; an on-demand pool starts no worker for it."""
    # comparisons in small chunks, so their float64 temporaries do not hide what the screen holds
    small = {"TRITONGYM_COMPARE_CHUNK_ELEMENTS": str(1 << 16)}
    options = PoolOptions(gpus=["cpu"], workers_per_gpu=1, start_on_demand=True, memory_mb=8192, extra_env=small)
    pool = WorkerPool(options)
    try:
        keeper = pool.keeper("cpu")
        with open(f"/proc/{keeper.pid}/clear_refs", "w") as f:
            f.write("5")
        before = _status(keeper.pid)["VmRSS"]
        evidence = pool.run(big_task(mode="screen"), timeout_s=600)
        grown = _status(keeper.pid)["VmHWM"] - before
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert pool.workers_started == 0  # the keeper's work alone
        assert set(evidence.controls) == {"zeros", "other_seed_output", "identity"}
        assert set(evidence.control_breaks["identity"]) == {"negated", "scaled", "normal"}
        assert grown < 7.5 * SET_MB, f"the keeper's peak grew by {grown:.0f} MiB ({grown / SET_MB:.1f} sets)"
    finally:
        pool.close()


def test_the_keeper_weighs_a_new_problem_on_the_meta_device(tmp_path, monkeypatch):
    """`SIZE`: before any record exists, one forward weighed without allocating (here 3 MiB in, 3 MiB out: the
    record built after it is the keeper's full build, in this process); once the record is built, its measured
    peak instead."""
    import json

    from tritongym.core.keeper.keeper import Keeper

    monkeypatch.chdir(tmp_path)
    keeper = Keeper("cpu")
    rows = ROWS // 16
    task = big_task(problem_source=BIG_RELU.replace(f"ROWS = {ROWS}", f"ROWS = {rows}"))
    payload = json.dumps({"task": task.model_dump(mode="json"), "task_id": "a"})
    set_mb = rows * COLS * 4 / 2**20
    assert keeper.size(payload) == {"forward_mb": 2 * set_mb, "outputs_mb": set_mb, "park_mb": 64.0, "error": None}
    keeper.prep(payload)
    assert set(keeper.size(payload)) == {"peak_mb"}  # the record's own measurement (0 on the CPU: no allocator)


class RecordingBudget:
    """A pool's `MemoryBudget` that remembers every need asked of it, in order: what a task reserved, read directly."""

    def __new__(cls, capacity_mb: float):
        from tritongym.core.sandbox.gpu_pool import MemoryBudget

        class Recording(MemoryBudget):
            def __init__(self, capacity: float) -> None:
                super().__init__(capacity)
                self.asked: list[float] = []

            def reserve(self, need_mb: float) -> float:
                self.asked.append(need_mb)
                return super().reserve(need_mb)

        return Recording(capacity_mb)


def admission_clock(monkeypatch) -> list[float]:
    """A clock for the pool's admission (`sandbox/admission.py` times its waits with it alone) that moves only when
    the test moves it: a wait the test lets last five seconds measures exactly five, with no sleep."""
    import types

    from tritongym.core.sandbox import admission

    clock = [1000.0]
    monkeypatch.setattr(admission, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    return clock


# slow tier (94 s): the 48 MiB problem judged in full after the wait; the fast tier's admission waits are
# test_pool's test_gpu_memory_is_admitted_from_measured_need and test_gpu_sharing's overflow test
@pytest.mark.slow
def test_a_task_waits_for_gpu_memory_before_its_reference_is_built(monkeypatch):
    """Issue 27 item 1: the keeper's build of a new problem's reference reserves memory before it starts (it
    ran beside other work with nothing reserved and the H100 ran out); the wait is not the candidate's time,
    and the build's measured peak is what the problem's next task reserves.  A CPU pool given a real budget: the
    task is seen waiting in the budget before anything is built, and the five seconds the test lets pass on the
    admission's clock are its `gpu_memory_wait`, exactly."""
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=3, memory_mb=4096))
    try:
        relu = load_problem("relu")  # the pool warmed up first (worker and keeper started), with no budget yet
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None and len(pool.peaks) == 1
        clock = admission_clock(monkeypatch)
        budget = pool.memory["cpu"] = RecordingBudget(4000.0)
        pool.total_mb["cpu"] = 8000.0
        held = budget.reserve(3500.0)  # what is left (500 MiB) is less than any task reserves
        big = big_task(candidate_source=BIG_RELU_KERNEL)
        found = []
        runner = threading.Thread(target=lambda: found.append(pool.run(big, timeout_s=300)), daemon=True)
        runner.start()
        waits_in(budget, 1, "the new problem's reference build", timeout_s=240)
        assert runner.is_alive() and len(pool.peaks) == 1  # waiting: the new problem's reference not built
        assert budget.asked[1] >= 1024.0  # the build's reservation, the first the task asked for
        clock[0] += 5.0  # the wait lasts five seconds
        budget.release(held)
        runner.join(timeout=300)  # a hang guard
        evidence = found[0]
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert evidence.phases["gpu_memory_wait"] == 5.0, evidence.phases  # the wait, and only it
        assert len(pool.peaks) == 2 and settled(budget).reserved_mb == 0.0  # measured and kept; everything given back
    finally:
        pool.close()


def test_the_registrys_peak_is_what_a_new_pool_reserves(pools, tmp_path):
    """A peak the registry kept from an earlier run is reserved before the build instead of the meta-device
    estimate, and a peak this pool measured itself wins over both.  The path is the production one from end to
    end: the Evaluator stores a run's measured peak (`_keep_reference_memory`), a later Evaluator's task carries it
    (`_registry_facts`, `_task`: `WorkerTask.reference_peak_mb`), and the pool reserves what that task carries
    (`RecordingBudget.asked`), waiting while it does not fit.  Two stand-ins, both because the CPU measures no
    peak: the evidence's measured peak (a CPU keeper reports 0 MiB, and a GPU's would be stored) and the
    backend's device type while the Evaluator reads and writes the registry (it skips the registry on the CPU)."""
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.models import Candidate, Evidence
    from tritongym.core.plugins import PluginHost
    from tritongym.core.registry import Registry

    relu = load_problem("relu")
    registry = Registry(tmp_path / "registry.db")

    def evaluator() -> Evaluator:
        config = EvalConfig(backend="triton-cpu", size="cpu", trials=2, use_cache=False)
        return Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False))

    def on_a_gpu(ev: Evaluator):  # what the Evaluator does with the registry on a GPU backend
        ev.backend.device_type = "cuda"
        return ev

    first = on_a_gpu(evaluator())
    unknown = first._task(Candidate(source=RELU_KERNEL), relu, facts=first._registry_facts(relu))
    assert unknown.reference_peak_mb is None  # nothing kept yet
    measured = Evidence(reference_peak_mb=3600.0, memory_mb={"reference_host_mb": 250.0})  # the run's measured memory
    first._keep_reference_memory(measured, unknown, relu)
    assert registry.reference_memory(relu.key, first.device_class) == (3600.0, 250.0)
    carried = unknown.model_copy(update={"reference_peak_mb": 3600.0, "reference_host_mb": 250.0})
    first._keep_reference_memory(Evidence(reference_peak_mb=9.0, memory_mb={"reference_host_mb": 1.0}), carried, relu)
    assert registry.reference_memory(relu.key, first.device_class) == (3600.0, 250.0)  # a task that carried it: none
    first.close()

    later = evaluator()  # a new run: its task carries the registry's peak
    facts = on_a_gpu(later)._registry_facts(relu)
    later.backend.device_type = "cpu"  # the task itself runs on the CPU pool below
    kept = later._task(Candidate(source=RELU_KERNEL), relu, facts=facts)
    later.close()
    assert kept.reference_peak_mb == 3600.0 and kept.reference_host_mb == 250.0 and kept.device == "cpu"

    try:
        with budgets(pools[0]) as pool:
            assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # warm: worker and keeper up
            pool.peaks.clear()  # a new pool: nothing measured in it
            budget = pool.memory["cpu"] = RecordingBudget(4000.0)
            pool.total_mb["cpu"] = 8000.0
            held = budget.reserve(500.0)
            estimated = pool.run(task_for(relu, RELU_KERNEL, seeds=[4, 5]), timeout_s=120)
            assert estimated.error is None and budget.asked[1] == 1024.0  # relu's estimate: the floor, beside 500
            pool.peaks.clear()
            budget.asked.clear()
            found = []
            runner = threading.Thread(target=lambda: found.append(pool.run(kept, timeout_s=120)), daemon=True)
            runner.start()
            waits_in(budget, 1, "the build reserving the registry's 3600 MiB beside 500 of 4000")
            assert budget.asked == [3600.0]  # the registry's peak, not the estimate
            budget.release(held)
            runner.join(timeout=120)  # a hang guard
            assert found[0].error is None, found[0].error
            measured = pool.peaks[list(pool.peaks)[0]]  # this pool measured the problem now (0 MiB on the CPU)
            budget.asked.clear()
            again = kept.model_copy(update={"candidate_source": RELU_KERNEL + "\n# again\n"})
            assert pool.run(again, timeout_s=120).error is None
            assert budget.asked[0] == max(1024.0, measured)  # the pool's own peak wins
    finally:
        registry.close()


def test_a_task_that_carries_the_registrys_memory_asks_the_keeper_to_weigh_nothing(tmp_path, monkeypatch):
    """A problem the registry knows (its reference's GPU peak and parked host MiB) is reserved from those, with no
    `SIZE`: a fresh keeper's first meta-device weighing imports torch._dynamo (3.3 s of a cold `tritongym eval` on
    an H200, seen on the keeper's timeline).  A problem it does not know is weighed, once, when a neighbour holds
    part of the GPU; a lone task (nothing else in the pool, nothing held) weighs nothing and reserves the whole GPU
    and host budget, since weighing only serves packing.  A real CPU pool with budgets of its own; the keeper's
    requests read from the timeline it writes."""
    from tritongym.core import timeline

    marks = tmp_path / "marks"
    monkeypatch.setenv(timeline.ENV, str(marks))  # before the keeper starts: it inherits the file's name
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        pool.keeper("cpu")
        budget = pool.memory["cpu"] = RecordingBudget(100000.0)
        pool.total_mb["cpu"] = 200000.0
        host = pool.host_memory = RecordingBudget(100000.0)
        relu = load_problem("relu")

        def weighed() -> int:
            return sum(m["event"] == "keeper_request" and m.get("kind") == "SIZE" for m in timeline.read(marks))

        def forget() -> None:  # what this pool measured is forgotten: the problem unknown again
            # the last task's worker and keeper memory given back first (its worker's end and the keeper's `FREE`
            # run in the background, and the first records the build's measured peak as it ends)
            settled(budget)
            pool.peaks.clear()
            pool.host_peaks.clear()
            budget.asked.clear()
            host.asked.clear()

        known = task_for(relu, RELU_KERNEL, seeds=[21, 22])
        known = known.model_copy(update={"reference_peak_mb": 600.0, "reference_host_mb": 0.0})
        assert pool.run(known, timeout_s=120).error is None
        assert weighed() == 0 and any(m["event"] == "keeper_request" for m in timeline.read(marks))
        # the record's build says where its seconds went (a warm `eval`'s PREP took 0.5 s of its 2.1 s on an H200)
        prep = next(m for m in timeline.read(marks) if m["event"] == "keeper_request" and m.get("kind") == "PREP")
        assert {"forward", "gold", "park", "shape_sets", "probes", "scrub"} <= set(prep["parts"])
        assert sum(prep["parts"].values()) <= prep["seconds"]
        assert budget.asked[0] == 1024.0  # the registry's 600 MiB, at the floor
        forget()
        assert pool.run(task_for(relu, RELU_KERNEL, seeds=[23, 24]), timeout_s=120).error is None
        assert weighed() == 0  # alone in the pool: nothing weighed
        assert budget.asked[0] == 100000.0 and host.asked == [100000.0]  # the whole GPU and host, as one run alone
        assert pool.host_peaks and host.reserved_mb == 0.0  # measured by the build; the hold given back
        forget()
        held = budget.reserve(500.0)  # a neighbour on the GPU
        try:
            assert pool.run(task_for(relu, RELU_KERNEL, seeds=[25, 26]), timeout_s=120).error is None
        finally:
            budget.release(held)
        assert weighed() == 1  # beside it, the problem was weighed, once
        assert budget.asked[1] < 100000.0  # and reserved from the weighing, not whole
    finally:
        pool.close()


def test_a_lone_tasks_whole_host_hold_is_cut_to_its_measured_record():
    """`MemoryBudget.shrink`: a lone task's whole-budget hold cut to what its record measured lets a task that came
    meanwhile in at once, while the holder keeps the rest until it ends."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    host = MemoryBudget(1000.0)
    whole = host.reserve(1000.0)
    assert not host.admits(100.0)  # held whole: nobody fits beside it
    kept = host.shrink(whole, 250.0)
    assert kept == 250.0 and host.reserved_mb == 250.0 and host.admits(700.0) and not host.admits(800.0)
    host.release(kept)
    assert host.reserved_mb == 0.0 and host.idle()


def test_a_records_parked_outputs_are_reserved_in_host_memory(pools, monkeypatch):
    """A full-size level-1 record parks a dozen copies of its output in host memory (tens of GiB): a task reserves
    them from the host's budget before the keeper builds, holds them while it runs, and the measured size is what
    the problem's next task reserves.  Every output parked here (`TRITONGYM_PARK_BYTES=1`), a real CPU pool."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    with budgets(pools[1]) as pool:  # every output parked (`TRITONGYM_PARK_BYTES=1`)
        relu = load_problem("relu")
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # warm: worker and keeper up
        pool.peaks.clear()
        pool.host_peaks.clear()
        pool.memory["cpu"] = MemoryBudget(100000.0)  # the GPU's budget: ample
        pool.total_mb["cpu"] = 200000.0
        host = pool.host_memory = MemoryBudget(1000.0)
        held = host.reserve(999.999)  # less room than the record's parked outputs need
        clock = admission_clock(monkeypatch)
        found = []
        task = task_for(relu, RELU_KERNEL, seeds=[11, 12])
        runner = threading.Thread(target=lambda: found.append(pool.run(task, timeout_s=120)), daemon=True)
        runner.start()
        waits_in(host, 1, "the task reserving its record's parked outputs")
        assert runner.is_alive() and not pool.host_peaks  # waiting for host memory, nothing built
        clock[0] += 5.0  # the wait lasts five seconds
        host.release(held)
        runner.join(timeout=120)  # a hang guard
        assert found[0].error is None and found[0].phases["gpu_memory_wait"] == 5.0, found[0].phases
        assert list(pool.host_peaks.values()) == [found[0].memory_mb["reference_host_mb"]] and host.reserved_mb == 0.0


# slow tier (242 s): the 300 MiB the factor must lift past the 1024 MiB floor is screened in full after the
# wait; the fast tier's screen is test_a_screen_holds_one_input_transform_at_a_time
@pytest.mark.slow
def test_a_screen_reserves_gpu_memory_as_a_reference_build_does():
    """Screens run the reference on its full-size inputs; they reserved a token and ran out of the H100's memory
    side by side.  A screen now reserves as the keeper's build does (the meta-device weighing times
    `REFERENCE_NEED_FACTOR` here) and waits while that does not fit."""
    from tritongym.core.sandbox.gpu_pool import TaskDriver

    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=3, memory_mb=4096))
    try:
        relu = load_problem("relu")
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # warm: worker and keeper up
        budget = pool.memory["cpu"] = RecordingBudget(4000.0)
        pool.total_mb["cpu"] = 8000.0
        # 150 MiB in, 150 MiB out: weighed 300 MiB, so 4 x 300 = 1200 MiB reserved (contexts are the budget's
        # already); with 1100 left it waits, where the token a screen reserved before (1024) would have gone ahead
        source = BIG_RELU.replace(f"ROWS = {ROWS}", "ROWS = 6400").replace(f"COLS = {COLS}", "COLS = 6144")
        held = budget.reserve(2900.0)
        budget.asked.clear()
        found = []
        screen = big_task(mode="screen", problem_source=source)
        runner = threading.Thread(target=lambda: found.append(pool.run(screen, timeout_s=300)), daemon=True)
        runner.start()
        waits_in(budget, 1, "the screen reserving its reference's need beside 2900 of 4000", timeout_s=240)
        assert budget.reserved_mb == 2900.0  # waiting, nothing granted beside the holder
        assert budget.asked == [TaskDriver.REFERENCE_NEED_FACTOR * 300.0]  # the weighing times the factor
        budget.release(held)
        runner.join(timeout=300)  # a hang guard
        assert found[0].error is None and found[0].stage == "done" and settled(budget).reserved_mb == 0.0
    finally:
        pool.close()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_parking_faults_in_every_page_of_its_buffer_before_the_copy(dtype):
    """`parking._prefault` touches one element of every 4 KiB page (so the device-to-host copy that follows
    writes to memory already there) and nothing between them."""
    from tritongym.core.worker import parking

    per_page = parking.PAGE_BYTES // torch.empty((), dtype=dtype).element_size()
    n = 37 * per_page + 5  # not a multiple of the threads or of a page
    host = torch.full((n,), 3.0, dtype=dtype)
    parking._prefault(host)
    touched = (host == 0).nonzero().flatten().tolist()
    assert touched == list(range(0, n, per_page))


def test_a_screens_normal_inputs_are_drawn_on_the_inputs_device_and_repeat():
    """The `normal` input transform draws from a generator on the input's own device (a full-size input drawn
    on the host took the screen tens of seconds), the same numbers for the same seed, others for another."""
    from tritongym.core.worker.controls import transform_inputs

    inputs = [torch.ones(64, 32), 3]
    first, again, other = (transform_inputs("normal", inputs, seed) for seed in (5, 5, 6))
    assert first[1] == 3 and first[0].device == inputs[0].device and first[0].dtype == torch.float32
    assert torch.equal(first[0], again[0]) and not torch.equal(first[0], other[0])
    assert 3.0 < float(first[0].std()) < 5.0  # scaled by 4


def gated_first_call(gate: Path) -> str:
    """RELU_KERNEL whose first call waits until `gate` exists (the test creates it; two minutes at most): a task
    that is known to be running until the test lets it end, whatever the machine's load."""
    return RELU_KERNEL.replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n        import os, time\n\n        if not hasattr(self, 'gated'):\n"
        "            self.gated = True\n            waited = 0\n"
        f"            while not os.path.exists({str(gate)!r}) and waited < 2400:\n"
        "                time.sleep(0.05)\n                waited += 1\n",
    )


def test_the_samples_of_a_batch_share_their_records_host_memory(pools, tmp_path):
    """A full-size record's parked outputs (54-66 GiB for a level-1 ReLU on the H100) are one for every task
    that shares the record (an RL batch's samples of a problem: same problem, same seeds), and so is their
    host reservation: a second sample arriving while the first runs does not wait for it to end, though the
    host budget holds one record's outputs and not two.  Every output parked (`TRITONGYM_PARK_BYTES=1`); the
    first sample's candidate is held in its first call until the second has finished."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    gate = tmp_path / "gate"
    with budgets(pools[1]) as pool:  # two workers, every output parked
        relu = load_problem("relu")
        pool.host_peaks.clear()
        measured = task_for(relu, RELU_KERNEL, seeds=[31, 32, 33])  # a record not built before on this pool
        assert pool.run(measured, timeout_s=120).error is None  # measures the record's size
        (record_mb,) = pool.host_peaks.values()
        pool.memory["cpu"] = MemoryBudget(100000.0)  # the GPU's budget: ample
        pool.total_mb["cpu"] = 200000.0
        host = pool.host_memory = MemoryBudget(1.5 * record_mb)  # one record's parked outputs, not two
        found = []
        held = task_for(relu, gated_first_call(gate), seeds=[21, 22])
        first = threading.Thread(target=lambda: found.append(pool.run(held, timeout_s=180)), daemon=True)
        first.start()
        with host.cond:
            # a hang guard, past the keeper's 120 s to answer the task's SIZE request (CI's two CPUs, busy, once
            # took over 60 s to get there: the task held the memory, after the test had given up)
            held_in_time = host.cond.wait_for(lambda: host.holders == 1, 180)
            assert held_in_time, "the first sample never held its record's memory"
        try:
            seconds = []
            same_record = task_for(relu, RELU_KERNEL, seeds=[21, 22])
            second = threading.Thread(target=lambda: seconds.append(pool.run(same_record, timeout_s=120)), daemon=True)
            second.start()
            second.join(timeout=150)  # a hang guard: a second that waited for the first would wait for the gate
            assert not second.is_alive(), "the second sample waited for the first one to end"
            assert first.is_alive() and not found  # the first is still in its first call: the second did not wait
            assert seconds[0].error is None, seconds[0].error
        finally:
            gate.touch()
        first.join(timeout=180)  # a hang guard
        assert found[0].error is None, found[0].error
        assert host.reserved_mb == 0.0 and host.holders == 0  # the last holder released it


def test_a_kept_output_that_is_a_view_keeps_only_its_own_elements(tmp_path):
    """On an H100, `smooth_l1_loss`'s mean is a 0-dim tensor over the 4 GiB storage of its elementwise losses
    (level 1's 96_HuberLoss): the keeper's record of ten such outputs measured a few bytes and held 37 GiB of the
    GPU, and every worker beside it ran out of memory.  A record keeps each output in a storage of its
    own size; here a reference whose output is such a view, built by the keeper's own code on the CPU."""
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.keeper.keeper import ReferenceRecord
    from tritongym.core.models import Candidate
    from tritongym.core.plugins import PluginHost
    from tritongym.core.problems import parse_problem
    from tritongym.core.worker import parking

    big = torch.arange(1 << 20, dtype=torch.float32)
    view = big[5]  # 0-dim, over 4 MiB
    kept = parking.park(view)
    assert float(kept) == 5.0 and kept.untyped_storage().nbytes() == 4
    whole = torch.ones(8)
    assert parking.park(whole) is not None and parking.park(whole).data_ptr() == whole.data_ptr()  # no copy

    source = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return (x * 2).reshape(-1)[3]  # a 0-dim view over the whole product

def get_inputs():
    return [torch.randn(512, 512)]

def get_init_inputs():
    return []
"""
    problem = parse_problem(source, "view_output", "view_output.py", "cpu")
    evaluator = Evaluator(
        EvalConfig(backend="triton-cpu", size="cpu", use_cache=False),
        registry=None,
        host=PluginHost(load_entry_points=False),
    )
    task = evaluator._task(Candidate(source=source.replace("Model", "ModelNew")), problem)
    record = ReferenceRecord(task, str(tmp_path), torch.device("cpu"))
    kept_outputs = [o for outs in record.ref_outputs for o in outs] + [
        o for outs in record.probe_refs.values() for o in outs
    ]
    assert kept_outputs and all(
        (o.host if isinstance(o, parking.Parked) else o).untyped_storage().nbytes() == 4 for o in kept_outputs
    )
