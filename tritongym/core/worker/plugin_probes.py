"""Plugin probes (`interfaces.Probe` without `builtin`, ARCHITECTURE.md §4): a check plugin's own calls of the
candidate in the worker (the built-in ones are `probes.py`'s), and their trusted halves.

In the candidate's process the targets of the task's probes (`WorkerTask.probes`) are imported *before* the
candidate (`load_functions`: a candidate file cannot shadow a probe's module; an import failure is the plugin's,
recorded as that probe's error), then called after the built-in probes (`run_plugin_probes`), each on a fresh clone
of trial 0's inputs or of its own (`fresh_inputs`), under the launch recorder's phase ("probe", name), the
candidate's own kernels skipped where the spec says so.  Values cross as JSON text, so the report stays plain for
`torch.load(weights_only=True)`; the trusted side parses and bounds them again (`probe_calls`), since the
candidate's process may have replaced `json` itself.  A probe's `reference` half runs only on the trusted side
(`reference_answers`: the CPU worker's parent once the candidate's process has exited, or the GPU's keeper), with
the reference model on the same inputs; its answer goes into the `ProbeCall` beside the candidate's.
"""

from __future__ import annotations

import importlib
import json

from tritongym.core.models import PROBE_JSON_LIMIT, ProbeCall
from tritongym.core.worker_task import ProbeSpec


def plugin_specs(specs: dict[str, ProbeSpec]) -> dict[str, ProbeSpec]:
    """The task's probes that are not built in, in the order the task names them."""
    return {name: spec for name, spec in specs.items() if not spec.builtin}


def load_functions(targets: dict[str, str], what: str = "target", where: str = "the worker") -> dict[str, object]:
    """Name -> the callable its target names, or -> a str saying why it could not be imported."""
    found: dict[str, object] = {}
    for name, target in targets.items():
        module_name, _, attribute = target.partition(":")
        try:
            function = getattr(importlib.import_module(module_name), attribute)
            if not callable(function):
                raise TypeError(f"{attribute} is a {type(function).__name__}, not a function")
            found[name] = function
        except BaseException as exc:  # noqa: BLE001 - a plugin's import can raise anything (SystemExit too), and
            # this runs before run_candidate's own handlers: it is that probe's error, never the worker's crash
            found[name] = (
                f"could not import probe {what} '{target}' in {where} ({type(exc).__name__}: {str(exc)[:300]}); "
                "is its package on the parent's PYTHONPATH?"
            )
    return found


def probe_inputs(source, name: str, spec: ProbeSpec) -> tuple[int, list]:
    """(the trial whose inputs these are, -1 for the probe's own; a fresh set) for one plugin probe's call."""
    if spec.fresh_inputs and name in source.fresh:
        return -1, source.fresh[name]()
    return 0, source.trial(0)


def _answer(function, model, inputs: list) -> dict:
    """`function(model, inputs)` as {"json": its value as JSON text, "error": why there is none}."""
    text, error = "null", ""
    if isinstance(function, str):
        return {"json": text, "error": function}
    try:
        value = function(model, inputs)
        text = json.dumps(value, allow_nan=False)
        size = len(text.encode())
        if size > PROBE_JSON_LIMIT:
            text, error = "null", f"its value takes {size} bytes of JSON; at most {PROBE_JSON_LIMIT}"
    except Exception as exc:  # noqa: BLE001 - a probe that raises is evidence, not a crash
        text, error = "null", f"{type(exc).__name__}: {str(exc)[:300]}"
    return {"json": text, "error": error}


def run_plugin_probes(model, recorder, functions: dict[str, object], source, specs: dict[str, ProbeSpec]) -> dict:
    """Candidate side: each probe function called as `function(model, inputs)`; name -> {"json", "error",
    "launches", "trial"}.  With `skip_own_kernels` the recorder skips the candidate's own launches meanwhile."""
    was_training = model.training
    results: dict[str, dict] = {}
    for name, function in functions.items():
        spec = specs[name]
        trial, inputs = probe_inputs(source, name, spec)
        recorder.phase, recorder.ghost = ("probe", name), spec.skip_own_kernels
        try:
            answer = _answer(function, model, inputs)
        finally:
            recorder.phase, recorder.ghost = None, False
            model.train(was_training)
        del inputs
        launches = [rec.model_dump() for rec in recorder.records(("probe", name))]
        results[name] = {**answer, "launches": launches, "trial": trial}
    return results


def reference_answers(ref_model, source, specs: dict[str, ProbeSpec], built=None) -> dict[str, dict]:
    """Trusted side: each probe's `reference` half called as `function(ref_model, inputs)` on the inputs its
    candidate-side call got (made again from the same seed, or cloned from the same held set); name -> {"json",
    "error"}.  The reference model starts from its buffers as built (`probes.restore_buffers`) in its own mode."""
    from tritongym.core.worker.probes import restore_buffers

    wanted = {name: spec.reference for name, spec in plugin_specs(specs).items() if spec.reference}
    answers: dict[str, dict] = {}
    was_training = ref_model.training
    for name, function in load_functions(wanted, "reference", "the trusted process").items():
        restore_buffers(ref_model, built)
        try:
            answers[name] = _answer(function, ref_model, probe_inputs(source, name, specs[name])[1])
        finally:
            ref_model.train(was_training)
    return answers


def probe_calls(raw: object, specs: dict[str, ProbeSpec], answers: dict[str, dict] | None = None) -> list[ProbeCall]:
    """Trusted side: the report's plugin-probe answers as `ProbeCall`s (`ProbeCall.from_worker`: parsed and bounded
    again), only for the task's plugin probes, each beside its trusted half's answer (`reference_answers`).  A probe
    the report lacks is absent: the candidate stopped before the probes."""
    raw, answers = raw if isinstance(raw, dict) else {}, answers or {}
    return [ProbeCall.from_worker(name, raw[name], answers.get(name)) for name in plugin_specs(specs) if name in raw]
