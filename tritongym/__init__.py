"""tritongym: a gym for LLMs that write Triton kernels.

The names a user needs, importable from the top: the Python API mirrors the CLI (`evaluate` is `tritongym
eval`, `run` is `tritongym run`, `best` is `tritongym best`, `load_problem`/`suite_problems` back `tritongym
problems`, `get_host().all()` is `tritongym plugins`), `Registry` opens registry.db, `Evaluator` evaluates
many candidates with one configuration, and `hookimpl` plus the interfaces (and `CheckVerdict`, what a
check returns) are what a plugin needs.

Every name but `hookimpl` is imported on first use (PEP 562), so `import tritongym` stays cheap: plugins
import it at start-up, and the CLI must answer `--help` without loading the pipeline.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from tritongym.core.hookspecs import hookimpl

# public name -> the module that defines it
_LAZY = {
    "evaluate": "tritongym.api",
    "run": "tritongym.api",
    "best": "tritongym.api",
    "Registry": "tritongym.core.registry",
    "Evaluator": "tritongym.core.eval.evaluate",
    "EvalConfig": "tritongym.core.config",
    "load_problem": "tritongym.core.problems",
    "load_problems": "tritongym.core.problems",
    "suite_problems": "tritongym.core.problems",
    "get_host": "tritongym.core.plugins",
    "Candidate": "tritongym.core.models",
    "EvaluationResult": "tritongym.core.models",
    "Problem": "tritongym.core.models",
    "Status": "tritongym.core.models",
    "CheckVerdict": "tritongym.core.models",
    "TritonGymError": "tritongym.core.errors",
    "CheckUnavailable": "tritongym.core.errors",
    "Backend": "tritongym.core.interfaces",
    "StaticCheck": "tritongym.core.interfaces",
    "RuntimeCheck": "tritongym.core.interfaces",
    "Reward": "tritongym.core.interfaces",
    "AdvantageEstimator": "tritongym.core.interfaces",
    "SampleFilter": "tritongym.core.interfaces",
    "GenerationEngine": "tritongym.core.interfaces",
    "SearchStrategy": "tritongym.core.interfaces",
    "Probe": "tritongym.core.interfaces",
}

__all__ = [  # noqa: RUF022 (grouped as _LAZY is)
    "hookimpl",
    "evaluate",
    "run",
    "best",
    "Registry",
    "Evaluator",
    "EvalConfig",
    "load_problem",
    "load_problems",
    "suite_problems",
    "get_host",
    "Candidate",
    "EvaluationResult",
    "Problem",
    "Status",
    "CheckVerdict",
    "TritonGymError",
    "CheckUnavailable",
    "Backend",
    "StaticCheck",
    "RuntimeCheck",
    "Reward",
    "AdvantageEstimator",
    "SampleFilter",
    "GenerationEngine",
    "SearchStrategy",
    "Probe",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tritongym' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see
    from tritongym.api import best, evaluate, run
    from tritongym.core.config import EvalConfig
    from tritongym.core.errors import TritonGymError
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.interfaces import (
        AdvantageEstimator,
        Backend,
        GenerationEngine,
        Probe,
        Reward,
        RuntimeCheck,
        SampleFilter,
        StaticCheck,
    )
    from tritongym.core.models import Candidate, CheckVerdict, EvaluationResult, Problem, Status
    from tritongym.core.plugins import get_host
    from tritongym.core.problems import load_problem, load_problems, suite_problems
    from tritongym.core.registry import Registry
