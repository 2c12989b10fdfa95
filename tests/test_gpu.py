"""The `triton-cuda` backend on a real GPU (skipped without CUDA; run on the device before calling it done).

python -m pytest -m gpu tests/test_gpu.py
"""

from __future__ import annotations

import contextlib
import re
import textwrap

import pytest
import torch

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem, suite_problems

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

RELU_HEAD = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    """
)


@pytest.fixture(scope="module")
def gpu_evaluator(tmp_path_factory, sandbox_checks):
    from tritongym.core.registry import Registry

    registry = Registry(tmp_path_factory.mktemp("gpu") / "registry.db")
    host = PluginHost(load_entry_points=False)
    # the source policy off: these tests are about what the worker and the runtime checks see
    config = EvalConfig(backend="triton-cuda", size="gpu", use_cache=False, timeout_s=300, checks=sandbox_checks)
    evaluator = Evaluator(config, registry=registry, host=host)
    yield evaluator
    evaluator.close()
    registry.close()


@contextlib.contextmanager
def fresh_evaluator(path, checks, **config):
    """An Evaluator on the GPU over a registry of its own at `path` (nothing timed before), closed after."""
    from tritongym.core.registry import Registry

    registry = Registry(path / "registry.db")
    config = EvalConfig(backend="triton-cuda", size="gpu", use_cache=False, timeout_s=300, checks=checks, **config)
    evaluator = Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False))
    try:
        yield evaluator, registry
    finally:
        evaluator.close()
        registry.close()


def test_every_solution_is_ok_with_speedup_and_pr(gpu_evaluator):
    problems = suite_problems("gpu")
    results = gpu_evaluator.evaluate_many([(p.solution, p) for p in problems])
    failures = [f"{r.problem_id}: {r.status.value} {r.message}" for r in results if r.status != Status.ok]
    assert not failures, "\n".join(failures)
    for r in results:
        assert r.speedup is not None and r.speedup > 0, r.problem_id
        assert r.pr is not None and 0 < r.pr <= 1, (r.problem_id, r.pr)
        assert r.timing is not None and r.timing.candidate is not None and r.timing.candidate.samples >= 10
        assert r.timing.precision == gpu_evaluator.config.precision  # the reference timed in the policy's class
        assert any(entry.own for entry in r.profile), (r.problem_id, r.profile)
        own = {rec.compiled for rec in r.launches if rec.own}
        assert {e.kernel for e in r.profile if e.own} <= own


def test_side_stream_work_is_timed(gpu_evaluator):
    problem = load_problem("relu", "gpu")
    side = RELU_HEAD + textwrap.dedent(
        """
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(20):  # plenty of work, none of it waited for by the caller's stream
                        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
                return out
        """
    )
    honest, sneaky = gpu_evaluator.evaluate_many([(problem.solution, problem), (side, problem)])
    assert honest.status == Status.ok, honest.message
    # the worker stalls the side stream, so the copy taken when forward returns is unfinished: side_work
    # names it, as the verdict (hacked) or as the likely cause of the wrong outputs (incorrect; the freed
    # input block is reused by the next call while the stalled side stream still reads it)
    assert sneaky.status in (Status.hacked, Status.incorrect), sneaky.message
    assert "side_work" in sneaky.message and "still being written" in sneaky.message, sneaky.message


def test_the_timer_waits_for_unjoined_side_stream_work():
    """Whatever the checks say, a timing never ends before work a forward left on another stream."""
    from tritongym.core.measure.timing import Timer
    from tritongym.core.worker_task import TimingOptions

    timer = Timer(torch.device("cuda"))
    side = torch.cuda.Stream()
    x = torch.randn(1 << 20, device="cuda")

    def spin_cycles_per_ms() -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        torch.cuda.synchronize()
        return 10_000_000 / start.elapsed_time(end)

    cycles = int(spin_cycles_per_ms())  # about 1 ms of spinning

    def spin_ms() -> float:
        """The side stream's work alone, timed just before, at the clock the timing then runs at (the clock
        moves: a spin calibrated at one took 0.72 ms at another on an H100)."""
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return sorted(times)[len(times) // 2]

    def forward(xs):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(cycles)  # never joined by the caller's stream
        return xs[0] * 2

    options = TimingOptions(warmup_ms=5, rep_ms=30)
    side_ms = spin_ms()
    stats, _ = timer.time_forward(forward, [[x]], options)
    joined, _ = timer.time_forward(lambda xs: xs[0] * 2, [[x]], options)
    # the side stream's work is inside every timed call (a timer that missed it would see the 0.01 ms multiply)
    assert stats.median_ms > 0.8 * side_ms and joined.median_ms < 0.2 * side_ms, (side_ms, stats, joined)
    assert stats.mode == "eager" and "not capturable" in stats.note, stats


def test_a_sabotaged_reference_op_is_out_of_reach_and_named(gpu_evaluator):
    """The reference runs in the GPU's keeper, a process the candidate never ran in: replacing `torch.relu` in
    the worker cannot slow the baseline any more (the timing check sees a stable reference), and the patch
    itself is the finding (`environment`)."""
    problem = load_problem("relu", "gpu")
    saboteur = problem.solution + textwrap.dedent(
        """

        _relu = torch.relu


        def _slow_relu(x):
            for _ in range(30):
                y = _relu(x)
            return y


        torch.relu = _slow_relu  # the reference's op, made slower once the candidate is imported
        """
    )
    result = gpu_evaluator.evaluate(saboteur, problem)
    assert result.status == Status.hacked, result.message
    timing = next(c for c in result.checks if c.name == "timing")
    assert timing.passed and "reference stable" in timing.reason, timing
    assert any(c.name == "environment" and not c.passed and "torch.relu" in c.reason for c in result.checks)


def test_illegal_memory_access_leaves_the_pool_healthy(gpu_evaluator):
    problem = load_problem("relu", "gpu")
    wild = RELU_HEAD + textwrap.dedent(
        """
        @triton.jit
        def wild_kernel(out_ptr):
            tl.store(out_ptr + (1 << 40) + tl.arange(0, 128), tl.zeros((128,), tl.float32))


        class ModelNew(torch.nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                wild_kernel[(64,)](out)
                return out
        """
    )
    results = gpu_evaluator.evaluate_many([(wild, problem)] + [(problem.solution, problem)] * 3)
    assert results[0].status in (Status.runtime_error, Status.crashed), results[0].message
    assert all(r.status == Status.ok for r in results[1:]), [r.message for r in results[1:]]


def test_pointer_cache_fails_on_refreshed_inputs(gpu_evaluator):
    problem = load_problem("relu", "gpu")
    cache = RELU_HEAD + textwrap.dedent(
        """
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.memo = {}

            def forward(self, x):
                key = (x.data_ptr(), x.shape)
                if key not in self.memo:
                    out = torch.empty_like(x)
                    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
                    self.memo[key] = out
                return self.memo[key]
        """
    )
    result = gpu_evaluator.evaluate(cache, problem)
    # caught either way: a stale answer (incorrect), or, where the caching allocator gives the late trial's
    # fresh input the same address, an answer served with no launch (hacked)
    assert result.status in (Status.incorrect, Status.hacked) and result.reward.total == 0, result.message
    # caught where a refreshed input meets the memo: a later trial (the worker makes each trial's inputs as it
    # runs it, so trial 1's input may take trial 0's freed address), the timed calls or the late trial
    assert re.search(r"trial \d+ \(seed|timed calls|late trial", result.message), result.message


def test_an_rl_batch_of_one_problem_builds_and_times_its_reference_once(tmp_path, sandbox_checks):
    """Issue 27 item 3: samples of one problem evaluated at once (an RL batch) share the keeper's record and the
    reference's timing: one full timing, the others a short drift check against it."""
    problem = load_problem("softmax", "gpu")
    samples = [(problem.solution + f"\nSAMPLE = {k}\n", problem) for k in range(4)]  # four distinct kernels
    sharing = {"timing": {"shared_check_s": 30.0}}
    with fresh_evaluator(tmp_path, sandbox_checks, remeasure_speedup_above=None, backend_options=sharing) as (
        evaluator,
        _,
    ):
        pool = evaluator.backend.pool()
        before = sum(pool.exclusive_grants().values())
        results = evaluator.evaluate_many(samples)
        grants = sum(pool.exclusive_grants().values()) - before
    assert [r.status for r in results] == [Status.ok] * 4, [r.message for r in results]
    # built once: by the first task, or before any (`prepare_ahead`, while the tasks waited for workers)
    assert sum(r.flags.get("reference_cached", False) for r in results) >= 3, [r.flags for r in results]
    full = [r for r in results if r.timing.reference_cached is None]
    drifted = any("disagreed" in note for r in results for note in r.timing.notes)
    assert len(full) == 1 or (drifted and len(full) <= 2), [r.timing.notes for r in results]
    # with `shared_check_s` on, the reference timed before the candidates once for all four: one exclusive hold for it
    # and one per candidate's timing, where each task's own check made it eight
    shared = sum(r.flags.get("reference_check_shared", False) for r in results)
    assert (shared == 3 and grants == 5) or drifted, (shared, grants)


def test_the_drift_check_shares_the_candidates_exclusive_hold(tmp_path, sandbox_checks):
    """Each exclusive hold of the GPU costs a drain (every sharer waits for it): a task whose reference is timed in
    full takes it twice, once for the reference's timing (RTIM) and once for the candidate's timing, its profile
    and the reference's drift check (RCHK, asked by the worker inside that hold), never a third time."""
    problem = load_problem("relu", "gpu")
    # nothing timed before (the reference is measured in full), and no second task
    with fresh_evaluator(tmp_path, sandbox_checks, remeasure_speedup_above=None) as (evaluator, _):
        pool = evaluator.backend.pool()
        before = sum(pool.exclusive_grants().values())
        result = evaluator.evaluate(problem.solution, problem)
        grants = sum(pool.exclusive_grants().values()) - before
    assert result.status == Status.ok, result.message
    assert result.timing.reference_cached is None and result.timing.reference_before is not None
    assert result.timing.reference_after is not None and result.timing.reference_after.samples > 0
    assert grants == 2, grants


def test_reference_timing_is_cached_and_reconciled(gpu_evaluator):
    problem = load_problem("gelu", "gpu")
    first, second = gpu_evaluator.evaluate_many([(problem.solution, problem)]), None
    second = gpu_evaluator.evaluate(problem.solution, problem)
    assert first[0].status == second.status == Status.ok
    precision = gpu_evaluator.config.precision
    stored = gpu_evaluator.registry.reference_timing(problem.key, gpu_evaluator.device_class, precision)
    if any("disagreed" in note for note in second.timing.notes):
        # the GPU drifted by more than reconcile_tolerance between the two: the paired timing is used and the
        # cache dropped, so the next task times the reference in full (seen once after a long run)
        assert second.timing.reference_source == "paired" and stored is None
    else:
        assert stored is not None and stored["samples"] >= 10  # kept, or stored afresh after a drift at `first`
        assert second.timing.reference_source in ("cached", "paired")
    assert gpu_evaluator.registry.bandwidth(gpu_evaluator.device_class) > 100  # GB/s, any datacenter GPU
    assert second.timing.roofline_ms is not None and second.runtime_ms >= 0.8 * second.timing.roofline_ms


def test_tf32_dot_is_measured_a_downgrade_under_ieee_and_fine_under_tf32(sandbox_checks):
    """Without input_precision="ieee", tl.dot on fp32 multiplies in TF32: the error against the float64 gold
    names the `tf32` class, which the default policy passes and `ieee` refuses; the PTX is quoted as advice."""
    problem = load_problem("matmul", "gpu")
    tf32 = problem.solution.replace(', input_precision="ieee"', "")
    assert tf32 != problem.solution
    loose = {"torch.float32": {"atol": 0.1, "rtol": 0.1, "rel_norm": 0.1}}  # so only the check can object
    host = PluginHost(load_entry_points=False)
    for precision, allowed in (("ieee", False), ("tf32", True)):
        config = EvalConfig(
            backend="triton-cuda",
            size="gpu",
            precision=precision,
            tolerances=loose,
            checks={**sandbox_checks, "precision": {}},
        )
        with Evaluator(config, host=host) as evaluator:
            result = evaluator.evaluate(tf32, problem)
        verdict = next(c for c in result.checks if c.name == "precision")
        assert verdict.passed == allowed, (precision, result.message)
        assert "precision class tf32" in verdict.reason and "TF32 on tensor cores (PTX)" in verdict.reason
        assert result.status == (Status.ok if allowed else Status.incorrect), result.message


def test_reading_freed_memory_finds_no_reference_output(gpu_evaluator):
    """Output-memory reuse: the worker never computes a reference output (the keeper does, in its own process),
    and its freed memory is poisoned before the candidate is imported; what an unwritten output holds is the
    poison or the candidate's own earlier calls' copies of its inputs, never the answer."""
    problem = load_problem("relu", "gpu")
    reuse = RELU_HEAD + textwrap.dedent(
        """
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)  # whatever the caching allocator hands back
                relu_kernel[(1,)](x, out, 0, BLOCK=1024)  # launched, writes nothing
                return out
        """
    )
    result = gpu_evaluator.evaluate(reuse, problem)
    # Incorrect, not hacked: had the candidate read the reference's result it would match and only the ghost
    # check could catch it.  About half the elements (relu's negative inputs) or all of them (the poison) wrong.
    assert result.status == Status.incorrect, result.message
    found = re.search(r"(\d+) of (\d+) elements outside tolerance", result.message)
    assert found and int(found[1]) > int(found[2]) // 4, result.message


def test_a_suspect_speedup_is_measured_again():
    problem = load_problem("rms_norm", "gpu")  # about 4x faster than its reference on an H200
    host = PluginHost(load_entry_points=False)
    config = EvalConfig(backend="triton-cuda", size="gpu", remeasure_speedup_above=1.5, use_cache=False)
    with Evaluator(config, host=host) as evaluator:
        result = evaluator.evaluate(problem.solution, problem)
    assert result.status == Status.ok, result.message
    assert result.timing.remeasured_status == "ok" and result.timing.remeasured_ms is not None
    assert abs(result.timing.remeasured_ms / result.runtime_ms - 1) < 0.25


def test_compile_reference_is_timed_cached_and_stored(tmp_path, sandbox_checks):
    """`compile_reference`: the worker compiles the reference, checks it against eager and times it before the
    candidate is imported; the parent stores compile_speedup beside the eager speedup and caches the compiled
    timing, so the next task for the problem compiles nothing."""
    problems = [load_problem(name, "gpu") for name in ("softmax", "relu")]
    with fresh_evaluator(tmp_path, sandbox_checks, compile_reference=True) as (evaluator, registry):
        first = evaluator.evaluate_many([(p.solution, p) for p in problems])
        for r, problem in zip(first, problems):
            assert r.status == Status.ok, (r.problem_id, r.message)
            assert r.timing.compile_reference_source == "measured", (r.problem_id, r.timing.notes)
            assert r.compile_ref_runtime_ms and r.compile_ref_runtime_ms > 0
            assert r.compile_speedup == pytest.approx(r.compile_ref_runtime_ms / r.runtime_ms)
            assert r.speedup == pytest.approx(r.ref_runtime_ms / r.runtime_ms)
            assert r.phases.get("compile_reference", 0) > 0 and r.phases.get("time_compile_reference", 0) > 0
            cached = registry.reference_timing(
                problem.key, evaluator.device_class, evaluator.config.precision, variant="compile"
            )
            assert cached["median_ms"] == r.compile_ref_runtime_ms and cached["samples"] >= 10
            row = registry.db["evaluations"].get(r.evaluation_id)
            assert row["compile_speedup"] == pytest.approx(r.compile_speedup)
        again = evaluator.evaluate(problems[0].solution, problems[0])
    assert again.status == Status.ok and again.timing.compile_reference_source == "cached"
    assert "compile_reference" not in again.phases  # served from the registry: nothing compiled
    assert again.compile_ref_runtime_ms == first[0].compile_ref_runtime_ms


def test_the_field_convention_times_a_fp32_matmul_slower_than_its_own_class(tmp_path, sandbox_checks):
    """The reference under the field's convention (`measure/field_convention.py`: float32 matmuls exact, as
    KernelBench's published baselines) is timed apart from its own class (TF32 under the default `tf32` policy) only
    where a float32 matmul runs: the suite's fp32 matmul is slower there, relu is not timed twice.  The field's
    timing is cached in the registry, so the next task of the problem times it no more."""
    problems = [load_problem(name, "gpu") for name in ("matmul", "relu")]
    with fresh_evaluator(tmp_path, sandbox_checks) as (evaluator, registry):
        assert evaluator.config.precision == "tf32"
        matmul, relu = evaluator.evaluate_many([(p.solution, p) for p in problems])
        for r in (matmul, relu):
            assert r.status == Status.ok, (r.problem_id, r.message)
        assert matmul.field_convention == "timed" and "mm" in matmul.timing.field_ops, matmul.timing.notes
        assert matmul.timing.field_reference_source == "measured" and matmul.phases["time_field_reference"] > 0
        # exact fp32 GEMMs run far slower than TF32 ones on an A100 or later (about 6x on an H100)
        assert matmul.field_ref_runtime_ms > 1.5 * matmul.ref_runtime_ms, (matmul.field_ref_runtime_ms, matmul)
        assert matmul.speedup_field == pytest.approx(matmul.field_ref_runtime_ms / matmul.runtime_ms)
        key = (problems[0].key, evaluator.device_class, evaluator.config.precision)
        assert registry.reference_timing(*key, variant="field")["median_ms"] == matmul.field_ref_runtime_ms
        assert relu.field_convention == "same_as_own" and relu.timing.field_ops == []
        assert relu.field_ref_runtime_ms == relu.ref_runtime_ms and relu.speedup_field == pytest.approx(relu.speedup)
        assert registry.reference_timing(problems[1].key, evaluator.device_class, "tf32", variant="field") is None
        again = evaluator.evaluate(problems[0].solution, problems[0])
    assert again.status == Status.ok and again.timing.field_reference_source == "cached"
    assert "time_field_reference" not in again.phases and again.field_ref_runtime_ms == matmul.field_ref_runtime_ms


def free_blocks_poisoned() -> list[tuple[int, bool]]:
    """Each free block of this process's caching allocator on the current GPU, read where it lies (its address, as
    `poison_free_memory` writes it) into host memory: (its bytes, whether every byte is 0xFF).  Read by address, not
    by allocating its size: an allocation gets back only blocks of the current stream, and any device temporary of
    the reading could land in a block still to read."""
    from tritongym.core.worker.handouts import wrap

    torch.cuda.synchronize()
    index = torch.cuda.current_device()
    blocks = [
        (int(block["address"]), int(block["size"]))
        for segment in torch.cuda.memory_snapshot()
        if segment.get("device", index) == index and not segment.get("is_expandable")
        for block in segment.get("blocks", [])
        if block.get("state") == "inactive" and block.get("size", 0) > 0
    ]
    return [(size, bool((wrap(address, size, torch.uint8, [size]).cpu() == 0xFF).all())) for address, size in blocks]


def test_memory_given_back_by_the_keeper_holds_no_answer(tmp_path, monkeypatch):
    """`scrub.scrubbed_empty_cache`: the blocks the keeper frees are filled with 0xFF before they go back to the
    driver (an honest slow softmax was judged `hacked` on an H100 when a worker's fresh buffer held the keeper's
    freed copy of the `precomputed` probe's answer).  The keeper itself, in this process: it builds relu's record
    (outputs kept on the device), the task ends, and the next task's record (other seeds) pushes the first out of a
    cache sized for one; each time the keeper empties its cache, every free block it is about to give back is read
    first, and the one after the eviction must hold at least the evicted record's bytes, all poisoned.  A control
    first shows the reading sees a freed tensor's values when nothing poisons them."""
    import json
    import math

    from tests.conftest import task_for
    from tritongym.core.keeper.keeper import Keeper
    from tritongym.core.worker.scrub import poison_free_memory

    torch.cuda.empty_cache()
    seven = torch.full((1 << 22,), 7.0, device="cuda")
    del seven  # back in the caching allocator, its bytes unchanged
    assert not all(poisoned for _, poisoned in free_blocks_poisoned())  # the control: unpoisoned bytes are seen
    poison_free_memory(torch.device("cuda"))
    assert all(poisoned for _, poisoned in free_blocks_poisoned())  # the same blocks, filled
    torch.cuda.empty_cache()

    given_back: list[list[tuple[int, bool]]] = []  # per `empty_cache`, what it was about to hand to the driver
    empty_cache = torch.cuda.empty_cache

    def reading_empty_cache() -> None:
        given_back.append(free_blocks_poisoned())
        empty_cache()

    monkeypatch.setattr(torch.cuda, "empty_cache", reading_empty_cache)
    monkeypatch.setenv("TRITONGYM_PARK_BYTES", str(1 << 40))  # the outputs stay on the device, in the record
    monkeypatch.chdir(tmp_path)
    keeper = Keeper(f"cuda:{torch.cuda.current_device()}")  # as the pool names it
    relu = load_problem("relu", "gpu")

    def task(seeds: list[int]) -> str:
        return task_for(relu, relu.solution, seeds=seeds).model_copy(update={"device": "cuda"}).model_dump(mode="json")

    out_bytes = 4 * math.prod(relu.sizes.values())  # one float32 output
    keeper.prep(json.dumps({"task": task([1, 2, 3]), "task_id": "a"}))
    first_bytes = keeper.records[next(iter(keeper.records))].device_bytes
    assert first_bytes >= 3 * out_bytes  # three trials' outputs at least, on the device
    keeper.free(json.dumps({"task_id": "a"}))
    assert len(keeper.records) == 1  # kept for the problem's next task
    keeper.cache_bytes = first_bytes  # room for one record: the next one pushes it out
    before = len(given_back)
    keeper.prep(json.dumps({"task": task([4, 5, 6]), "task_id": "b"}))
    assert len(keeper.records) == 1 and keeper.builds == 2  # the first record evicted
    after_eviction = given_back[before:]
    # the evicted record's blocks, less the one output the new task's `precomputed` answer took after the eviction
    assert after_eviction and sum(n for n, _ in after_eviction[-1]) >= first_bytes - out_bytes, after_eviction
    keeper.free(json.dumps({"task_id": "b"}))
    unpoisoned = [(call, n) for call, blocks in enumerate(given_back) for n, poisoned in blocks if not poisoned]
    assert given_back and not unpoisoned, f"blocks given back unpoisoned (call, bytes): {unpoisoned}"
    keeper.records.clear()


def test_a_parked_reference_is_compared_without_bringing_it_whole_to_the_gpu(monkeypatch):
    """The keeper compares a candidate's output (on the GPU) with a reference parked in host memory a chunk at a
    time (`compare_output(..., ref_device=)`): fetched whole beside the candidate's handout, two 8 GiB copies
    ran the keeper out of GPU memory on the H100 (level 1, 87_conv_pointwise_2D)."""
    import torch

    from tritongym.core.measure import compare
    from tritongym.core.measure.compare import compare_output
    from tritongym.core.worker_task import Tolerance

    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 1 << 20)
    out = torch.randn(1 << 26, device="cuda")  # 256 MiB
    ref = out.cpu()
    ref[7] += 1.0
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    result = compare_output(
        0, out, ref, {"torch.float32": Tolerance(atol=1e-6, rtol=0.0, rel_norm=0.0)}, ref_device="cuda"
    )
    peak = torch.cuda.max_memory_allocated() - base
    assert result.mismatched == 1 and result.ref_device.startswith("cuda")
    assert peak < (64 << 20), peak  # chunks of 1 Mi elements, never the 256 MiB reference


