"""Baseline: a KernelBench / KernelGYM-style evaluation harness, the comparison point for tritongym's throughput.

What such a harness pays per candidate, reproduced here, one task after another on one device:

1. a fresh Python process (this file, `--one TASKFILE`) with a fresh, empty TRITON_CACHE_DIR: it imports
   torch, writes the problem and the candidate to files and imports them (the problem's size preset applied
   to its globals, as tritongym does), builds `Model` and `ModelNew` under one seed (and binds matching
   weights, as tritongym does), checks 5 trials of fresh inputs with `torch.allclose(atol=rtol=1e-2)`, and,
   if all match, times `ModelNew` like KernelBench's `time_execution_with_cuda_event`: 3 warm-ups, then 100
   calls each between two CUDA events on the current stream with a synchronize after each, mean in ms;
2. if the candidate is correct, a second fresh process times the reference `Model` the same way, for the
   speedup.  (Incorrect candidates skip it, which only flatters the baseline.)

Statuses: ok, incorrect, compile_error (the candidate does not import), runtime_error (it raised while
building or running), crashed (the process died without a result), timeout (killed after `timeout_s`).
Both systems use tritongym's default precision (no TF32) so their reference timings are comparable.

    python benchmarks/baseline_harness.py [--size gpu] [--device cuda] [--problems 8] [--limit N]
    TRITON_INTERPRET=1 python benchmarks/baseline_harness.py --size cpu --device cpu --limit 4 --trials 3

`run_baseline` is what `eval_throughput.py` calls; `--one` is the per-process entry point.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HARNESS = str(Path(__file__).resolve())
RESULT_TAG = "BASELINE-RESULT "
ATOL = RTOL = 1e-2
CORRECTNESS_TRIALS = 5
WARMUP = 3
TRIALS = 100
TIMEOUT_S = 120.0
SEED = 42


# --- inside a fresh process ----------------------------------------------------------------------------


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip()[:500]}"


def _check_outputs(got: list, want: list, atol: float, rtol: float) -> str | None:
    """None when the outputs match (KernelBench: same shape, then allclose), else why not."""
    import torch

    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, torch.Tensor):
            return f"output {i} is a {type(g).__name__}, not a tensor"
        if g.shape != w.shape:
            return f"output {i} has shape {tuple(g.shape)}, expected {tuple(w.shape)}"
        if not torch.allclose(g.to(w.dtype), w, atol=atol, rtol=rtol):
            err = (g.to(w.dtype) - w).abs().max().item() if w.is_floating_point() else float("nan")
            return f"output {i} differs (max abs error {err:.4g})"
    return None


def run_one(task: dict) -> dict:
    """One process's work: `candidate` mode judges and times ModelNew, `reference` mode times Model."""
    import _common
    import torch

    device = task["device"]
    if torch.device(device).index is not None and torch.device(device).type == "cuda":
        torch.cuda.set_device(torch.device(device))
    _common.set_precision(task["precision"])
    workdir = os.getcwd()
    reference = _common.load_reference(task["problem_source"], task["sizes"], workdir)
    ref_model = _common.build_model(reference, reference.Model, device, task["seed"])
    result: dict = {"device_name": torch.cuda.get_device_name(device) if torch.device(device).type == "cuda" else ""}
    if task["mode"] == "reference":
        inputs = _common.make_inputs(reference, task["seed"], device)
        with torch.no_grad():
            times = _common.time_with_cuda_events(lambda: ref_model(*inputs), device, task["warmup"], task["trials"])
        return {**result, "status": "ok", "runtime_ms": sum(times) / len(times)}

    started = time.perf_counter()
    try:
        candidate = _common.load_module("bench_candidate", task["candidate_source"], workdir)
        if not hasattr(candidate, "ModelNew"):
            raise AttributeError("the candidate defines no class ModelNew")
    except Exception as exc:
        return {**result, "status": "compile_error", "message": _error(exc)}
    try:
        model = _common.build_model(reference, candidate.ModelNew, device, task["seed"])
        _common.bind_weights(ref_model, model)
    except Exception as exc:
        return {**result, "status": "runtime_error", "message": _error(exc)}
    result["load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    for trial in range(task["correctness_trials"]):
        inputs = _common.make_inputs(reference, task["seed"] + 1 + trial, device)
        with torch.no_grad():
            want = _common.outputs_of(ref_model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]))
            try:
                got = _common.outputs_of(model(*inputs))
                _common.synchronize(device)
            except Exception as exc:
                return {**result, "status": "runtime_error", "message": _error(exc)}
        why = _check_outputs(got, want, task["atol"], task["rtol"])
        if why is not None:
            return {**result, "status": "incorrect", "message": f"trial {trial}: {why}"}
    result["correctness_s"] = time.perf_counter() - started
    started = time.perf_counter()
    inputs = _common.make_inputs(reference, task["seed"], device)
    try:
        with torch.no_grad():
            times = _common.time_with_cuda_events(lambda: model(*inputs), device, task["warmup"], task["trials"])
    except Exception as exc:
        return {**result, "status": "runtime_error", "message": f"while timing: {_error(exc)}"}
    result["timing_s"] = time.perf_counter() - started
    return {**result, "status": "ok", "runtime_ms": sum(times) / len(times)}


def child_main(task_file: str) -> None:
    task = json.loads(Path(task_file).read_text())
    result = run_one(task)
    sys.stdout.flush()
    print("\n" + RESULT_TAG + json.dumps(result), flush=True)


# --- the parent ----------------------------------------------------------------------------------------


