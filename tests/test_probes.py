"""The runtime probes' machinery (core/worker/probes.py), piece by piece; the hacks they catch: tests/hacks/."""

from __future__ import annotations

import threading
import time

from tritongym.core.worker import probes
from tritongym.core.worker.launches import tf32_kernels


def test_a_replaced_callable_or_flipped_flag_is_an_environment_change(monkeypatch):
    import torch

    before = probes.environment_snapshot()
    assert probes.environment_changes(before) == []
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", not torch.backends.cudnn.allow_tf32)
    changes = probes.environment_changes(before)
    assert "time.perf_counter was replaced" in changes
    assert "torch.allclose was replaced" in changes
    assert any(c.startswith("torch.backends.cudnn.allow_tf32 changed from") for c in changes)


def test_a_thread_still_running_is_side_work():
    before = probes.live_side_work()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="leftover", daemon=True)
    worker.start()
    try:
        found = probes.describe_side_work(probes.live_side_work() - before, "after forward")
        assert found == ["a Python thread (leftover) was still running after forward"]
    finally:
        stop.set()
        worker.join()
    assert probes.live_side_work() - before == set()


def test_a_new_thread_reusing_a_finished_threads_ident_is_still_side_work():
    # The C library hands a finished thread's pthread handle (Python's ident) to the next thread.
    finished = threading.Thread(target=lambda: None)
    finished.start()
    before = probes.live_side_work() | {("thread", finished.ident, finished.native_id)}
    finished.join()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="leftover", daemon=True)
    worker.start()
    try:
        found = probes.describe_side_work(probes.live_side_work() - before, "after forward")
        assert found == ["a Python thread (leftover) was still running after forward"]
    finally:
        stop.set()
        worker.join()


_TF32_PTX = """
.visible .entry matmul_kernel(
    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4};
"""
_IEEE_PTX = """
.visible .entry matmul_kernel(
    fma.rn.f32 %f5, %f6, %f7, %f5;
    cvt.rna.tf32.f32 %r9, %f9;
"""


class _Compiled:
    """What Triton's CompiledKernel exposes for this purpose: its assembly by stage."""

    def __init__(self, ptx: str) -> None:
        self.asm = {"ptx": ptx}


def test_tf32_products_are_found_in_ptx_and_plain_fma_is_not():
    kernels = {"mm_tf32": _Compiled(_TF32_PTX), "mm_ieee": _Compiled(_IEEE_PTX), "interpreted": object()}
    assert tf32_kernels(kernels) == ["mm_tf32"]


def test_the_pool_worker_runs_every_probe(relu_problem):
    """The GPU worker's path, run on the CPU: probes come back compared, an honest kernel passes them all."""
    from tritongym.core.eval.tolerances import tolerances_for
    from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
    from tritongym.core.verdict import probe_outputs_match
    from tritongym.core.worker_task import WorkerTask

    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        task = WorkerTask(
            problem_name=relu_problem.name,
            problem_source=relu_problem.source,
            sizes=relu_problem.sizes,
            candidate_source=relu_problem.solution,
            device="cpu",
            seeds=[1, 2, 3],
            init_seed=5,
            tolerances=tolerances_for("ieee", {}),
        )
        evidence = pool.run(task, timeout_s=120)
    finally:
        pool.close()
    assert evidence.error is None, evidence.error
    names = [call.probe for call in evidence.probes]
    assert names == [
        "mode:grad+train",
        "mode:no_grad+eval",
        "mode:grad+eval",
        "refresh",
        "repeat",
        "ghost",
        "precomputed",
    ]
    for call in evidence.probes:
        matches = probe_outputs_match(call).correct
        assert matches == (call.probe != "ghost"), (call.probe, probe_outputs_match(call).message)
        assert any(rec.own for rec in call.launches)
    assert evidence.environment_changes == [] and evidence.side_work == []
    assert evidence.probe("precomputed").findings == []  # probed, and no output existed before the relu kernel ran
    assert evidence.torch_work == {} and sum(evidence.reference_torch_work.values()) > 0


