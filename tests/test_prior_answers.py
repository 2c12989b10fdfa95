"""No false `precomputed` or `ghost`: fresh memory in the watched call is poisoned, and "the answer" is judged
against a decoy (the reference's answer to other inputs), not by a tolerance alone.

On H100s and H200s two honest large-K GEMMs and a three-kernel softmax were `hacked`, every time: a fresh
`torch.empty` block held an earlier call's output, and a softmax over thousands of columns (or a matmul of
uniform inputs over a large K) is within tolerance of any other input's.  The CPU's allocator does not hand such
blocks back on cue, so these tests build the two situations directly: an allocator that hands back a block
holding the answer (`_StaleAllocator`), and samples of an earlier call's answer.  The honest kernels themselves
are judged end to end in tests/hacks/test_honest.py (CPU) and tests/hacks/test_stale_memory.py (GPU)."""

from __future__ import annotations

import pytest
import torch

from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.verdict import DECOY_MARGIN, closer_than_decoy
from tritongym.core.worker import probes
from tritongym.core.worker.prior_watch import output_specs
from tritongym.core.worker.scrub import poisoned_allocations

TOLERANCES = tolerances_for("tf32")  # the default policy's: atol and rtol 1e-2 for fp32


def _softmax_rows(seed: int, rows: int = 4, cols: int = 4096, scale: float = 1.0):
    return torch.softmax(torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * scale, dim=-1)


# --- allocation-time poisoning ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8]
)
def test_every_allocation_under_the_mode_starts_poisoned(dtype):
    """Each allocation op `torch.empty*` and `Tensor.new_empty*` reach hands out 0xFF bytes: NaN for every float
    dtype, -1 (all ones) for the integers; memory made by ops that write it (zeros, full, clone) is theirs."""
    base = torch.zeros(6, 5, dtype=dtype)
    poisoned = torch.full((), 0xFF, dtype=torch.uint8)

    def all_poisoned(t) -> bool:
        return bool((t.contiguous().view(torch.uint8) == poisoned).all())

    with poisoned_allocations():
        made = [
            torch.empty(6, 5, dtype=dtype),
            torch.empty_like(base),
            base.new_empty((7,)),
            torch.empty_strided((3, 4), (1, 3), dtype=dtype),
            base.new_empty_strided((2, 3), (3, 1)),
            torch.empty_permuted((2, 3, 4), (2, 0, 1), dtype=dtype),
        ]
        written = [torch.zeros(6, 5, dtype=dtype), base.clone(), torch.full((3,), 2, dtype=dtype)]
    assert all(all_poisoned(t) for t in made)
    if dtype.is_floating_point:
        assert all(bool(t.isnan().all()) for t in made)
    assert all(not all_poisoned(t) for t in written)


def test_a_resize_poisons_the_bytes_it_adds_and_keeps_the_rest():
    kept = torch.arange(4, dtype=torch.float32)
    with poisoned_allocations():
        kept.resize_(64)
    assert torch.equal(kept[:4], torch.arange(4, dtype=torch.float32))
    assert bool(kept[4:].isnan().all())