def _run_process(task: dict, timeout_s: float) -> tuple[dict, float]:
    """Run one task in a fresh process with a fresh Triton cache; (result, wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="baseline-") as tmp:
        task_file = os.path.join(tmp, "task.json")
        Path(task_file).write_text(json.dumps(task))
        env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, "triton-cache"), PYTHONUNBUFFERED="1")
        if task["device"] == "cpu":
            env["TRITON_INTERPRET"] = "1"
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, HARNESS, "--one", task_file],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=tmp,
            env=env,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"status": "timeout", "message": f"killed after {timeout_s:g} s"}, time.perf_counter() - started
        finally:
            try:  # what the task left behind (a compiler, say) dies with its process group
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        wall = time.perf_counter() - started
    text = out.decode("utf-8", "replace")
    for line in reversed(text.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :]), wall
    if proc.returncode < 0:
        why = f"killed by {signal.Signals(-proc.returncode).name}"
    else:
        why = f"exited with code {proc.returncode}"
    tail = " | ".join(text.strip().splitlines()[-3:])[-500:]
    return {"status": "crashed", "message": f"the process {why} without a result: {tail}"}, wall


def run_baseline(
    tasks: list[tuple[str, str]],
    size: str = "gpu",
    device: str = "cuda",
    on_result: Callable[[int, dict], None] | None = None,
    *,
    timeout_s: float = TIMEOUT_S,
    trials: int = TRIALS,
    warmup: int = WARMUP,
    correctness_trials: int = CORRECTNESS_TRIALS,
    budget_s: float | None = None,
) -> list[dict]:
    """Evaluate (problem_name, candidate_source) tasks one after another, each in fresh processes.

    Returns one dict per task run, in order: problem, status, message, runtime_ms, ref_runtime_ms,
    speedup, wall_s (both processes), candidate_s / reference_s (each process's wall time), device_name.
    With `budget_s`, no task starts once that many seconds have passed, so fewer results may come back.
    `on_result(index, result)` is called after each task.
    """
    from tritongym.core.problems import load_problem

    problems: dict = {}
    results = []
    started = time.perf_counter()
    for index, (name, source) in enumerate(tasks):
        if budget_s is not None and time.perf_counter() - started > budget_s:
            break
        if name not in problems:
            problems[name] = load_problem(name, size)
        problem = problems[name]
        task = {
            "mode": "candidate",
            "problem_source": problem.source,
            "sizes": problem.sizes,
            "candidate_source": source,
            "device": device,
            "seed": SEED,
            "precision": "ieee",
            "correctness_trials": correctness_trials,
            "warmup": warmup,
            "trials": trials,
            "atol": ATOL,
            "rtol": RTOL,
        }
        outcome, cand_s = _run_process(task, timeout_s)
        result = {
            "problem": name,
            "status": outcome["status"],
            "message": outcome.get("message", ""),
            "runtime_ms": outcome.get("runtime_ms"),
            "ref_runtime_ms": None,
            "speedup": None,
            "candidate_s": cand_s,
            "reference_s": 0.0,
            "device_name": outcome.get("device_name", ""),
            "phases": {k: outcome[k] for k in ("load_s", "correctness_s", "timing_s") if k in outcome},
        }
        if outcome["status"] == "ok":
            ref, ref_s = _run_process({**task, "mode": "reference", "candidate_source": None}, timeout_s)
            result["reference_s"] = ref_s
            if ref["status"] == "ok":
                result["ref_runtime_ms"] = ref["runtime_ms"]
                if result["runtime_ms"]:
                    result["speedup"] = ref["runtime_ms"] / result["runtime_ms"]
            else:
                result["message"] = f"reference timing failed: {ref.get('message', ref['status'])}"
        result["wall_s"] = result["candidate_s"] + result["reference_s"]
        results.append(result)
        if on_result:
            on_result(index, result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", metavar="TASKFILE", help=argparse.SUPPRESS)
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (smoke test, TRITON_INTERPRET=1)")
    parser.add_argument("--problems", type=int, default=8, help="how many problems of the candidate set")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N candidates (mixed)")
    parser.add_argument("--trials", type=int, default=TRIALS, help="timed calls per measurement")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per process")
    args = parser.parse_args()
    if args.one:
        child_main(args.one)
        return

    from _common import fmt, print_table
    from candidate_set import build_candidate_set, interleaved

    cands = interleaved(build_candidate_set(args.size, args.problems))[: args.limit]

    def progress(i: int, r: dict) -> None:
        print(f"[{i + 1}/{len(cands)}] {cands[i][0]}/{cands[i][1]}: {r['status']} ({r['wall_s']:.1f} s)", flush=True)

    started = time.perf_counter()
    results = run_baseline(
        [(p, s) for p, _, s in cands],
        args.size,
        args.device,
        progress,
        timeout_s=args.timeout,
        trials=args.trials,
    )
    wall = time.perf_counter() - started
    rows = [
        [
            f"{c[0]}/{c[1]}",
            r["status"],
            fmt(r["runtime_ms"]),
            fmt(r["ref_runtime_ms"]),
            fmt(r["speedup"]),
            fmt(r["wall_s"]),
            r["message"][-60:],
        ]
        for c, r in zip(cands, results)
    ]
    print_table("baseline harness", ["candidate", "status", "ms", "ref ms", "speedup", "wall s", "message"], rows)
    print(f"{len(results)} candidates in {wall:.1f} s: {len(results) / wall * 60:.1f} candidates/min")


if __name__ == "__main__":
    main()
