"""The names `tritongym` exports do what the README's Python API section says, on the real pipeline."""

from __future__ import annotations

from pathlib import Path

import tritongym

SOLUTIONS = Path(tritongym.__file__).parent / "problems" / "solutions"


def test_evaluate_best_and_the_registry_from_the_top_level_names(tmp_path, fast_config):
    db = tmp_path / "registry.db"
    result = tritongym.evaluate(SOLUTIONS / "relu.py", problem="relu", config=fast_config, registry=db)
    assert result.status == tritongym.Status.ok, result.message
    best = tritongym.best("relu", registry=db)
    assert best is not None and best.kernel_id == result.kernel_id
    assert tritongym.Registry(db).stats()["evaluations"] == 1


def test_an_evaluator_judges_many_candidates_with_one_configuration(tmp_path, fast_config):
    problem = tritongym.load_problem("relu")
    honest = (SOLUTIONS / "relu.py").read_text()
    broken = honest.replace("def forward", "def forward_renamed")
    with tritongym.Evaluator(fast_config, registry=tritongym.Registry(tmp_path / "r.db")) as evaluator:
        many = evaluator.evaluate_many([(tritongym.Candidate(source=src), problem) for src in (honest, broken)])
    assert [r.status for r in many][0] == tritongym.Status.ok
    assert many[1].status != tritongym.Status.ok


def test_a_plugin_needs_only_the_top_level_names():
    assert tritongym.hookimpl.project_name == "tritongym"
    assert issubclass(tritongym.StaticCheck, object) and tritongym.Reward.__name__ == "Reward"
    assert {"triton-cpu", "trloo"} <= {r.name for r in tritongym.get_host().all()}
