"""The Python API: one function per CLI command (`tritongym.cli` only formats what these return).

    from tritongym import api
    result = api.evaluate("my_kernel.py", problem="softmax")
    best = api.best("softmax")

The functions live by what they do (`evaluation`: eval, run, problems check, plugins; `kernels`: best,
leaderboard, export, kernel history, registry stats, run reports; `learning`: advantages, rollouts, train,
sft, tts; `tuning`: tune) and the models they return in `results`.  Every name here is imported on first use
(PEP 562): `tritongym.api.results` is plain pydantic, and importing it (as the service's HTTP client does)
must not load the evaluator, the registry or torch.

A face of tritongym beside `cli`, `service` and `adapters`: it may import the kernel and every subsystem of
`tritongym.core`; `tritongym` (the public names), the service, the adapters and the CLI import it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# public name -> the module of this package that defines it
_LAZY = {
    **dict.fromkeys(
        (
            "MAX_CANDIDATE_BYTES",
            "check_problems",
            "evaluate",
            "make_evaluator",
            "pair_candidates",
            "plugins",
            "read_candidate",
            "run",
        ),
        "evaluation",
    ),
    **dict.fromkeys(
        ("best", "export_best", "kernel_history", "leaderboard", "problem_names", "registry_stats", "report"),
        "kernels",
    ),
    **dict.fromkeys(("advantages", "rollouts", "sft", "train", "tts"), "learning"),
    "tune": "tuning",
    **dict.fromkeys(("RegistryArg", "open_registry"), "registries"),
    **dict.fromkeys(
        (
            "AdvantageReport",
            "BestKernel",
            "ExportManifest",
            "ExportedKernel",
            "KernelEvaluation",
            "KernelHistory",
            "KernelTurn",
            "RolloutSummary",
            "TunedFrom",
            "TurnAdvantage",
        ),
        "results",
    ),
}

__all__ = [  # every name of _LAZY (tests/test_public_api.py checks they agree)
    "AdvantageReport",
    "BestKernel",
    "ExportManifest",
    "ExportedKernel",
    "KernelEvaluation",
    "KernelHistory",
    "KernelTurn",
    "MAX_CANDIDATE_BYTES",
    "RegistryArg",
    "RolloutSummary",
    "TunedFrom",
    "TurnAdvantage",
    "advantages",
    "best",
    "check_problems",
    "evaluate",
    "export_best",
    "kernel_history",
    "leaderboard",
    "make_evaluator",
    "open_registry",
    "pair_candidates",
    "plugins",
    "problem_names",
    "read_candidate",
    "registry_stats",
    "report",
    "rollouts",
    "run",
    "sft",
    "train",
    "tts",
    "tune",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tritongym.api' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see
    from tritongym.api.evaluation import (
        MAX_CANDIDATE_BYTES,
        check_problems,
        evaluate,
        make_evaluator,
        pair_candidates,
        plugins,
        read_candidate,
        run,
    )
    from tritongym.api.kernels import (
        best,
        export_best,
        kernel_history,
        leaderboard,
        problem_names,
        registry_stats,
        report,
    )
    from tritongym.api.learning import advantages, rollouts, sft, train, tts
    from tritongym.api.registries import RegistryArg, open_registry
    from tritongym.api.results import (
        AdvantageReport,
        BestKernel,
        ExportedKernel,
        ExportManifest,
        KernelEvaluation,
        KernelHistory,
        KernelTurn,
        RolloutSummary,
        TunedFrom,
        TurnAdvantage,
    )
    from tritongym.api.tuning import tune
