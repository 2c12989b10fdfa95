"""Registered probes (`interfaces.Probe`, ARCHITECTURE.md §4): third-party calls of the candidate, run in the worker.

The built-in probes (`probes.py`) stay hard-wired; these are the ones a check plugin adds.  The parent sends
each enabled check's probes as name -> "package.module:function" (`WorkerTask.probes`).  In the candidate's
process the targets are imported *before* the candidate (`load_functions`: a candidate file cannot shadow a
probe's module, and an import failure is the plugin's, recorded as that probe's error), then called after the
built-in probes (`run_plugin_probes`), each on a fresh clone of the first trial's inputs, under the launch
recorder's phase ("probe", name).  Values cross as JSON text, so the report stays plain for
`torch.load(weights_only=True)`; the trusted side parses and bounds them again (`probe_results`), since
the candidate's process may have replaced `json` itself.
"""

from __future__ import annotations

import importlib
import json

from tritongym.core.models import PROBE_JSON_LIMIT, LaunchRecord, ProbeResult


def load_functions(targets: dict[str, str]) -> dict[str, object]:
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
                f"could not import probe target '{target}' in the worker ({type(exc).__name__}: {str(exc)[:300]}); "
                "is its package on the parent's PYTHONPATH?"
            )
    return found


def run_plugin_probes(model, recorder, functions: dict[str, object], inputs: list) -> dict[str, dict]:
    """Call each probe function as `function(model, clone of inputs)`; name -> {"json", "error", "launches"}."""
    from tritongym.core.measure.tensors import clone_all

    was_training = model.training
    results: dict[str, dict] = {}
    for name, function in functions.items():
        text, error = "null", ""
        if isinstance(function, str):
            error = function
        else:
            recorder.phase = ("probe", name)
            try:
                value = function(model, clone_all(inputs))
                text = json.dumps(value, allow_nan=False)
                size = len(text.encode())
                if size > PROBE_JSON_LIMIT:
                    text, error = "null", f"its value takes {size} bytes of JSON; at most {PROBE_JSON_LIMIT}"
            except Exception as exc:  # noqa: BLE001 - a probe that raises is evidence, not a crash
                text, error = "null", f"{type(exc).__name__}: {str(exc)[:300]}"
            finally:
                recorder.phase = None
                model.train(was_training)
        launches = [rec.model_dump() for rec in recorder.records(("probe", name))]
        results[name] = {"json": text, "error": error, "launches": launches}
    return results


def probe_results(raw: object, wanted: dict[str, str]) -> dict[str, ProbeResult]:
    """Trusted side: the report's probe answers as `ProbeResult`s, only for probes the task asked for.

    A probe the report lacks is absent (the candidate stopped before the probes); one whose entry is not what
    `run_plugin_probes` writes gets an error naming that, never an exception here."""
    results: dict[str, ProbeResult] = {}
    if not isinstance(raw, dict):
        return results
    for name in wanted:
        entry = raw.get(name)
        if entry is None:
            continue
        try:
            text, error = entry["json"], entry["error"]
            if not isinstance(text, str) or not isinstance(error, str):
                raise TypeError("its value or error is not text")
            if len(text.encode()) > PROBE_JSON_LIMIT:
                raise ValueError(f"its value takes {len(text.encode())} bytes of JSON; at most {PROBE_JSON_LIMIT}")
            results[name] = ProbeResult(
                value=json.loads(text),
                error=error[:1000],
                launches=[LaunchRecord.model_validate(x) for x in entry["launches"]],
            )
        except Exception as exc:  # noqa: BLE001 - whatever the candidate's process sent, it gets no further
            results[name] = ProbeResult(error=f"the worker sent a malformed answer ({type(exc).__name__}: {exc})")
    return results
