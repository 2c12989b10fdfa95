"""The names `tritongym` exports do what the README's Python API section says, on the real pipeline."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module
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


# A third party's plugin that imports nothing but `tritongym`: a check and a reward, the two kinds an
# evaluation runs.
TOP_LEVEL_PLUGIN = '''
import tritongym


class NoTodo(tritongym.StaticCheck):
    """Rejects a candidate whose source still says TODO."""

    name = "api-no-todo"

    def check_source(self, tree, candidate, problem):
        todo = "TODO" in candidate.source
        return tritongym.CheckVerdict(name=self.name, passed=not todo, reason="the source says TODO" if todo else "")


class Trials(tritongym.Reward):
    """The number of correctness trials the verdict rests on."""

    name = "api-trials"

    def score(self, result):
        return float(result.trials) if result.status == tritongym.Status.ok else None


@tritongym.hookimpl
def register_checks(register):
    register(NoTodo)


@tritongym.hookimpl
def register_rewards(register):
    register(Trials)
'''


def test_a_plugin_needs_only_the_top_level_names(tmp_path, fast_config, monkeypatch):
    """A check and a reward written against `tritongym`'s names alone load, judge and score on the real
    pipeline (strict: a plugin that fails to import is an error here, not a warning)."""
    monkeypatch.setenv("TRITONGYM_STRICT_PLUGINS", "1")
    plugin = tmp_path / "top_level_plugin.py"
    plugin.write_text(TOP_LEVEL_PLUGIN)
    config = fast_config.model_copy(update={"rewards": {"api-trials": 0.5}})
    source = (SOLUTIONS / "relu.py").read_text()
    judged = {}
    for label, text in (("honest", source), ("todo", source + "\n# TODO: fuse the bias\n")):
        judged[label] = tritongym.evaluate(
            tritongym.Candidate(source=text), "relu", config=config, registry=False, extra_plugins=[str(plugin)]
        )
    honest, todo = judged["honest"], judged["todo"]
    assert honest.status == tritongym.Status.ok, honest.message
    verdict = next(c for c in honest.checks if c.name == "api-no-todo")
    assert verdict.passed and verdict.stage == "static" and verdict.plugin == str(plugin)
    # fast_config runs 3 trials: the component is 3, weighted 0.5
    assert honest.reward.components == {"api-trials": 3.0} and honest.reward.total == 1.5
    assert todo.status == tritongym.Status.rejected
    assert "the source says TODO" in todo.message
    assert tritongym.hookimpl.project_name == "tritongym"
    registered = {(r.name, r.plugin) for r in tritongym.get_host([str(plugin)]).all()}
    assert {
        ("api-no-todo", str(plugin)),
        ("api-trials", str(plugin)),
        ("trloo", "tritongym.plugins.estimators.trloo"),
    } <= registered


def test_the_api_package_lists_every_name_it_loads_on_first_use():
    """`from tritongym.api import X` works for every name `__all__` promises, and for no other: the list
    and the lazy map in `tritongym/api/__init__.py` cannot drift apart unseen."""
    from tritongym import api

    assert sorted(api.__all__) == sorted(api._LAZY)
    for name in api.__all__:
        assert getattr(api, name) is getattr(import_module(f"tritongym.api.{api._LAZY[name]}"), name), name
    try:
        api.no_such_function  # noqa: B018
    except AttributeError as exc:
        assert "tritongym.api" in str(exc)
    else:
        raise AssertionError("tritongym.api answered a name it does not define")


def test_the_api_result_models_load_no_pipeline():
    """The service's HTTP client returns `BestKernel`: importing the models must not import the evaluator,
    the registry (sqlite-utils) or torch, as `tritongym.api`'s functions do."""
    code = (
        "import sys\nimport tritongym.api.results\n"
        "heavy = ('tritongym.api.evaluation', 'tritongym.core.eval.evaluate', 'sqlite_utils', 'torch')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