def test_the_fused_comparison_matches_torchs_on_the_gpu():
    """The keeper's one-pass comparison (`measure/fused_stats.py`) on the GPU, compiled for real: the same counts,
    maximum and widths as torch's float64 passes, the sums to 1e-12, for each dtype, whole and as a parked
    reference comes over (host memory, a chunk at a time)."""
    from tritongym.core.measure import compare, fused_stats
    from tritongym.core.worker_task import Tolerance

    g = torch.Generator(device="cuda").manual_seed(0)
    tol = Tolerance(atol=1e-3, rtol=1e-2, rel_norm=0.0)
    exact = ("mismatched", "finite", "nan_differs", "max_abs", "out_nonzero", "out_short", "ref_nonzero", "ref_short")
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        ref = torch.randn(1_000_003, device="cuda", generator=g).to(dtype)
        out = (ref.double() + 1e-2 * torch.randn(ref.shape, device="cuda", generator=g, dtype=torch.float64)).to(dtype)
        out[:7], ref[3:9] = float("nan"), float("nan")
        out[20], ref[20] = float("inf"), float("inf")
        out[21], ref[21] = float("-inf"), float("inf")
        if dtype == torch.float32:
            out[100:5000] = out[100:5000].half().float()
        want = compare._float_stats(out, ref, tol)
        assert want["mismatched"] > 10 and want["nan_differs"] >= 5
        for got in (
            fused_stats.float_stats(out, ref, tol.atol, tol.rtol, ref.numel()),
            fused_stats.float_stats(out, ref.cpu(), tol.atol, tol.rtol, 65_537),
        ):
            for name in exact:
                assert got[name] == want[name], (dtype, name)
            for name in ("sum_abs", "sum_sq", "ref_sq"):
                assert got[name] == pytest.approx(want[name], rel=1e-12), (dtype, name)
        table = {str(dtype): tol}
        one_pass = compare.compare_output(0, out, ref, table, fused=True)
        assert one_pass.mismatched == compare.compare_output(0, out, ref, table).mismatched
