"""Test-time scaling on the CPU: a tiny model, the transformers engine and triton-cpu, the registry as memory.

The assistant prefill holds the bundled relu or silu solution in a closed fence, so each turn's code is a real
kernel that a sandboxed worker really runs (whatever the tiny model writes after it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from tritongym import api  # noqa: E402
from tritongym.core.config import EvalConfig  # noqa: E402
from tritongym.core.eval.evaluate import Evaluator  # noqa: E402
from tritongym.core.generation import TinyModelSpec  # noqa: E402
from tritongym.core.learn.model_loading import build_tiny_model  # noqa: E402
from tritongym.core.learn.run_config import RunConfig  # noqa: E402
from tritongym.core.models import Candidate  # noqa: E402
from tritongym.core.problems import load_problems  # noqa: E402
from tritongym.core.registry import Registry  # noqa: E402

SOLUTIONS = Path(__file__).resolve().parents[1] / "tritongym" / "problems" / "solutions"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_model(TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))


def tts_config(tiny_dir: Path, out: Path, prefill: str = "", **tts) -> RunConfig:
    """Two turns: a later turn's prompt holds every earlier turn (each a whole kernel and its feedback), so the tiny
    model's prefill grows with the turn; four turns spent most of this file's time in attention over that history,
    and two show the same (a turn after the first, per-turn rows, registry answers)."""
    return RunConfig.model_validate(
        {
            "name": "tts",
            "output_dir": str(out),
            "model": {"path": str(tiny_dir)},
            "engine": {"name": "transformers", "options": {"device": "cpu"}},
            "sampling": {"temperature": 1.0, "max_tokens": 4, "seed": 11},
            "interaction": {"max_turns": 2, "assistant_prefill": prefill or "```python\n"},
            "rollout": {"problems": ["relu", "silu"], "samples": 2},
            "eval": {"backend": "triton-cpu", "trials": 1},
            "tts": tts,
        }
    )


def test_tts_stores_every_turn_and_a_repeat_is_answered_by_the_registry(tiny_dir, tmp_path):
    solution = (SOLUTIONS / "relu.py").read_text()
    config = tts_config(tiny_dir, tmp_path / "out", prefill=f"```python\n{solution}\n```\n")
    registry = Registry(tmp_path / "registry.db")
    first = api.tts(config, registry=registry)
    assert (first.problems, first.samples, first.turns) == (2, 2, 2 * 2 * 2)
    turns = registry.turns(first.run_id)
    assert len(turns) == 8 and {t["problem_name"] for t in turns} == {"relu", "silu"}
    assert sorted({(t["sample"], t["turn"]) for t in turns}) == [(s, t) for s in range(4) for t in range(2)]
    # relu's code is its own solution (correct); silu gets relu's kernel (a real, incorrect evaluation)
    by_problem = {p: {t["status"] for t in turns if t["problem_name"] == p} for p in ("relu", "silu")}
    assert by_problem["relu"] == {"ok"} and "ok" not in by_problem["silu"]
    assert first.evaluations >= 2  # each distinct (problem, kernel) ran a worker once

    # the report's numbers are those of the stored turns: per turn, the share of the 4 samples correct
    from tritongym.core.reports.run_report import run_report

    report = run_report(registry, first.run_id)
    assert report.kind == "tts" and report.overall.samples == 4 and len(report.overall.turns) == 2
    for turn in range(2):
        at = [t for t in turns if t["turn"] == turn]
        row = report.overall.at(turn + 1)
        assert row.correct == pytest.approx(sum(t["status"] == "ok" for t in at) / 4) == 0.5
        assert row.correct_best == 0.5 and row.hacked == 0 and row.no_code == 0
        assert row.fast["1"] is None  # triton-cpu does not time: Fast@p is unknown, not 0
    assert report.problems[0].problem == "relu" and report.problems[0].table.last.correct == 1.0

    again = api.tts(config, registry=registry)
    assert again.turns == 8 and again.run_id != first.run_id
    assert again.evaluations == 0 and again.registry_hits == 8  # nothing new: the registry answered


def test_a_kernel_from_a_training_run_seeds_the_first_prompt(tiny_dir, tmp_path):
    registry = Registry(tmp_path / "registry.db")
    train_run = registry.start_run("train", "earlier-training", {})
    evaluator = Evaluator(EvalConfig(backend="triton-cpu", trials=1), registry=registry)
    try:
        relu = next(p for p in load_problems(None, evaluator.size) if p.name == "relu")
        source = (SOLUTIONS / "relu.py").read_text()
        result = evaluator.evaluate(Candidate(source=source, origin="training"), relu)
    finally:
        evaluator.close()
    assert result.honest_and_correct
    registry.add_turn(train_run, result, sample=0, turn=0, prompt="[]", response=source, problem=relu, step=7)

    config = tts_config(tiny_dir, tmp_path / "out", seed_from_registry=1)
    config = config.model_copy(update={"interaction": {**config.interaction, "max_turns": 1}})
    summary = api.tts(config, registry=registry)
    assert summary.seeded == {"relu": 1, "silu": 0}
    first_prompts = {t["problem_name"]: json.loads(t["prompt"]) for t in registry.turns(summary.run_id)}
    relu_prompt = "\n".join(m["content"] for m in first_prompts["relu"])
    assert source.strip() in relu_prompt and "correct" in relu_prompt.lower()
    assert source.strip() not in "\n".join(m["content"] for m in first_prompts["silu"])


def test_tune_budget_ends_the_run_by_tuning_each_problems_best_kernel(tiny_dir, tmp_path):
    """`[tts] tune_budget`: the best kernel stored for relu is tuned after the rollouts (every variant judged by
    the run's evaluator and recorded); silu, for which the tiny model found nothing correct, is skipped."""
    registry = Registry(tmp_path / "registry.db")
    solution = (SOLUTIONS / "relu.py").read_text()
    config = tts_config(tiny_dir, tmp_path / "out", prefill=f"```python\n{solution}\n```\n", tune_budget=2)
    config = config.model_copy(update={"interaction": {**config.interaction, "max_turns": 1}})
    summary = api.tts(config, registry=registry)
    assert [t.problem for t in summary.tuned] == ["relu"]
    (relu,) = summary.tuned
    assert relu.status == "tuned" and relu.variants == 2 and relu.backend == "triton-cpu"
    assert relu.strategy == "exhaustive" and summary.tune_s > 0
    stored = list(registry.db["tuning_records"].rows)
    assert len(stored) == len(relu.records) == 3  # the kernel as written and its two variants
    assert {r["problem_name"] for r in stored} == {"relu"}


def test_an_unknown_tune_strategy_fails_before_any_sample(tiny_dir, tmp_path):
    from tritongym.core.errors import TritonGymError

    config = tts_config(tiny_dir, tmp_path / "out", tune_budget=1, tune_strategy="no-such-strategy")
    registry = Registry(tmp_path / "registry.db")
    with pytest.raises(TritonGymError, match="no-such-strategy"):
        api.tts(config, registry=registry)
    assert registry.db["turns"].count == 0
