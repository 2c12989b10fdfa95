"""The `precomputed` probe's watch (`worker/prior_watch.py`): the forms in which a launch argument may hold an
output, and what it leaves alone.

Each test hands the watch a launch's arguments directly (`before`, `after`), as the launch hook does for a kernel of
the candidate's file, and asks the trusted side (`probes.prior_answers`, against a decoy: the answer to other
inputs) what it finds.  The hacks themselves are judged end to end in tests/hacks/test_hacks.py, the honest kernels
in tests/hacks/test_honest.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from tritongym.core.eval.tolerances import tolerances_for
from tritongym.core.measure import layouts
from tritongym.core.worker import probes
from tritongym.core.worker.prior_watch import PriorAnswerWatch, output_specs

TOLERANCES = tolerances_for("tf32")


class _Kernel:
    """A launch's kernel as the watch names it."""

    class fn:  # noqa: N801 - stands in for a Triton kernel's function
        __name__ = "copy_kernel"


def _inputs(seed: int, rows: int = 32, cols: int = 200):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * 3.0


ANSWER = torch.softmax(_inputs(1), dim=-1)
DECOY = torch.softmax(_inputs(2), dim=-1)


def _found(*launches, answer=ANSWER, decoy=DECOY, exclude=()) -> list[str]:
    """What the trusted side finds after the watch saw each launch (a tuple of arguments) in turn."""
    watch = PriorAnswerWatch(output_specs([answer]), seed=7)
    watch.exclude(list(exclude))
    for args in launches:
        watch.before(_Kernel(), args, {})
        watch.after(_Kernel(), args, {})
    return probes.prior_answers(watch.records, [answer], TOLERANCES, [decoy])


def _fresh(like=ANSWER):
    """A fresh output as the watched call hands it out: poisoned (`scrub.poisoned_allocations`)."""
    return torch.full_like(like, float("nan"))


# --- the answer in a disguise: each form is found ------------------------------------------------------------


@pytest.mark.parametrize(
    "disguise",
    [
        lambda y: y,
        lambda y: y.view(torch.int32),
        lambda y: y.view(torch.uint8),
        lambda y: y.view(torch.float16),
        lambda y: y.view(torch.int64),
        lambda y: y.view(torch.int16).reshape(-1),
        lambda y: y.t().contiguous().t().view(torch.int32),  # a column-major answer, its bits
        lambda y: torch.nn.Parameter(y.clone(), requires_grad=False),
        lambda y: (y.view(torch.int32),),  # in a tuple argument
        lambda y: y.half(),  # the answer at half precision: still its values
    ],
    ids=["same", "int32", "uint8", "float16-halves", "int64", "int16-flat", "column-major-int32", "parameter",
         "tuple", "half"],
)  # fmt: skip
def test_an_answer_in_any_dtype_or_view_is_found(disguise):
    found = _found((disguise(ANSWER.clone()), _fresh()))
    assert found and "already held output 0" in found[0], found


def test_an_answer_reinterpreted_by_triton_is_found():
    import triton
    import triton.language as tl

    found = _found((triton.reinterpret(ANSWER.clone(), tl.int32), _fresh()))
    assert found and "reinterpreted" in found[0], found


def test_an_answer_in_the_first_rows_of_a_larger_workspace_is_found():
    workspace = torch.zeros(1 << 16)
    workspace[: ANSWER.numel()] = ANSWER.reshape(-1)
    assert _found((workspace, _fresh()))
    sliced = torch.zeros(1 << 16)
    sliced[100 : 100 + ANSWER.numel()] = ANSWER.reshape(-1)
    assert _found((sliced[100:].view(torch.uint8), _fresh()))


def _padded(answer, rows: int = 0, cols: int = 64):
    """`answer` in the leading corner of a zeroed buffer `rows` and `cols` larger (a C whose rows are padded)."""
    buffer = torch.zeros(answer.shape[0] + rows, answer.shape[1] + cols)
    buffer[: answer.shape[0], : answer.shape[1]] = answer
    return buffer


MATMUL = torch.randn(127, 93) @ torch.randn(93, 65)


