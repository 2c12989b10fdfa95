"""The keeper's device copies of parked reference outputs (`keeper/device_copies.py`): the later candidates of a
problem compare on the device instead of bringing a parked output over from host memory each time (10-17 ms a
`LEND` on an H200, for a comparison of under 0.5 ms).  On the CPU a parked tensor's "device copy" is the tensor
itself, so these tests check the bookkeeping (room, order, which copies go when) and that a comparison through
a copy says what the chunked one says; the GPU's speed is `benchmarks/eval_latency.py`'s `compare` part.
"""

from __future__ import annotations

import json

import torch

from tests.conftest import RELU_KERNEL, task_for
from tritongym.core.keeper.device_copies import DeviceCopies
from tritongym.core.problems import load_problem
from tritongym.core.worker.parking import Parked
from tritongym.core.worker_task import Tolerance


def _parked(n: int) -> Parked:
    return Parked(torch.arange(n, dtype=torch.float32))


def test_a_copy_is_made_once_and_reused():
    copies = DeviceCopies(torch.device("cpu"), share_bytes=1 << 20)
    parked = _parked(1000)
    first = copies.get(parked, room=1 << 20)
    assert first is not None and torch.equal(first, parked.host)
    assert copies.get(parked, room=1 << 20) is first
    assert (copies.hits, copies.misses, copies.nbytes) == (1, 1, 4000)


def test_copies_stay_within_the_room_oldest_out_first():
    copies = DeviceCopies(torch.device("cpu"), share_bytes=1 << 20)
    a, b, c = _parked(1000), _parked(1000), _parked(1000)
    copies.get(a, room=8000)
    copies.get(b, room=8000)
    copies.get(a, room=8000)  # a used last: b is the oldest now
    copies.get(c, room=8000)
    assert set(copies.copies) == {id(a), id(c)} and copies.nbytes == 8000
    copies.trim(4000)
    assert set(copies.copies) == {id(c)} and copies.nbytes == 4000
    # the records grew: no room at all, nothing copied and nothing kept
    assert copies.get(a, room=0) is None
    copies.trim(0)
    assert not copies.copies and copies.nbytes == 0


def test_copies_stay_within_a_quarter_of_the_share_and_a_large_output_is_never_copied():
    """A full-size output of several GiB stays parked and is compared a chunk at a time; all copies together take
    at most a quarter of the keeper's cache share, whatever room the records leave."""
    copies = DeviceCopies(torch.device("cpu"), share_bytes=32_000, largest=4000)
    assert copies.get(_parked(1001), room=1 << 20) is None  # 4004 bytes: larger than the largest copy
    a, b = _parked(1000), _parked(1000)
    assert copies.get(a, room=1 << 20) is not None and copies.get(b, room=1 << 20) is not None
    assert copies.nbytes == 8000 and copies.get(_parked(1), room=1 << 20) is not None
    assert id(a) not in copies.copies and copies.nbytes == 4004  # 32000 / 4: the oldest went


def test_only_the_copies_of_live_parked_tensors_are_kept():
    copies = DeviceCopies(torch.device("cpu"), share_bytes=1 << 20)
    a, b = _parked(10), _parked(20)
    copies.get(a, room=1 << 20)
    copies.get(b, room=1 << 20)
    copies.keep_only({id(b)})
    assert set(copies.copies) == {id(b)} and copies.nbytes == 80
    copies.clear()
    assert not copies.copies and copies.nbytes == 0


def test_the_keeper_compares_a_parked_output_through_its_copy_and_says_the_same(tmp_path, monkeypatch):
    """Every output parked (`TRITONGYM_PARK_BYTES=1`): the keeper's first comparison with a parked reference
    output makes its copy, the next one reuses it, and both say what the chunked comparison says, a mismatch
    included."""
    from tritongym.core.keeper.keeper import Keeper
    from tritongym.core.measure.compare import compare_output

    monkeypatch.setenv("TRITONGYM_PARK_BYTES", "1")
    monkeypatch.chdir(tmp_path)
    keeper = Keeper("cpu")
    relu = load_problem("relu")
    keeper.prep(json.dumps({"task": task_for(relu, RELU_KERNEL).model_dump(mode="json"), "task_id": "a"}))
    record = keeper.tasks["a"]["record"]
    stored = record.ref_outputs[0][0]
    assert isinstance(stored, Parked)
    out = stored.host.clone()
    out.view(-1)[3] += 1.0
    tolerances = {str(out.dtype): Tolerance(atol=1e-6, rtol=0.0, rel_norm=0.0)}
    chunked = compare_output(0, out, stored.host, tolerances, ref_device=keeper.device, fused=True)
    first = keeper._compared(0, out, stored, tolerances)
    second = keeper._compared(0, out, stored, tolerances)
    assert first.mismatched == second.mismatched == chunked.mismatched == 1
    assert first.model_dump() == second.model_dump() == chunked.model_dump()
    assert (keeper.device_copies.misses, keeper.device_copies.hits) == (1, 1)
    assert id(stored) in keeper.device_copies.copies


def test_a_record_leaving_the_keepers_cache_takes_its_copies_with_it(tmp_path, monkeypatch):
    """Copies live as long as a kept record or a running task holds their parked output: an evicted record's go
    (with the host memory they would otherwise keep alive), a running task's stay; a new record's build drops
    them all."""
    from tritongym.core.keeper.keeper import Keeper

    monkeypatch.setenv("TRITONGYM_PARK_BYTES", "1")
    monkeypatch.chdir(tmp_path)
    keeper = Keeper("cpu")
    relu, silu = load_problem("relu"), load_problem("silu")
    keeper.prep(json.dumps({"task": task_for(relu, RELU_KERNEL).model_dump(mode="json"), "task_id": "a"}))
    first = keeper.tasks["a"]["record"].ref_outputs[0][0]
    keeper.device_copies.get(first, keeper._copy_room())
    keeper.free(json.dumps({"task_id": "a"}))
    assert id(first) in keeper.device_copies.copies  # kept with its record
    keeper.host_cache_bytes = 1  # room for no record: the next one evicts relu's
    keeper.prep(json.dumps({"task": task_for(silu, silu.solution).model_dump(mode="json"), "task_id": "b"}))
    assert not keeper.device_copies.copies and "a" not in keeper.tasks
    second = keeper.tasks["b"]["record"].ref_outputs[0][0]
    for parked in (first, second):  # the evicted record's copy made again (a late comparison), and the task's
        keeper.device_copies.get(parked, keeper._copy_room())
    keeper.device_copies.keep_only(keeper._live_parked())
    assert set(keeper.device_copies.copies) == {id(second)}  # task b still runs with its record
    keeper.free(json.dumps({"task_id": "b"}))
    assert not keeper.records and not keeper.device_copies.copies and keeper.device_copies.nbytes == 0


def test_eval_latency_sums_the_lends_parts_from_a_runs_timeline():
    """`benchmarks/eval_latency.py` keeps each run's `LEND` parts summed (`lends_ms`), the numbers the device copies
    are judged by; read here from stop 59's warm relu run on an H200 (16 lends, `compare` 84 ms of them)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    import eval_latency

    result = json.loads((root / "benchmarks/results/eval_latency-h200x2-stop59-device-copies.json").read_text())
    parts = eval_latency.lend_parts(result["problems"]["relu"]["warm"][0])
    assert parts["lends"] == 16 and set(parts) == {"lends", "compare", "allocate", "sync"}
    assert parts["compare"] == {"sum": 83.95, "max": 12.21} and parts["sync"]["max"] < 1
    assert eval_latency.lend_parts({"timeline": []}) == {"lends": 0}
