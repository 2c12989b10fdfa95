"""The tritongym hook specifications: one registration hook per plugin kind.

Each hook receives a `register` callback and calls it once per class it provides, e.g.

    from tritongym import hookimpl

    @hookimpl
    def register_rewards(register):
        register(MyReward)

The host (`tritongym.core.plugins`) validates what is registered, refuses duplicate names naming both
plugins, and afterwards calls the chosen objects directly: no hook runs per evaluation or per batch.
Specs only ever grow by new hooks or new keyword arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from tritongym.core.interfaces import (
        AdvantageEstimator,
        Backend,
        Check,
        GenerationEngine,
        Probe,
        Reward,
        SampleFilter,
        SearchStrategy,
    )

PROJECT_NAME = "tritongym"
"""Marker project name, plugin-manager name and entry-point group, in one place."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_backends(register: Callable[[type[Backend]], None]) -> None:
    """Register kernel backends: classes that run a candidate against a problem on a device and
    return `Evidence` (outputs compared, launch records, timings, profile). They measure; they never judge."""


@hookspec
def register_checks(register: Callable[[type[Check]], None]) -> None:
    """Register hack checks: `StaticCheck` classes judge the source before any worker runs,
    `RuntimeCheck` classes judge the evidence a backend gathered. Each returns a `CheckVerdict`.

    A check that needs a generation engine or the registry overrides `bind(context)`: the Evaluator passes
    a `CheckContext` (the plugin host and the registry's verdict memo) once, before judging anything.  A
    check that costs a model call sets `default_enabled = False` and runs only when a config names it."""


@hookspec
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    """Register reward components: classes that turn an `EvaluationResult` into one float."""


@hookspec
def register_estimators(register: Callable[[type[AdvantageEstimator]], None]) -> None:
    """Register advantage estimators (GRPO, RLOO, TRLOO, ...): rewards of a group in, advantages out."""


@hookspec
def register_sample_filters(register: Callable[[type[SampleFilter]], None]) -> None:
    """Register sample filters (MRS, PRS, ...): decide which samples keep their gradient."""


@hookspec
def register_engines(register: Callable[[type[GenerationEngine]], None]) -> None:
    """Register generation engines (transformers, vLLM, HTTP) that produce rollouts with log-probs."""


@hookspec
def register_search_strategies(register: Callable[[type[SearchStrategy]], None]) -> None:
    """Register search strategies for `tritongym tune`: classes that, given a kernel's search space
    (`tritongym.core.tuning.SearchSpace`), the configurations measured so far and the budget left, propose
    which launch configurations to measure next.  Every proposal is judged by the full evaluation pipeline;
    a strategy only chooses."""


@hookspec
def register_probes(register: Callable[[type[Probe]], None]) -> None:
    """Register probes: `Probe` classes, each a call of the loaded candidate in the worker that a check reads.

    The built-in probes (`ghost`, `modes`, ...) are registered here too, by `tritongym.plugins.probes.builtin`.  A
    plugin's probe names a function ("package.module:function") the worker calls as `function(model, inputs)`
    after the built-in probes, and may name a trusted half (`Probe.reference`) called with the reference model on
    the same inputs, outside the candidate's process.  A probe runs only while an enabled check lists its name in
    `RuntimeCheck.probes`; each call reaches the checks as one `ProbeCall` in `evidence.probes` (`value` beside
    `reference` for a plugin's), e.g.

        class OutputSum(Probe):
            name = "output-sum"
            target = "mypkg.probes:output_sum"  # def output_sum(model, inputs): return float(model(*inputs).sum())
            reference = "mypkg.probes:output_sum"  # the same function, called with the reference model

        @hookimpl
        def register_probes(register):
            register(OutputSum)"""