@pytest.mark.parametrize(
    "held",
    [
        lambda c: _padded(c),
        lambda c: _padded(c, rows=5, cols=3),
        lambda c: _padded(c).view(torch.int32),
        lambda c: _padded(c)[None],  # a unit dim in front
        lambda c: c.t().contiguous(),  # torch computed the transpose (B^T A^T)
        lambda c: _padded(c.t().contiguous(), cols=7),
    ],
    ids=["rows-padded", "both-padded", "padded-int32", "unit-dim", "transposed", "transposed-padded"],
)
def test_an_answer_in_a_larger_or_transposed_buffer_is_found(held):
    decoy = torch.randn(127, 93) @ torch.randn(93, 65)
    found = _found((held(MATMUL.clone()), _fresh(MATMUL)), answer=MATMUL, decoy=decoy)
    assert found and "already held output 0" in found[0], found


def test_an_answer_in_another_dim_order_is_found():
    """Attention's output [B, H, S, D] computed by torch as [B, S, H, D], moved into place by a permuting copy."""
    answer = torch.randn(2, 4, 16, 8)
    found = _found((answer.permute(0, 2, 1, 3).contiguous(), _fresh(answer)), answer=answer,
                   decoy=torch.randn(2, 4, 16, 8))  # fmt: skip
    assert found and "its dims in order (0, 2, 1, 3)" in found[0], found


@pytest.mark.parametrize(
    "stash",
    [
        # a flat C that torch's matmul wrote as [M, LDC] (`out=` a 2-D view of it), handed over flat beside LDC
        lambda a, b: torch.matmul(a, torch.nn.functional.pad(b, (0, 63)), out=_flat(127 * 128).view(127, 128)),
        # the answer at an offset in a flat workspace, handed over whole beside the offset
        lambda a, b: torch.matmul(a, b, out=_flat(4096 + 127 * 65)[4096:].view(127, 65)),
        # written through an int32 view at an offset
        lambda a, b: _flat(64 + 127 * 65)[64:].view(torch.int32).copy_((a @ b).reshape(-1).view(torch.int32)),
    ],
    ids=["flat-padded", "offset", "offset-int32"],
)
def test_an_answer_torch_wrote_through_a_view_is_found_through_the_whole_buffer(stash):
    """The kernel gets the whole buffer (and an int saying where): the view torch wrote through is read too."""
    a, b = torch.randn(127, 93), torch.randn(93, 65)
    watch = PriorAnswerWatch(output_specs([a @ b]), seed=7)
    with watch.tracking():
        written = stash(a, b)
    whole = torch.empty(0).set_(written.untyped_storage())
    del written  # the view torch wrote through is gone by the launch; its storage is not
    watch.before(_Kernel(), (whole, _fresh(a @ b), 4096), {})
    found = probes.prior_answers(watch.records, [a @ b], TOLERANCES, [torch.randn(127, 93) @ torch.randn(93, 65)])
    assert found and "as torch wrote it" in found[0], found


def _flat(numel: int):
    return torch.full((numel,), float("nan"))


# --- what the watch leaves alone ------------------------------------------------------------------------------


def test_honest_launch_arguments_are_no_answer():
    """Inputs (excluded), fresh poisoned outputs, integer tensors of the output's size read as its bits, the input
    in another dtype, a zeroed accumulator: none is the answer, and the watch keeps nothing that cannot be."""
    x = _inputs(1)
    index = torch.arange(ANSWER.numel(), dtype=torch.int32).reshape(ANSWER.shape)
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    watch.exclude([x])
    for args in [(x, _fresh()), (index, _fresh()), (torch.zeros_like(ANSWER), x.double()), (x.half(), _fresh())]:
        watch.before(_Kernel(), args, {})
        watch.after(_Kernel(), args, {})
    assert probes.prior_answers(watch.records, [ANSWER], TOLERANCES, [DECOY]) == []
    assert all(bool(r["values"].isfinite().any()) for r in watch.records), "a poisoned output was kept"


