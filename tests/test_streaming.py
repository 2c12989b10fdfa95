"""Issue 27 item 1, "tensors released between trials, shape sets and controls": the worker streams its calls
(one input set and one call's outputs at a time, each handed to the keeper as soon as the call is done) and the
keeper parks large tensors in host memory (`worker/parking.py`).  Run for real on the CPU pool (Triton's
interpreter), like tests/test_pool.py.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch

from tests.conftest import RELU_KERNEL, settled, task_for
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
    from tritongym.core.worker.parking import PARK_BYTES

    default = {"TRITONGYM_PARK_BYTES": str(PARK_BYTES)}  # also when the suite runs with TRITONGYM_PARK_BYTES set
    plain = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, extra_env=default))
    parked = WorkerPool(
        PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, extra_env={"TRITONGYM_PARK_BYTES": "1"})
    )
    yield plain, parked
    plain.close()
    parked.close()


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
    assert kept.phases["reference_host_mb"] == 0 and moved.phases["reference_host_mb"] > 0
    assert _judged(moved, exact) == _judged(kept, exact)
    assert finding(moved), _judged(moved)[:2000]
    # several hand-outs per task: one per call with outputs, each answered before the next call
    calls = len(moved.trials) + sum(1 for p in moved.probes if p.n_outputs)
    assert moved.phases["hand_outs"] == calls and calls > 10
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
    from tritongym.core.worker.keeper import ReferenceRecord
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

    from tritongym.core.worker.keeper import Keeper

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
    samples = [(relu.solution + f"\nSAMPLE = {k}\n", relu) for k in range(3)] + [(silu.solution, silu)]
    tasks = []
    make_task = evaluator._task
    evaluator._task = lambda *args, **kwargs: tasks.append(make_task(*args, **kwargs)) or tasks[-1]  # what reached it
    results = evaluator.evaluate_many(samples)
    assert [r.status.value for r in results] == ["ok"] * 4, [r.message for r in results]
    assert len({(tuple(t.seeds), t.init_seed) for t in tasks[:3]}) == 1
    assert (tasks[3].seeds, tasks[3].init_seed) != (tasks[0].seeds, tasks[0].init_seed)
    evaluator.evaluate(relu.solution + "\nSAMPLE = 3\n", relu)
    assert (tasks[4].seeds, tasks[4].init_seed) != (tasks[0].seeds, tasks[0].init_seed)


def test_a_screen_holds_one_input_transform_at_a_time():
    """The negative-control screen of a problem with 48 MiB in and 48 MiB out: one seed, three controls, three
    input transforms.  It held every transform's inputs and outputs at once (about ten sets: a full-size
    KernelBench screen ran out of the H100's memory, issue 27); now at most five sets are alive (5.6 measured,
    the comparisons' temporaries included; 13.5 before)."""
    # comparisons in small chunks, so their float64 temporaries do not hide what the screen holds
    small = {"TRITONGYM_COMPARE_CHUNK_ELEMENTS": str(1 << 16)}
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=2, memory_mb=8192, extra_env=small))
    try:
        worker = pool._take()
        with open(f"/proc/{worker.pid}/clear_refs", "w") as f:
            f.write("5")
        before = _status(worker.pid)["VmRSS"]
        pool.ready.put(worker)
        task = big_task(mode="screen")
        evidence = pool.run(task, timeout_s=600)
        grown = _status(worker.pid)["VmHWM"] - before
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert set(evidence.controls) == {"zeros", "other_seed_output", "identity"}
        assert set(evidence.control_breaks["identity"]) == {"negated", "scaled", "normal"}
        assert grown < 7.5 * SET_MB, f"the worker's peak grew by {grown:.0f} MiB ({grown / SET_MB:.1f} sets)"
    finally:
        pool.close()


def test_the_keeper_weighs_a_new_problem_on_the_meta_device(tmp_path, monkeypatch):
    """`SIZE`: before any record exists, one forward weighed without allocating (48 MiB in, 48 MiB out); once
    the record is built, its measured peak instead."""
    import json

    from tritongym.core.worker.keeper import Keeper

    monkeypatch.chdir(tmp_path)
    keeper = Keeper("cpu")
    task = big_task()
    payload = json.dumps({"task": task.model_dump(mode="json"), "task_id": "a"})
    assert keeper.size(payload) == {"forward_mb": 2 * SET_MB, "outputs_mb": SET_MB, "park_mb": 64.0, "error": None}
    keeper.prep(payload)
    assert set(keeper.size(payload)) == {"peak_mb"}  # the record's own measurement (0 on the CPU: no allocator)


