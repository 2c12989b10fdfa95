"""Rollouts: real generations (tiny model, transformers engine) and real sandboxed evaluations (triton-cpu).

The prefill holds the bundled relu solution in a closed fence, so every turn's extracted code is a correct
kernel that a worker really runs, whatever the tiny model writes after it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from tritongym.core.config import EvalConfig  # noqa: E402
from tritongym.core.eval.evaluate import Evaluator  # noqa: E402
from tritongym.core.generation import ModelSpec, SamplingOptions, TinyModelSpec  # noqa: E402
from tritongym.core.learn.interaction import Interaction  # noqa: E402
from tritongym.core.learn.rollouts import RolloutRunner  # noqa: E402
from tritongym.core.problems import load_problems  # noqa: E402
from tritongym.plugins.engines.transformers_engine import TransformersEngine  # noqa: E402

SOLUTIONS = Path(__file__).resolve().parents[1] / "tritongym" / "problems" / "solutions"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = TransformersEngine.from_options({"device": "cpu"})
    spec = ModelSpec(tiny=TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))
    engine.start(spec, SamplingOptions(max_tokens=3, seed=0))
    yield engine
    engine.close()


@pytest.mark.parametrize("overlap", [True, False])
def test_turns_run_in_order_and_generation_overlaps_evaluation(engine, overlap):
    solution = (SOLUTIONS / "relu.py").read_text()
    interaction = Interaction({"max_turns": 2, "assistant_prefill": f"```python\n{solution}\n```\n"})
    evaluator = Evaluator(EvalConfig(backend="triton-cpu", trials=1, workers=2), registry=None)
    relu = next(p for p in load_problems(None, evaluator.size) if p.name == "relu")
    try:
        runner = RolloutRunner(engine, interaction, evaluator, overlap=overlap)
        batch = runner.collect([relu], samples=4, first_trajectory=10)
    finally:
        evaluator.close()
    assert len(batch.turns) == 4 * 2
    assert sorted(r.trajectory for r in batch.turns) == [10, 10, 11, 11, 12, 12, 13, 13]
    for record in batch.turns:
        assert record.status == "ok" and record.correct, record.feedback
    by_trajectory: dict[int, list] = {}
    for record in batch.turns:
        by_trajectory.setdefault(record.trajectory, []).append(record)
    for first, second in by_trajectory.values():
        assert (first.turn, second.turn) == (0, 1)
        shown = "\n".join(m["content"] for m in second.messages)
        assert first.feedback in shown  # turn 2 was generated after turn 1's evaluation came back
    assert batch.evaluations >= 2 and batch.evaluate_s > 0
    if overlap:
        assert batch.overlap_s > 0  # the engine generated while a chunk's kernels were in the sandbox
    else:
        assert batch.overlap_s == 0
