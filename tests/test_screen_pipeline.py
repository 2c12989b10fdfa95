"""A batch's candidates start as soon as their own problem is screened, not after every problem's screen (issue 40):
the negative-control screens of problems not yet known run in the background (`screens_in_background`), and each
candidate's task is made once its problem's screen is done (`TaskBehindScreen`)."""

from __future__ import annotations

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import get_host
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

GATED_BACKEND = '''
import threading

from tritongym import hookimpl
from tritongym.plugins.backends.triton_cpu import TritonCPUBackend


class GatedBackend(TritonCPUBackend):
    """triton-cpu whose screen of relu waits until a silu candidate has started: with a barrier of screens before
    any candidate, it would wait in vain."""

    name = "gated-cpu"
    silu_candidate_started = threading.Event()
    relu_screen_waited = []

    def measure(self, task, limits):
        if task.mode != "screen" and task.problem_name == "silu":
            self.silu_candidate_started.set()
        if task.mode == "screen" and task.problem_name == "relu":
            self.relu_screen_waited.append(self.silu_candidate_started.wait(60))
            if not self.relu_screen_waited[-1]:
                raise RuntimeError("no silu candidate started while relu was being screened")
        return super().measure(task, limits)


@hookimpl
def register_backends(register):
    register(GatedBackend)
'''


def test_a_problems_candidates_start_while_another_problem_is_still_being_screened(tmp_path):
    plugin = tmp_path / "gated_backend.py"
    plugin.write_text(GATED_BACKEND)
    host = get_host([str(plugin)])
    backend = host.get("backend", "gated-cpu").cls
    relu, silu = load_problem("relu", "cpu"), load_problem("silu", "cpu")
    config = EvalConfig(backend="gated-cpu", size="cpu", trials=2, timeout_s=60, workers=4)
    registry = Registry(tmp_path / "registry.db")
    evaluator = Evaluator(config, registry=registry, host=host)
    try:
        results = evaluator.evaluate_many(
            [(Candidate(source=relu.solution), relu), (Candidate(source=silu.solution), silu)]
        )
    finally:
        evaluator.close()
    assert [r.status.value for r in results] == ["ok", "ok"], [r.message for r in results]
    assert backend.relu_screen_waited and all(backend.relu_screen_waited)
    # the screens computed in the background were stored by the Evaluator's own thread
    assert registry.problem_screen(relu.key, evaluator.device_class, _screen_key(evaluator)) is not None
    assert registry.problem_screen(silu.key, evaluator.device_class, _screen_key(evaluator)) is not None


def _screen_key(evaluator: Evaluator) -> str:
    from tritongym.core.eval.screen import screen_key

    return screen_key(evaluator.tolerances)