def test_a_task_waits_for_gpu_memory_before_its_reference_is_built():
    """Issue 27 item 1: the keeper's build of a new problem's reference reserves memory before it starts (it
    ran beside other work with nothing reserved and the H100 ran out); the wait is not the candidate's time,
    and the build's measured peak is what the problem's next task reserves.  A CPU pool given a real budget."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=3, memory_mb=4096))
    try:
        relu = load_problem("relu")  # the pool warmed up first (worker and keeper started), with no budget yet
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None and len(pool.peaks) == 1
        budget = pool.memory["cpu"] = MemoryBudget(4000.0)
        pool.total_mb["cpu"] = 8000.0
        held = budget.reserve(3500.0)  # what is left (500 MiB) is less than any task reserves
        big = big_task(candidate_source=BIG_RELU_KERNEL)
        found = []
        runner = threading.Thread(target=lambda: found.append(pool.run(big, timeout_s=300)))
        runner.start()
        with budget.cond:  # the task is seen waiting on the budget itself, not guessed from a clock
            assert budget.cond.wait_for(lambda: budget.waiting >= 1, timeout=240), "the task never waited"
        assert runner.is_alive() and len(pool.peaks) == 1  # waiting: the new problem's reference not built
        time.sleep(0.5)  # it stays blocked until the release below: its measured wait is at least this long
        budget.release(held)
        runner.join(timeout=300)
        evidence = found[0]
        assert evidence.error is None and evidence.stage == "done", evidence.error
        assert evidence.phases["gpu_memory_wait"] >= 0.3, evidence.phases  # without the reservation: ~0.0001 s
        assert len(pool.peaks) == 2 and settled(budget).reserved_mb == 0.0  # measured and kept; everything given back
    finally:
        pool.close()


def test_the_registrys_peak_is_what_a_new_pool_reserves(tmp_path):
    """A peak the registry kept from an earlier run (`WorkerTask.reference_peak_mb`) is reserved before the build
    instead of the meta-device estimate: with 500 of 4000 MiB held, relu's estimate fits at once, while a kept
    peak of 3600 MiB (plus a context: more than the budget) waits for the GPU alone."""
    from tritongym.core.registry import Registry
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    registry = Registry(tmp_path / "registry.db")
    registry.store_reference_peak_mb("relu-key", "cuda:NVIDIA H100", 3600.0)
    assert registry.reference_peak_mb("relu-key", "cuda:NVIDIA H100") == 3600.0
    assert registry.reference_peak_mb("relu-key", "cuda:NVIDIA H200") is None
    registry.close()

    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=3, memory_mb=4096))
    try:
        relu = load_problem("relu")
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # warm: worker and keeper up
        pool.peaks.clear()  # a new run: nothing measured in this pool
        budget = pool.memory["cpu"] = MemoryBudget(4000.0)
        pool.total_mb["cpu"] = 8000.0
        held = budget.reserve(500.0)
        estimated = pool.run(task_for(relu, RELU_KERNEL, seeds=[4, 5]), timeout_s=120)
        assert estimated.error is None and estimated.phases["gpu_memory_wait"] < 0.3
        pool.peaks.clear()
        found = []
        kept = task_for(relu, RELU_KERNEL, seeds=[6, 7], reference_peak_mb=3600.0)
        runner = threading.Thread(target=lambda: found.append(pool.run(kept, timeout_s=120)))
        runner.start()
        runner.join(timeout=3.0)
        assert runner.is_alive()  # 3600 does not fit beside the 500 MiB holder in 4000: it waits for it
        budget.release(held)
        runner.join(timeout=120)
        assert found[0].error is None and found[0].phases["gpu_memory_wait"] >= 0.3
    finally:
        pool.close()


def test_a_records_parked_outputs_are_reserved_in_host_memory():
    """A full-size level-1 record parks a dozen copies of its output in host memory (tens of GiB): a task reserves
    them from the host's budget before the keeper builds, holds them while it runs, and the measured size is what
    the problem's next task reserves.  Every output parked here (`TRITONGYM_PARK_BYTES=1`), a real CPU pool."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    everything = {"TRITONGYM_PARK_BYTES": "1"}
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=3, memory_mb=4096, extra_env=everything))
    try:
        relu = load_problem("relu")
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # warm: worker and keeper up
        pool.peaks.clear()
        pool.host_peaks.clear()
        pool.memory["cpu"] = MemoryBudget(100000.0)  # the GPU's budget: ample
        pool.total_mb["cpu"] = 200000.0
        host = pool.host_memory = MemoryBudget(1000.0)
        held = host.reserve(999.999)  # less room than the record's parked outputs need
        found = []
        task = task_for(relu, RELU_KERNEL, seeds=[11, 12])
        runner = threading.Thread(target=lambda: found.append(pool.run(task, timeout_s=120)))
        runner.start()
        runner.join(timeout=3.0)
        assert runner.is_alive() and not pool.host_peaks  # waiting for host memory, nothing built
        host.release(held)
        runner.join(timeout=120)
        assert found[0].error is None and found[0].phases["gpu_memory_wait"] >= 0.3
        assert list(pool.host_peaks.values()) == [found[0].phases["reference_host_mb"]] and host.reserved_mb == 0.0
    finally:
        pool.close()


