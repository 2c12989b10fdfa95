"""One draw of trial seeds per problem for the candidates of it judged at the same time (`core/eval/draws.py`):
overlapping batches (the service's lanes) share it, so the keeper builds one record for them; judging that does
not overlap draws anew."""

from __future__ import annotations

import threading

from tritongym.core.config import EvalConfig
from tritongym.core.eval.draws import SharedDraws
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import get_host
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry


def counter():
    made = []

    def make():
        made.append(([len(made)], len(made)))
        return made[-1]

    return make, made


def test_a_draw_is_shared_while_held_and_made_anew_once_nobody_holds_it():
    draws, (make, made) = SharedDraws(), counter()
    first = draws.take("relu", make)
    assert draws.take("relu", make) is first  # a second batch while the first still runs
    assert draws.take("silu", make) is not first  # another problem draws its own
    draws.give_back("relu", first)
    assert draws.take("relu", make) is first  # still held by the second
    draws.give_back("relu", first)
    draws.give_back("relu", first)
    assert draws.take("relu", make) is not first and len(made) == 3  # nobody held it: fresh seeds


def test_a_held_draw_is_replaced_after_its_uses_or_its_age():
    now = [0.0]
    draws, (make, made) = SharedDraws(clock=lambda: now[0]), counter()
    draws.MAX_USES = 2
    first = draws.take("relu", make)
    assert draws.take("relu", make) is first
    third = draws.take("relu", make)  # a problem judged without pause would keep one draw for ever
    assert third is not first
    draws.give_back("relu", first)  # the old one's holders give it back without touching the new one
    assert draws.take("relu", make) is third
    now[0] += SharedDraws.MAX_AGE_S + 1
    assert draws.take("relu", make) is not third and len(made) == 3


GATED_BACKEND = '''
import threading

from tritongym import hookimpl
from tritongym.plugins.backends.triton_cpu import TritonCPUBackend


class PairedBackend(TritonCPUBackend):
    """triton-cpu that holds a candidate until a second one is being measured, and records their seeds."""

    name = "paired-cpu"
    both_in = threading.Barrier(2, timeout=300)  # long: a loaded 2-core CI runs other tests beside
    seeds = []

    def measure(self, task, limits):
        if task.mode != "screen":
            self.seeds.append((tuple(task.seeds), task.init_seed))
            self.both_in.wait()
        return super().measure(task, limits)


@hookimpl
def register_backends(register):
    register(PairedBackend)
'''


def test_two_lanes_judging_one_problem_at_once_share_its_draw(tmp_path):
    plugin = tmp_path / "paired_backend.py"
    plugin.write_text(GATED_BACKEND)
    host = get_host([str(plugin)])
    backend = host.get("backend", "paired-cpu").cls
    relu = load_problem("relu", "cpu")
    config = EvalConfig(backend="paired-cpu", size="cpu", trials=2, timeout_s=60, workers=2)
    evaluator = Evaluator(config, registry=Registry(tmp_path / "r.db"), host=host)
    lanes = [evaluator.with_registry(Registry(tmp_path / "r.db")) for _ in range(2)]
    results = [None, None]

    def lane(k: int) -> None:
        results[k] = lanes[k].evaluate(Candidate(source=relu.solution + f"\nLANE = {k}\n"), relu)

    threads = [threading.Thread(target=lane, args=(k,)) for k in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(400)
        assert [r.status.value for r in results] == ["ok", "ok"], [r and r.message for r in results]
        assert len(backend.seeds) == 2 and backend.seeds[0] == backend.seeds[1]  # one record for both
        backend.both_in = threading.Barrier(1)
        evaluator.evaluate(Candidate(source=relu.solution + "\nLANE = 2\n"), relu)
        assert backend.seeds[2] != backend.seeds[0]  # judged after both: fresh seeds
    finally:
        evaluator.close()