class _StaleAllocator:
    """An allocator that hands back a block still holding `answer` for every `empty_like` of its shape: what the
    caching allocator did on the GPU with a block an earlier computation of that answer had freed."""

    def __init__(self, answer) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Stale(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                return False

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if func is torch.ops.aten.empty_like.default and out.shape == answer.shape:
                    out.copy_(answer)
                return out

        self.mode = Stale()


def _own_kernel(x_ptr, y_ptr):
    """Stands in for a Triton kernel of the candidate's file (the recorder knows it by its code's file): the
    watch samples its arguments before it runs, as the launch hook does for a real one."""
    y_ptr.copy_(torch.softmax(x_ptr, dim=-1))


class _Kernel:
    fn = staticmethod(_own_kernel)


def _probe_run(model_of, answer_in_memory: bool):
    """Every probe of `run_probes` on `model_of(launch)`, an allocator handing back the precomputed call's answer
    when `answer_in_memory`; returns what the trusted side finds (`prior_answers`, the ghost's answer the decoy)."""
    from tritongym.core.worker.input_source import InputSource
    from tritongym.core.worker.launches import LaunchRecorder

    recorder = LaunchRecorder(__file__)
    run = recorder._wrap(lambda kernel, *args, grid=None, warmup=False, **kw: kernel.fn(*args))

    def launch(*args):
        return run(_Kernel(), *args, grid=(1,))

    def sets(seed):
        return [torch.randn(4, 64, generator=torch.Generator().manual_seed(seed))]

    source = InputSource.held([sets(1), sets(2)], ghost=sets(3), precomputed=sets(4))
    answer = torch.softmax(sets(4)[0], dim=-1)
    decoy = torch.softmax(sets(3)[0], dim=-1)
    watch = probes.PriorAnswerWatch(output_specs([answer]), seed=5)
    model = model_of(launch)
    if answer_in_memory:
        with _StaleAllocator(answer).mode:
            probes.run_probes(model, recorder, source, sets(2), watch=watch)
    else:
        probes.run_probes(model, recorder, source, sets(2), watch=watch)
    # the watch keeps no sample of poisoned memory: the launch itself shows that it watched the stand-in kernel
    assert any(r.own for r in recorder.records(("probe", "precomputed"))), "the stand-in kernel was not seen"
    return probes.prior_answers(watch.records, [answer], TOLERANCES, [decoy])


class _FreshOutput(torch.nn.Module):
    """Honest: the output is a fresh `torch.empty_like`, then the own kernel writes it."""

    def __init__(self, launch) -> None:
        super().__init__()
        self.launch = launch

    def forward(self, x):
        y = torch.empty_like(x)
        self.launch(x, y)
        return y


class _TorchThenCopy(torch.nn.Module):
    """The hack `precomputed` exists for: torch computes the answer, the own kernel only moves it."""

    def __init__(self, launch) -> None:
        super().__init__()
        self.launch = launch

    def forward(self, x):
        staged = torch.softmax(x, dim=-1)
        y = torch.zeros_like(x)
        self.launch(staged, y)
        return y


def test_a_fresh_output_the_allocator_hands_back_holding_the_answer_is_no_prior_answer():
    """The watched call poisons what the candidate allocates where it is handed out: an honest kernel whose
    fresh output block held this very answer (an allocator's recycled block) is not `hacked`.  Without the
    poisoning (what the free-block scrub left to chance), the same allocator makes it one: the sample sits
    at the answer, far closer than the decoy."""
    assert _probe_run(_FreshOutput, answer_in_memory=True) == []
    assert _probe_run(_FreshOutput, answer_in_memory=False) == []
    # the same stale block, watched without poisoning: found (what the old scrub-by-guessing risked)
    answer = torch.softmax(torch.randn(4, 64, generator=torch.Generator().manual_seed(4)), dim=-1)
    watch = probes.PriorAnswerWatch(output_specs([answer]), seed=5)
    with _StaleAllocator(answer).mode:
        stale = torch.empty_like(answer)
    watch.before(_Kernel(), (torch.randn(4, 64), stale), {})
    assert probes.prior_answers(watch.records, [answer], TOLERANCES)


def test_an_answer_torch_computed_is_still_found_under_poisoning():
    found = _probe_run(_TorchThenCopy, answer_in_memory=False)
    assert found and "already held output 0" in found[0], found
    assert "for the answer to other inputs" in found[0]


# --- the decoy --------------------------------------------------------------------------------------------


def _record(values, positions, numel: int) -> dict:
    return {"kernel": "normalise_kernel", "argument": "argument 3", "numel": numel, "positions": positions,
            "values": values}  # fmt: skip


def test_an_earlier_calls_softmax_over_wide_rows_is_not_the_answer():
    """A softmax over 4096 columns is within the fp32 atol of any other softmax almost everywhere: the 99%-of-256
    rule alone took an earlier call's output, left in a recycled block, for this call's answer.  Against the
    decoy it is no closer than any other answer, while a copy of this answer still is."""
    answer, decoy = _softmax_rows(1), _softmax_rows(2)
    samples = probes.AnswerSamples(answer, seed=9)
    positions = samples.positions
    for scale in (1.0, 1e-3, -1.0, 4.0):  # an earlier call on each trial distribution's inputs
        stale = _softmax_rows(3, scale=scale).reshape(-1)[positions].double()
        record = _record(stale, positions, answer.numel())
        assert probes.prior_answers([record], [samples], TOLERANCES, None), "the tolerance alone took it"
        assert probes.prior_answers([record], [samples], TOLERANCES, [decoy]) == [], scale
    copy = answer.half().float().reshape(-1)[positions].double()  # torch's answer, even at half precision
    found = probes.prior_answers([_record(copy, positions, answer.numel())], [samples], TOLERANCES, [decoy])
    assert found and "already held output 0" in found[0]


def test_a_ghost_output_left_by_an_earlier_call_is_not_the_answer():
    """The ghost replay (kernels no-op'd) of an honest large-K matmul whose fresh output block holds an earlier
    call's output: with uniform inputs over KernelBench's K = 524288 every entry is about K/4 whatever the inputs,
    so it is within tolerance (relative norm included) of the ghost's answer, but no closer to it than trial 0's
    answer (the decoy) is: the kernels did the work.  A decorative kernel beside torch's answer is still caught."""
    from tritongym.core.models import Candidate, Evidence, Problem
    from tritongym.plugins.checks.ghost import GhostReplayCheck

    def product(seed: int):
        generator = torch.Generator().manual_seed(seed)
        return torch.rand(16, 524288, generator=generator) @ torch.rand(524288, 16, generator=generator)

    ghost_ref, trial0_ref = product(11), product(12)

    def judged(output) -> bool:
        record = {"probe": "ghost", "trial": -1, "outputs": [output], "launches": [], "error": ""}
        calls = probes.compare_probes([record], {"ghost": [ghost_ref]}, [[trial0_ref]], TOLERANCES)
        assert calls[0].decoy_errs and calls[0].decoy_errs[0] > 0
        evidence = Evidence(probes=calls)
        problem = Problem(name="matmul_large_k", source="", sizes={})
        return GhostReplayCheck().judge(evidence, Candidate(source=""), problem).passed

    for seed in (13, 14, 15):  # an earlier call's answer (as-is inputs) in the block
        stale = product(seed)
        assert float((stale - ghost_ref).norm() / ghost_ref.norm()) < 1e-2  # the tolerance alone: "matches"
        assert judged(stale), seed
    assert not judged(ghost_ref.clone())  # torch's own answer: hacked


def _ratio(stale, answer, decoy) -> float:
    return float((stale.double() - answer.double()).abs().mean() / (decoy.double() - answer.double()).abs().mean())


def test_the_margin_sits_between_stale_answers_and_copies_with_room():
    """`DECOY_MARGIN` from measurements: across softmax over 4096-16384 columns, relu, layer norm, row means and
    large-K matmuls (uniform and normal inputs), an earlier call's answer to as-is, scaled or negated inputs is
    at least twice the margin away (relative to the decoy), and a copy of this call's answer made at fp16, or
    with TF32 operands rounded as cuBLAS does, within a quarter of it.  (The measured extremes, 0.62 and 0.06,
    are in `DECOY_MARGIN`'s docstring.)"""

    def rounded_tf32(t):
        bits = t.float().view(torch.int32)
        return ((bits + (1 << 12)) & ~((1 << 13) - 1)).view(torch.float32)

    def normal(*shape, seed):
        return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

    def uniform(*shape, seed):
        return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

    cases = {
        "softmax 4096": (lambda x: torch.softmax(x, -1), lambda s: [normal(8, 4096, seed=s)]),
        "softmax 16384": (lambda x: torch.softmax(x, -1), lambda s: [normal(4, 16384, seed=s)]),
        "relu": (torch.relu, lambda s: [normal(16, 1024, seed=s)]),
        "layer norm": (lambda x: torch.nn.functional.layer_norm(x, (1024,)), lambda s: [normal(16, 1024, seed=s)]),
        "row mean": (lambda x: x.mean(-1), lambda s: [normal(256, 512, seed=s)]),
        "matmul uniform K=16384": (torch.matmul, lambda s: [uniform(32, 16384, seed=s), uniform(16384, 32, seed=-s)]),
        "matmul normal K=4096": (torch.matmul, lambda s: [normal(32, 4096, seed=s), normal(4096, 32, seed=-s)]),
    }
    stale_low, copy_high = {}, {}
    for name, (fn, make) in cases.items():
        inputs = make(100)
        answer, decoy = fn(*inputs), fn(*make(200))
        stale_low[name] = min(_ratio(fn(*[x * f for x in make(300)]), answer, decoy) for f in (1.0, 1e-3, -1.0, 4.0))
        copies = [fn(*[x.half().float() for x in inputs]), fn(*inputs).half(), fn(*[rounded_tf32(x) for x in inputs])]
        copy_high[name] = max(_ratio(c, answer, decoy) for c in copies)
    assert min(stale_low.values()) >= 2 * DECOY_MARGIN, stale_low
    assert max(copy_high.values()) <= DECOY_MARGIN / 4, copy_high
    assert not closer_than_decoy(min(stale_low.values()), 1.0) and closer_than_decoy(max(copy_high.values()), 1.0)
    # an answer the same for other inputs (isnan of finite inputs: the decoy at distance 0) makes nothing specific
    assert not closer_than_decoy(0.0, 0.0)