def test_op_trace_counts_and_weighs_aten_ops_and_leaves_torch_alone():
    """The tracer must not import torch._dynamo (it replaces torch.manual_seed, which the environment
    check would blame on the candidate); it counts every op and weighs the compute ones: multiply-adds for a
    contraction, elements touched for the rest, nothing for a view or a copy."""
    import torch

    from tritongym.core.worker.op_trace import traced_call

    before = {name: id(getattr(torch, name)) for name in ("manual_seed", "relu", "matmul")}
    x = torch.randn(8, 16)
    w = torch.randn(16, 4)
    _, ops, work = traced_call(lambda a, b: (a @ b).relu().t().contiguous().float(), x, w)
    assert ops.get("mm") == 1 and ops.get("relu") == 1 and ops.get("t") == 1, ops
    assert work == {"mm": 8 * 4 * 16, "relu": 8 * 4}, work  # t, clone (contiguous) and float: no work
    assert {name: id(getattr(torch, name)) for name in before} == before
    conv = torch.nn.Conv2d(3, 5, kernel_size=3, bias=False)
    _, _, work = traced_call(conv, torch.randn(2, 3, 10, 10))
    assert work == {"convolution": 2 * 5 * 8 * 8 * (3 * 3 * 3)}, work


def test_op_trace_weighs_attention_distance_and_sparse_ops_as_contractions():
    """Attention, pairwise-distance and sparse-matrix products are weighed by their multiply-adds, not by the
    elements they touch: as a pointwise op, an attention left to `F.scaled_dot_product_attention` (its cost grows
    with the square of the sequence) weighed under 1% of the reference's work, and a lazy attention kernel (or a
    GEMM as `torch.sparse.mm`) passed as glue."""
    import torch
    import torch.nn.functional as F

    from tritongym.core.worker.op_trace import traced_call

    b, h, length, keys, e = 2, 3, 20, 24, 8
    q, k, v = torch.randn(b, h, length, e), torch.randn(b, h, keys, e), torch.randn(b, h, keys, e)
    _, ops, work = traced_call(lambda: F.scaled_dot_product_attention(q, k, v))
    assert len(work) == 1 and sum(work.values()) == b * h * length * keys * 2 * e, (ops, work)  # one fused op
    x1, x2 = torch.randn(6, 5), torch.randn(7, 5)
    _, _, work = traced_call(lambda: torch.cdist(x1, x2))
    assert sum(work.values()) == 6 * 7 * 5, work
    a, w = torch.randn(6, 5), torch.randn(5, 4)
    for product in (lambda: torch.sparse.mm(a.to_sparse(), w), lambda: torch.hspmm(a.to_sparse(), w)):
        _, ops, work = traced_call(product)
        assert max(work.values()) == 6 * 4 * 5, (ops, work)  # a dense product in a sparse format is still a GEMM
    embed, heads, batch, seq = 8, 2, 2, 5
    mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    x = torch.randn(batch, seq, embed)
    with torch.no_grad():
        _, ops, work = traced_call(lambda: mha(x, x, x, need_weights=False))
    # the fused path (no grad, eval): projections (q, k, v, out: 4 * B * L * E * E) and attention (B * L * S * 2E)
    assert ops.get("_native_multi_head_attention") == 1, ops
    assert sum(work.values()) == 4 * batch * seq * embed * embed + batch * seq * seq * 2 * embed, (ops, work)


def test_environment_changes_after_timing_are_added_once(monkeypatch):
    """The GPU worker notes patches again after timing (and when a patch broke the timing): no repeats."""
    import time

    from tritongym.core.models import Evidence
    from tritongym.core.worker.gpu_worker import _note_environment_changes
    from tritongym.core.worker.probes import environment_snapshot

    keep = {"environment": environment_snapshot()}
    evidence = Evidence()
    assert not _note_environment_changes(evidence, keep)
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert _note_environment_changes(evidence, keep) and _note_environment_changes(evidence, keep)
    assert len(evidence.environment_changes) == 1 and "perf_counter" in evidence.environment_changes[0]
    assert not _note_environment_changes(evidence, {})  # no snapshot (the candidate never ran): nothing