def test_a_screen_reserves_gpu_memory_as_a_reference_build_does():
    """Screens run the reference on its full-size inputs; they reserved a token and ran out of the H100's memory
    side by side.  A screen now reserves as the keeper's build does (the meta-device weighing times
    `REFERENCE_NEED_FACTOR` here) and waits while that does not fit."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, max_tasks=3, memory_mb=4096))
    try:
        relu = load_problem("relu")
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # warm: worker and keeper up
        budget = pool.memory["cpu"] = MemoryBudget(4000.0)
        pool.total_mb["cpu"] = 8000.0
        # 150 MiB in, 150 MiB out: weighed 300 MiB, so 4 x 300 = 1200 MiB reserved (contexts are the budget's
        # already); with 1100 left it waits, where the token a screen reserved before (1024) would have gone ahead
        source = BIG_RELU.replace(f"ROWS = {ROWS}", "ROWS = 6400").replace(f"COLS = {COLS}", "COLS = 6144")
        held = budget.reserve(2900.0)
        found = []
        screen = big_task(mode="screen", problem_source=source)
        runner = threading.Thread(target=lambda: found.append(pool.run(screen, timeout_s=300)))
        runner.start()
        runner.join(timeout=3.0)
        assert runner.is_alive() and budget.reserved_mb == 2900.0  # waiting, nothing granted beside the holder
        budget.release(held)
        runner.join(timeout=300)
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


SLOW_FIRST_CALL = RELU_KERNEL.replace(
    "    def forward(self, x):\n",
    "    def forward(self, x):\n        import time\n\n        if not hasattr(self, 'slept'):\n"
    "            self.slept = True\n            time.sleep(6)\n",
)


def test_the_samples_of_a_batch_share_their_records_host_memory():
    """A full-size record's parked outputs (54-66 GiB for a level-1 ReLU on the H100) are one for every task
    that shares the record (an RL batch's samples of a problem: same problem, same seeds), and so is their
    host reservation: a second sample arriving while the first runs does not wait for it to end, though the
    host budget holds one record's outputs and not two.  Every output parked (`TRITONGYM_PARK_BYTES=1`)."""
    from tritongym.core.sandbox.gpu_pool import MemoryBudget

    everything = {"TRITONGYM_PARK_BYTES": "1"}
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=2, max_tasks=5, memory_mb=4096, extra_env=everything))
    try:
        relu = load_problem("relu")
        assert pool.run(task_for(relu, RELU_KERNEL), timeout_s=120).error is None  # measures the record's size
        (record_mb,) = pool.host_peaks.values()
        pool.memory["cpu"] = MemoryBudget(100000.0)  # the GPU's budget: ample
        pool.total_mb["cpu"] = 200000.0
        host = pool.host_memory = MemoryBudget(1.5 * record_mb)  # one record's parked outputs, not two
        found = []
        slow = task_for(relu, SLOW_FIRST_CALL, seeds=[21, 22])
        first = threading.Thread(target=lambda: found.append(pool.run(slow, timeout_s=120)))
        first.start()
        deadline = time.monotonic() + 60
        while not host.holders and time.monotonic() < deadline:
            time.sleep(0.02)
        assert host.holders, "the first sample never reserved its record's host memory"
        second = pool.run(task_for(relu, RELU_KERNEL, seeds=[21, 22]), timeout_s=120)  # the same record
        assert first.is_alive()  # the first still sleeps in its first call: the second did not wait for it
        assert second.error is None and second.phases["gpu_memory_wait"] < 1.0, second.phases
        first.join(timeout=120)
        assert found[0].error is None
        assert host.reserved_mb == 0.0 and host.holders == 0  # the last holder released it
    finally:
        pool.close()


def test_a_kept_output_that_is_a_view_keeps_only_its_own_elements(tmp_path):
    """On an H100, `smooth_l1_loss`'s mean is a 0-dim tensor over the 4 GiB storage of its elementwise losses
    (level 1's 96_HuberLoss): the keeper's record of ten such outputs measured a few bytes and held 37 GiB of the
    GPU, and every worker beside it ran out of memory.  A record keeps each output in a storage of its
    own size; here a reference whose output is such a view, built by the keeper's own code on the CPU."""
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.models import Candidate
    from tritongym.core.plugins import PluginHost
    from tritongym.core.problems import parse_problem
    from tritongym.core.worker import parking
    from tritongym.core.worker.keeper import ReferenceRecord

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