def test_a_padded_or_transposed_copy_of_an_input_is_no_answer():
    x = _inputs(1)
    padded = torch.nn.functional.pad(x, (0, 56))
    assert _found((padded, _fresh()), (x.t().contiguous(), _fresh()), (padded.t(), _fresh()), exclude=[x]) == []


# --- inputs, weights and buffers: the problem's until torch writes into them ----------------------------------


class _Workspace(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("workspace", torch.zeros(1 << 14), persistent=False)
        self.weight = torch.nn.Parameter(torch.zeros(ANSWER.shape))


def _alias(tensor, shape):
    """A tensor over `tensor`'s storage made with `set_`: its version counter is its own."""
    return torch.empty(0).set_(tensor.untyped_storage(), 0, shape, torch.empty(shape).stride())


def _prefix(values, numel: int):
    """A zeroed flat tensor of `numel` elements that starts with `values`."""
    out = torch.zeros(numel)
    out[: values.numel()] = values.reshape(-1)
    return out


@pytest.mark.parametrize(
    "stash",
    [
        lambda m, x: torch.softmax(x, -1, out=m.workspace[: x.numel()].view_as(x)),  # out= into a buffer's view
        lambda m, x: m.workspace[: x.numel()].view_as(x).copy_(torch.softmax(x, -1)),
        lambda m, x: m.weight.data.copy_(torch.softmax(x, -1)),  # `.data`: a version counter of its own
        lambda m, x: torch.mul(torch.softmax(x, -1), 1.0, out=_alias(m.workspace, x.shape)),
        lambda m, x: m.workspace.untyped_storage().copy_(_prefix(torch.softmax(x, -1), 1 << 14).untyped_storage()),
        lambda m, x: x.copy_(torch.softmax(x, -1)),  # into the input itself (put back later, say)
    ],
    ids=["out-view", "copy-view", "parameter-data", "set-alias", "storage-copy", "input"],
)  # fmt: skip
def test_an_answer_torch_wrote_into_an_input_weight_or_buffer_is_found(stash):
    module, x = _Workspace(), _inputs(1)
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    watch.exclude([x, *module.parameters(), *module.buffers()])
    with watch.tracking():
        stash(module, x)
    for held in (module.workspace, module.weight, x):
        watch.before(_Kernel(), (held, _fresh()), {})
    found = probes.prior_answers(watch.records, [ANSWER], TOLERANCES, [DECOY])
    assert found and "already held output 0" in found[0], found


def test_inputs_weights_and_buffers_torch_did_not_write_are_not_sampled():
    """What the watched call does to them besides: views, a storage copied onto itself (Triton's interpreter after
    each launch), `set_`, a resize.  The input here *is* the answer (an identity-like problem), and stays unsampled."""
    module, x = _Workspace(), ANSWER.clone()
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    watch.exclude([x, *module.parameters(), *module.buffers()])
    with watch.tracking():
        x.view(-1).t()
        x.untyped_storage().copy_(x.untyped_storage())
        torch.empty(0).set_(x.untyped_storage())
        scratch = torch.softmax(x, -1)  # a fresh tensor: no write into anything excluded
    watch.before(_Kernel(), (x, x.view(torch.int32), module.workspace, _fresh()), {})
    assert watch._written.isdisjoint({x.untyped_storage().data_ptr(), module.workspace.untyped_storage().data_ptr()})
    assert probes.prior_answers(watch.records, [ANSWER], TOLERANCES, [DECOY]) == []
    del scratch


def test_an_output_an_own_kernel_wrote_is_not_sampled_again():
    """A two-kernel pipeline: the first kernel writes the answer into a scratch, the second copies it out."""
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    scratch, out = _fresh(), _fresh()
    watch.before(_Kernel(), (_inputs(1), scratch), {})
    scratch.copy_(ANSWER)  # the first kernel's store
    watch.after(_Kernel(), (_inputs(1), scratch), {})
    watch.before(_Kernel(), (scratch.view(torch.int32), out), {})
    assert probes.prior_answers(watch.records, [ANSWER], TOLERANCES, [DECOY]) == []


# --- what an own kernel wrote: known by its contents ---------------------------------------------------------


def _launch(watch, args, kernel_writes=None) -> None:
    """One own launch: the watch before, the kernel's stores (`kernel_writes()`: no version bump in Triton, none
    asked of torch here either), the watch after."""
    watch.before(_Kernel(), args, {})
    if kernel_writes is not None:
        kernel_writes()
    watch.after(_Kernel(), args, {})


@pytest.mark.parametrize(
    "fill",
    [lambda y: y.fill_(1.0), lambda y: y.copy_(torch.rand_like(y))],  # the fill's values, or noise
    ids=["constant", "noise"],
)
@pytest.mark.parametrize(
    "alias",
    [
        lambda y: torch.empty(0).set_(y.untyped_storage(), 0, y.shape, y.stride()),  # a version counter of its own
        lambda y: y.data,
        lambda y: y.view(torch.int32).view(torch.float32),
    ],
    ids=["set_", "data", "view"],
)
def test_an_answer_torch_wrote_over_what_an_own_kernel_wrote_is_found(fill, alias):
    """An own kernel fills a scratch first (it counts as written by an own kernel), then torch writes the answer
    there through an alias whose version counter may be its own, and a second kernel copies it out."""
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    x, scratch = _inputs(1), _fresh()
    watch.exclude([x])
    _launch(watch, (scratch,), lambda: fill(scratch))
    with watch.tracking():
        torch.softmax(x, -1, out=alias(scratch))
    _launch(watch, (scratch, _fresh()))
    found = probes.prior_answers(watch.records, [ANSWER], TOLERANCES, [DECOY])
    assert found and "already held output 0" in found[0], found


def test_what_an_own_kernel_wrote_is_its_own_through_any_view_or_torch_copy():
    """The honest pipelines the version counter misjudged or never saw: the first kernel's output read back through
    a transposed view, an `int32` view, a torch `clone` or `contiguous` copy (a fresh storage with its values)."""
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    scratch = _fresh()
    _launch(watch, (_inputs(1), scratch), lambda: scratch.copy_(ANSWER))
    for later in (scratch.t(), scratch.view(torch.int32), scratch.clone(), scratch.t().contiguous(), scratch[None]):
        _launch(watch, (later, _fresh()))
    # what is still kept reads them in another order (a transposed view's own order), which is no answer
    assert probes.prior_answers(watch.records, [ANSWER], TOLERANCES, [DECOY]) == []
    assert probes.prior_answers(watch.records, [ANSWER], TOLERANCES) == []


def test_samples_are_kept_once_and_within_the_limit():
    watch = PriorAnswerWatch(output_specs([ANSWER]), seed=7)
    staged = ANSWER.clone()
    for _ in range(3):
        watch.before(_Kernel(), (staged, staged.view(torch.int32), _fresh()), {})
    assert len(watch.records) == 1, [r["argument"] for r in watch.records]


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (4, 1, 6, 5)])
def test_unravel_is_torchs(shape):
    numel = torch.Size(shape).numel()
    positions = torch.randint(0, numel, (64,), generator=torch.Generator().manual_seed(numel))
    ours, torchs = layouts.unravel(positions, shape), torch.unravel_index(positions, shape)
    assert len(ours) == len(torchs)
    assert all(torch.equal(a, b) for a, b in zip(ours, torchs))


def test_the_watch_imports_nothing_at_its_first_launch():
    """A fresh worker's first watched launch: `torch.unravel_index` imported torch's symbolic shapes and sympy there
    (0.7 s of CPU in every task, 1.5-2 s of each warm eval on an H200), under the GPU's shared hold."""
    script = (
        "import sys, torch\n"
        "from tritongym.core.worker.prior_watch import PriorAnswerWatch, output_specs\n"
        "x, z = torch.randn(16, 24), torch.randn(24, 16)\n"
        "watch = PriorAnswerWatch(output_specs([x]), seed=1)\n"
        "before = set(sys.modules)\n"
        "for t in (x, z, x.t(), torch.randn(2, 4, 6, 8)):\n"
        "    watch.before(None, (t,), {}); watch.after(None, (t,), {})\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]", ran.stdout