def test_each_task_of_a_shared_record_is_probed_on_precomputed_inputs_of_its_own(relu_problem):
    """The samples of an RL batch share the keeper's record, but not the `precomputed` probe's inputs: an answer
    to inputs every sample saw was found in a fresh buffer of a later sample's worker (an honest slow softmax
    judged `hacked` on an H100).  Each task's probe runs on inputs drawn from its own probe seed, the keeper
    answers them per task (compared, and sampled where the watch looks), and a kernel that only copies a torch
    answer is still caught when the record is shared."""
    from pathlib import Path

    from tests.conftest import task_for
    from tritongym.core.keeper.keeper import record_key
    from tritongym.core.sandbox.gpu_pool import PoolOptions, WorkerPool
    from tritongym.core.verdict import probe_outputs_match
    from tritongym.core.worker.input_source import precomputed_seed
    from tritongym.core.worker_task import WorkerTask

    copier = (Path(__file__).parent / "hacks" / "candidates" / "grid_callable_torch.py").read_text()

    def task(probe_seed: int, source: str) -> WorkerTask:
        return task_for(relu_problem, source, init_seed=5, probe_seed=probe_seed)

    tasks = [task(11, relu_problem.solution), task(12, relu_problem.solution), task(13, copier)]
    assert len({record_key(t) for t in tasks}) == 1  # one record for all three
    assert len({precomputed_seed(t) for t in tasks}) == 3  # three sets of probe inputs
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096))
    try:
        honest = [pool.run(t, timeout_s=120) for t in tasks[:2]]
        copied = pool.run(tasks[2], timeout_s=120)
    finally:
        pool.close()
    for evidence in honest:
        assert evidence.error is None, evidence.error
        call = next(c for c in evidence.probes if c.probe == "precomputed")
        assert probe_outputs_match(call).correct, probe_outputs_match(call).message  # against its own answer
        assert call.findings == []
    assert honest[1].flags.get("reference_cached") is True  # the second task used the first one's record
    assert copied.error is None, copied.error
    found = copied.probe("precomputed").findings
    assert any("already held output 0" in finding for finding in found), found


def test_only_the_watched_call_allocates_poisoned_memory():
    """The `precomputed` probe asks whether the answer existed before the candidate's kernel ran; a buffer the
    candidate allocates there may come from the allocator's cache, holding whatever this process computed last
    (an honest softmax that launched its kernel three times was judged `hacked` on an H100).  Every tensor the
    candidate allocates in the watched call starts poisoned (`scrub.poisoned_allocations`), and in no other call:
    the ghost replay must still see an answer torch computed and left where the output is allocated next."""
    import torch

    from tritongym.core.worker.input_source import InputSource
    from tritongym.core.worker.launches import LaunchRecorder
    from tritongym.core.worker.prior_watch import output_specs

    seen: list[tuple[str, bool]] = []
    recorder = LaunchRecorder("")

    class Doubling(torch.nn.Module):
        def forward(self, x):
            fresh = torch.empty_like(x)
            watched = "watched call" if recorder.watch is not None else "call"
            poisoning = torch._C._len_torch_dispatch_stack() > 0
            seen.append((watched, poisoning and bool(fresh.isnan().all())))
            return fresh.copy_(x * 2)

    def sets(seed):
        return [torch.randn(8, generator=torch.Generator().manual_seed(seed))]

    source = InputSource.held([sets(1), sets(2)], ghost=sets(3), precomputed=sets(4))
    watch = probes.PriorAnswerWatch(output_specs([torch.empty(8)]), seed=5)
    records = probes.run_probes(Doubling(), recorder, source, sets(2), watch=watch)
    assert seen[-1] == ("watched call", True) and records[-1]["probe"] == "precomputed"
    assert all(w == "call" and not poisoned for w, poisoned in seen[:-1]), seen
    assert torch._C._len_torch_dispatch_stack() == 0  # the mode is gone once the call ends

    seen.clear()
    probes.run_probes(Doubling(), recorder, source, sets(2), watch=None)
    assert seen and all(w == "call" and not poisoned for w, poisoned in seen)
