"""KernelBench sweep: every problem's reference through the screen and the reference timing, one GPU.

Issue 27 item 5.  For each KernelBench problem (levels 1 and 2 by default, read from
`../shared/kernelbench`, never copied into the project) one candidate is evaluated: the reference itself
as `ModelNew` (`Model` renamed).  The evaluation is a real one (`Evaluator.evaluate`, a fresh temporary
registry, cache off): the negative-control screen, the keeper's reference outputs, gold and probes, every
correctness trial and shape set, and the paired timing at the problem's full size.  Only the checks that
refuse a forward without Triton are off (`TORCH_ONLY_REFUSED`: `structure` wants an @triton.jit function,
`launches` a launch of one, `ghost` a kernel to replace with a no-op), so a verdict other than `ok` says
something about the problem or the pipeline, not about the missing Triton.

Per problem: the status, the screen verdict (ok, degenerate and its passing controls, or the screen's
error), the reference's peak GPU memory (`reference_peak_mb`, measured in the keeper; `host MB` in the table: its
outputs parked in host memory, `memory_mb.reference_host_mb`), its time
(`ref_runtime_ms`), the wall seconds, the message when not ok, one forward's inputs, parameters and outputs
weighed on torch's meta device (`forward_mb`, and `forward_fits_gpu`: whether that much fits the GPU at
all), and `infrastructure_failure`: a timeout, a crash, out-of-memory text, or a backend error, as against
the problem's own error (its reference raising).  Statuses besides the Evaluator's: `problem_error` (the
reference failed in the keeper), `screen_failed` (the screen failed for time or memory: the problem ends
there unless `--evaluate-after-screen-failure`), `backend_error`, `sweep_limit` (past the sweep's own
`--problem-limit-s`: the workers are restarted and the sweep goes on), `sweep_error` (a bug).
Prints a line per problem as it finishes and the table at the end; the JSON (default
benchmarks/results/kernelbench_sweep.json) is rewritten after every problem, so a killed run keeps what it did.

A device call lasts at most 10 minutes, so a sweep is split over calls, either statically with
`--shard K/N` (every N-th problem from the K-th) or by time: `--budget-s S` starts no problem after S
seconds and `--resume JSON` skips the problems a previous run's JSON holds (`--retry-infrastructure`: but
those that failed for the machinery; `--retry-status hacked`: those with that status) and carries its rows
and wall time forward.  `--merge A.json B.json ...`
joins shard files into one (rows, and the wall time of every run once).  `--jobs N` evaluates N problems at
once (per-problem seconds then overlap; the total wall time is what counts), and `--order mixed` then
puts a small problem after each large one.

    python benchmarks/kernelbench_sweep.py --levels 1 2 --shard 1/8 --out $OUT/sweep-1.json
    python benchmarks/kernelbench_sweep.py --budget-s 300 --problem-limit-s 240 --out $OUT/sweep.json \\
        [--resume sweep.json]
    python benchmarks/kernelbench_sweep.py --merge sweep-*.json --out benchmarks/results/kernelbench_sweep.json
    # on the CPU, tiny problems only (full-size KernelBench is far too big for the interpreter):
    python benchmarks/kernelbench_sweep.py --backend triton-cpu --kernelbench DIR_WITH_level1 --levels 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path

from _common import fmt, print_table

from tritongym.core.config import EvalConfig
from tritongym.core.errors import BackendUnavailable, PluginError, ProblemFormatError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.eval.screen import ScreenResult, cached_screens
from tritongym.core.models import Problem, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import parse_problem
from tritongym.core.registry import Registry

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "kernelbench_sweep.json"

TORCH_ONLY_REFUSED = ("structure", "launches", "ghost")
"""The checks that refuse a forward without Triton whatever it computes: off for the reference as candidate."""

STOP_GRACE_S = 30.0
"""How long a problem stopped at `--problem-limit-s` is given to unwind before the next one starts."""

INFRASTRUCTURE_STATUSES = {Status.timeout, Status.crashed}
INFRASTRUCTURE_HINTS = (
    "out of memory",
    "OutOfMemory",
    "MemoryError",
    "MemoryLimit",
    "can't allocate memory",
    "Timeout",
    "WorkerCrashed",
    "KeeperCrashed",
    "did not finish",
    "within its time budget",
)
"""Words in an error that say the machinery failed (time, memory, a dead process), not the problem's code."""


def default_kernelbench() -> Path:
    """`../shared/kernelbench` beside the repository (a checkout here), else `shared/kernelbench` inside it
    (where the device machine has its copy)."""
    beside = ROOT.parent / "shared" / "kernelbench"
    return beside if beside.is_dir() else ROOT / "shared" / "kernelbench"


def _number(path: Path) -> int:
    head = path.stem.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**9


def problem_files(kernelbench: Path, levels: list[int]) -> list[tuple[int, Path]]:
    """(level, file) in KernelBench order: by level, then by the problem's number."""
    found = []
    for level in levels:
        directory = kernelbench / f"level{level}"
        if not directory.is_dir():
            raise SystemExit(f"no {directory}: pass --kernelbench DIR, the directory that holds level1/, level2/, ...")
        files = sorted(
            (p for p in directory.glob("*.py") if not p.name.startswith("_")), key=lambda p: (_number(p), p.name)
        )
        found += [(level, p) for p in files]
    return found


def as_candidate(source: str) -> str:
    """The reference as a candidate: every `Model` (the class, `super(Model, self)`, any other use) renamed
    `ModelNew`; `get_inputs` and the rest stay, unused."""
    return re.sub(r"\bModel\b", "ModelNew", source)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise argparse.ArgumentTypeError(f"--shard takes K/N with 1 <= K <= N, e.g. 2/8 (got {text!r})")
    return int(match[1]), int(match[2])


def select(files: list[tuple[int, Path]], only: list[str], shard: tuple[int, int] | None, limit: int | None):
    chosen = [(lv, p) for lv, p in files if not only or any(s in f"level{lv}/{p.stem}" for s in only)]
    if shard is not None:
        k, n = shard
        chosen = chosen[k - 1 :: n]  # every N-th: heavy and light problems spread over the shards
    return chosen[:limit] if limit is not None else chosen


def is_infrastructure(text: str | None) -> bool:
    return bool(text) and any(h in text for h in INFRASTRUCTURE_HINTS)


def screen_fields(screen: ScreenResult | None, seconds: float) -> dict:
    if screen is None:
        return {"verdict": None, "passing_controls": [], "error": None, "seconds": round(seconds, 3)}
    verdict = "error" if screen.error else ("degenerate" if screen.degenerate else "ok")
    return {
        "verdict": verdict,
        "passing_controls": screen.passing_controls,
        "breaking_inputs": screen.breaking_inputs,
        "error": screen.error,
        "seconds": round(seconds, 3),
    }


def gpu_total_mb() -> float | None:
    """The first visible GPU's memory, from nvidia-smi (no CUDA context in this process); None without one."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    index = int(visible) if visible.isdigit() else 0
    return float(out[index]) if len(out) > index and out[index].replace(".", "").isdigit() else None


def footprint(problem: Problem, path: Path, level: int, gpu_mb: float | None) -> dict:
    """What one forward of the reference holds at its full size, on torch's meta device (no memory, no GPU,
    nothing computed; `tritongym.core.footprint`, what the pool reserves from): its inputs, parameters
    and outputs, in MiB.  Intermediates are not counted, so `forward_fits_gpu` false says the reference cannot
    run on the GPU at all; true says it might.  Level 3's outputs are not weighed: its recurrent models take up
    to a minute through the meta device.  Runs the problem's file in this process (KernelBench's own code,
    trusted as the reference is)."""
    import importlib.util
    import warnings

    import torch

    from tritongym.core.footprint import forward_bytes, weigh

    name = "kernelbench_sweep_" + re.sub(r"\W", "_", problem.name)
    try:
        with warnings.catch_warnings(), torch.device("meta"):
            warnings.simplefilter("ignore")
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        vars(module).update(problem.sizes)
        weighed = weigh(module, outputs=level < 3)
    except Exception as exc:  # noqa: BLE001 - a file that does not load on the meta device
        weighed = {"inputs": None, "params": None, "outputs": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
    found: dict = {
        f"{k}_mb": None if weighed[k] is None else round(weighed[k] / 2**20, 2) for k in ("inputs", "params", "outputs")
    }
    if weighed["error"]:
        found["footprint_error"] = weighed["error"]
    total = forward_bytes(weighed)
    found["forward_mb"] = None if total is None else round(total / 2**20, 2)
    fits = None if gpu_mb is None or found["forward_mb"] is None else found["forward_mb"] <= gpu_mb
    found["forward_fits_gpu"] = fits
    return found


def mixed_order(todo: list[tuple[int, Path]], size: str) -> list[tuple[int, Path]]:
    """The problems largest forward first, each followed by the smallest left: with `--jobs N` a large problem
    (which waits for GPU and host memory held by another large one) runs beside small ones that fit beside it,
    instead of beside the other large ones its neighbours in name order are (level 1's 19-39 each need most
    of an H100 and half its host).  Weighed on the meta device (`footprint`); one that cannot be weighed goes
    with the small ones."""

    def weight(item: tuple[int, Path]) -> float:
        level, path = item
        try:
            problem = parse_problem(path.read_text(), f"level{level}/{path.stem}", str(path), size)
        except ProblemFormatError:
            return 0.0
        return footprint(problem, path, level, None).get("forward_mb") or 0.0

    ranked = sorted(todo, key=weight, reverse=True)
    mixed = []
    while ranked:
        mixed.append(ranked.pop(0))
        if ranked:
            mixed.append(ranked.pop())
    return mixed


def empty_row(level: int, path: Path) -> dict:
    """A row with every field, before anything is known."""
    return {
        "name": f"level{level}/{path.stem}",
        "level": level,
        "file": path.name,
        "status": None,
        "screen": screen_fields(None, 0.0),
        "reference_peak_mb": None,
        "ref_runtime_ms": None,
        "runtime_ms": None,
        "reference_s": None,
        "failed_checks": [],
        "phases": {},
        "memory_mb": {},
        "error_kind": None,
        "inputs_mb": None,
        "params_mb": None,
        "outputs_mb": None,
        "forward_mb": None,
        "forward_fits_gpu": None,
        "footprint_error": None,
        "seconds": 0.0,
        "infrastructure_failure": False,
        "message": None,
    }


def sweep_one(
    evaluator: Evaluator,
    level: int,
    path: Path,
    size: str,
    after_screen_failure: bool = False,
    gpu_mb: float | None = None,
) -> dict:
    """One problem's row: its screen, then the reference as candidate through a full evaluation.

    A screen that failed for the machinery's reason (a timeout, memory, a dead worker) ends the problem
    there unless `after_screen_failure`: the evaluation would run the same screen again first (a failed
    screen is never held) and most likely fail the same way, at the same cost."""
    row = empty_row(level, path)
    began = time.perf_counter()
    try:
        problem: Problem = parse_problem(path.read_text(), row["name"], str(path), size)
    except ProblemFormatError as exc:
        row.update(status="problem_error", message=str(exc), seconds=round(time.perf_counter() - began, 3))
        return row
    row.update(footprint(problem, path, level, gpu_mb))
    began = time.perf_counter()  # the footprint is not the evaluation's time
    screen, screen_s, result = None, None, None
    try:
        # the screen an evaluation computes first (`Evaluator._screens`), asked for here so its verdict and its
        # cost are seen: the evaluation below finds it held and does not run it again
        screen = cached_screens(
            [problem],
            evaluator.backend,
            evaluator.device,
            evaluator.device_class,
            evaluator.limits,
            evaluator.tolerances,
            evaluator.registry,
        ).get(problem.key)
        screen_s = time.perf_counter() - began
        if screen is not None and is_infrastructure(screen.error) and not after_screen_failure:
            status, message, infrastructure = "screen_failed", screen.error, True
        else:
            result = evaluator.evaluate(as_candidate(problem.source), problem)
            status, message = result.status.value, result.message
            infrastructure = result.status in INFRASTRUCTURE_STATUSES or is_infrastructure(
                result.error.message if result.error else None
            )
    except (BackendUnavailable, PluginError) as exc:
        status, message, infrastructure = "backend_error", f"{type(exc).__name__}: {exc}", True
    except ProblemFormatError as exc:  # the reference failed in the keeper: the problem's error, or memory/time
        status, message = "problem_error", str(exc)
        infrastructure = is_infrastructure(message)
        row["phases"] = {k: round(v, 4) for k, v in exc.phases.items()}
        row["memory_mb"] = dict(exc.memory_mb)
    except Exception as exc:  # a bug in the pipeline is infrastructure too: the problem deserved a verdict
        status, message = "sweep_error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        infrastructure = True
    row["screen"] = screen_fields(screen, screen_s if screen_s is not None else time.perf_counter() - began)
    if result is not None:
        row.update(
            reference_peak_mb=result.memory_mb.get("reference_peak_mb"),
            ref_runtime_ms=result.ref_runtime_ms,
            runtime_ms=result.runtime_ms,
            reference_s=result.phases.get("reference"),
            failed_checks=[c.name for c in result.checks if not c.passed],
            phases={k: round(v, 4) for k, v in result.phases.items()},
            memory_mb=dict(result.memory_mb),
            error_kind=result.error.kind if result.error else None,
        )
    row.update(
        status=status,
        seconds=round(time.perf_counter() - began, 3),
        infrastructure_failure=bool(infrastructure or (screen is not None and is_infrastructure(screen.error))),
        message=None if status == "ok" else message,
    )
    return row


def past_limit(level: int, path: Path, limit_s: float) -> dict:
    """The row of a problem the sweep itself gave up on: no verdict from the pipeline within `limit_s`."""
    row = empty_row(level, path)
    row.update(
        status="sweep_limit",
        seconds=round(limit_s, 3),
        infrastructure_failure=True,
        message=f"no verdict within the sweep's own limit of {limit_s:g} s (--problem-limit-s); the evaluator's "
        "workers and keeper were stopped so the next problem starts on fresh ones",
    )
    return row


def build_evaluator(args, registry: Registry) -> Evaluator:
    options: dict = {}
    if args.workers_per_gpu is not None:
        options["workers_per_gpu"] = args.workers_per_gpu
    config = EvalConfig(
        backend=args.backend,
        backend_options=options,
        size=args.size,
        timeout_s=args.timeout_s,
        use_cache=False,
        skip_checks=list(TORCH_ONLY_REFUSED),
        workers=args.jobs,
    )
    return Evaluator(config, registry=registry, host=PluginHost(load_entry_points=False))


def summary_of(rows: list[dict], wall_s: float) -> dict:
    return {
        "problems": len(rows),
        "statuses": dict(Counter(r["status"] for r in rows)),
        "screens": dict(Counter((r.get("screen") or {}).get("verdict") for r in rows)),
        "infrastructure_failures": [r["name"] for r in rows if r.get("infrastructure_failure")],
        "not_ok": [r["name"] for r in rows if r["status"] != "ok"],
        "problem_seconds": round(sum(r.get("seconds") or 0.0 for r in rows), 1),
        "wall_s": round(wall_s, 1),
        "wall_minutes": round(wall_s / 60, 2),
    }


def write_json(path: Path, report: dict) -> None:
    """Atomically (a killed run leaves the previous complete file, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    os.replace(tmp, path)


def host_mb(row: dict) -> float | None:
    """The reference's outputs parked in host memory (MiB): in `memory_mb`, or in `phases` for a row written before
    sizes had their own home (a resumed sweep keeps its earlier rows)."""
    return (row.get("memory_mb") or {}).get("reference_host_mb", (row.get("phases") or {}).get("reference_host_mb"))


def print_rows(rows: list[dict], title: str) -> None:
    headers = ["problem", "status", "screen", "fwd MB", "peak MB", "host MB", "ref ms", "ref side s", "wall s"]
    headers += ["infra", "message"]
    table = []
    for r in rows:
        screen = r.get("screen") or {}
        verdict = screen.get("verdict") or "-"
        if verdict == "degenerate":
            verdict += "(" + ",".join(screen.get("passing_controls") or []) + ")"
        table.append(
            [
                r["name"],
                r["status"],
                verdict,
                fmt(r.get("forward_mb")),
                fmt(r.get("reference_peak_mb")),
                fmt(host_mb(r)),
                fmt(r.get("ref_runtime_ms")),
                fmt(r.get("reference_s")),
                fmt(r.get("seconds")),
                "YES" if r.get("infrastructure_failure") else "",
                (r.get("message") or "")[:70],
            ]
        )
    print_table(title, headers, table)


def progress_line(done: int, total: int, row: dict, elapsed: float) -> str:
    screen = row.get("screen") or {}
    verdict = screen.get("verdict") or "-"
    if verdict == "degenerate":
        verdict += "(" + ",".join(screen.get("passing_controls") or []) + ")"
    parts = [
        f"[{done}/{total} {elapsed:.0f}s]",
        row["name"],
        row["status"],
        f"screen={verdict}",
        f"fwd={fmt(row.get('forward_mb'))}MB",
        f"peak={fmt(row.get('reference_peak_mb'))}MB",
        f"host={fmt(host_mb(row))}MB",
        f"ref={fmt(row.get('ref_runtime_ms'))}ms",
        f"{row.get('seconds', 0):.1f}s",
    ]
    if row.get("infrastructure_failure"):
        parts.append("INFRASTRUCTURE")
    if row.get("message"):
        parts.append("| " + row["message"].splitlines()[0][:160])
    return " ".join(parts)


def names(files: list[tuple[int, Path]]) -> list[str]:
    return [f"level{lv}/{p.stem}" for lv, p in files]


def row_order(row: dict) -> tuple:
    return (row["level"], _number(Path(row["file"])), row["file"])


def merge(paths: list[Path], out: Path) -> dict:
    """Shard files joined: rows by name (a later file's row wins), the runs and their wall time summed."""
    rows: dict[str, dict] = {}
    runs: list[dict] = []
    first: dict = {}
    for path in paths:
        report = json.loads(path.read_text())
        first = first or report
        runs += report.get("runs", [])
        for row in report.get("rows", []):
            rows[row["name"]] = row
    ordered = sorted(rows.values(), key=row_order)
    runs = list({json.dumps(r, sort_keys=True): r for r in runs}.values())  # a resumed file repeats its runs
    wall_s = sum(r.get("wall_s") or 0.0 for r in runs)
    report = {**first, "rows": ordered, "runs": runs, "merged_from": [str(p) for p in paths]}
    report["summary"] = summary_of(ordered, wall_s)
    write_json(out, report)
    return report


def run(args) -> dict:
    started = time.perf_counter()
    kernelbench = Path(args.kernelbench) if args.kernelbench else default_kernelbench()
    files = select(problem_files(kernelbench, args.levels), args.only, args.shard, args.limit)
    previous: dict = {}
    if args.resume:
        previous = json.loads(Path(args.resume).read_text())
    kept = [
        r
        for r in previous.get("rows", [])
        if not (args.retry_infrastructure and r.get("infrastructure_failure"))
        and r.get("status") not in args.retry_status
    ]
    done_names = {r["name"] for r in kept}
    todo = [(lv, p) for lv, p in files if f"level{lv}/{p.stem}" not in done_names]
    rows: list[dict] = kept
    runs: list[dict] = list(previous.get("runs", []))
    resumed = f", {len(files) - len(todo)} of them already in {args.resume}" if args.resume else ""
    shard = f", shard {args.shard[0]}/{args.shard[1]}" if args.shard else ""
    print(
        f"{len(files)} problems selected from {kernelbench} (levels {args.levels}{shard}){resumed}; {len(todo)} to run",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="kernelbench-sweep-") as tmp:
        db = Path(args.registry) if args.registry else Path(tmp) / "registry.db"
        registry = Registry(db)
        evaluator = build_evaluator(args, registry)
        gpu_mb = gpu_total_mb() if evaluator.backend.device_type == "cuda" else None
        setup_s = time.perf_counter() - started
        this_run = {
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "argv": args.argv,
            "shard": args.shard,
            "setup_s": round(setup_s, 2),
            "problems": 0,
            "wall_s": 0.0,
            "stopped_by_budget": False,
        }
        runs.append(this_run)
        report = {
            "benchmark": "kernelbench_sweep",
            "kernelbench": str(kernelbench),
            "levels": args.levels,
            "backend": evaluator.backend_name,
            "device": evaluator.device,
            "device_class": evaluator.device_class,
            "gpu_total_mb": gpu_mb,
            "host": platform.node(),
            "config": evaluator.config.model_dump(mode="json"),
            "skipped_checks": list(TORCH_ONLY_REFUSED),
            "runs": runs,
            "rows": rows,
        }
        print(
            f"{evaluator.backend_name} on {evaluator.device} ({evaluator.device_class}), setup {setup_s:.1f} s",
            flush=True,
        )
        lock = threading.Lock()
        pending: queue.Queue = queue.Queue()
        for item in mixed_order(todo, evaluator.size) if args.order == "mixed" else todo:
            pending.put(item)

        def finish(row: dict) -> None:
            with lock:
                rows.append(row)
                rows.sort(key=row_order)
                report["left"] = [n for n in names(todo) if n not in {r["name"] for r in rows}]
                this_run["problems"] += 1
                this_run["wall_s"] = round(time.perf_counter() - started, 2)
                report["summary"] = summary_of(rows, sum(r["wall_s"] for r in runs))
                write_json(args.out, report)
                print(progress_line(this_run["problems"], len(todo), row, time.perf_counter() - started), flush=True)

        def lane(view: Evaluator) -> None:
            while True:
                if args.budget_s is not None and time.perf_counter() - started > args.budget_s:
                    return
                try:
                    level, path = pending.get_nowait()
                except queue.Empty:
                    return
                if args.problem_limit_s is None:
                    finish(sweep_one(view, level, path, evaluator.size, args.evaluate_after_screen_failure, gpu_mb))
                else:
                    finish(within_limit(view, level, path))

        def within_limit(view: Evaluator, level: int, path: Path) -> dict:
            """`sweep_one` with the sweep's own deadline: past it, the evaluator's workers and keeper are stopped
            (the evaluation then fails, and its row is dropped) and the next problem gets fresh ones."""
            box: dict = {}

            def work() -> None:
                box["row"] = sweep_one(view, level, path, evaluator.size, args.evaluate_after_screen_failure, gpu_mb)

            thread = threading.Thread(target=work, daemon=True)
            thread.start()
            thread.join(args.problem_limit_s)
            if "row" in box:
                return box["row"]
            evaluator.close()
            thread.join(STOP_GRACE_S)
            return past_limit(level, path, args.problem_limit_s)

        try:
            if args.jobs == 1:
                lane(evaluator)
            else:  # each lane its own registry connection (`Evaluator.with_registry`), the workers shared
                views = [evaluator.with_registry(Registry(db)) for _ in range(args.jobs)]
                threads = [threading.Thread(target=lane, args=(v,), daemon=True) for v in views]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        finally:
            evaluator.close()
            registry.close()
        this_run["wall_s"] = round(time.perf_counter() - started, 2)
        report["summary"] = summary_of(rows, sum(r["wall_s"] for r in runs))
        left = [n for n in names(todo) if n not in {r["name"] for r in rows}]
        report["left"] = left
        this_run["stopped_by_budget"] = bool(left)
        write_json(args.out, report)
    return report


def report_end(report: dict, out: Path) -> None:
    rows = report["rows"]
    print_rows(rows, f"KernelBench sweep: {report.get('backend')} on {report.get('device_class')}")
    s = report["summary"]
    print(
        f"{s['problems']} problems: {s['statuses']}; screens {s['screens']}; "
        f"{len(s['infrastructure_failures'])} infrastructure failures"
        + (f" ({', '.join(s['infrastructure_failures'])})" if s["infrastructure_failures"] else "")
        + f"; total wall {s['wall_minutes']} min over {len(report.get('runs', []))} run(s)",
        flush=True,
    )
    if report.get("left"):
        print(f"{len(report['left'])} problems not run (budget): continue with --resume {out}", flush=True)
    print(f"wrote {out}", flush=True)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", default=None, help="the directory holding level1/, level2/, level3/")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2], help="KernelBench levels (1 2 3)")
    parser.add_argument("--only", action="append", default=[], help="problems whose level/name holds this text")
    parser.add_argument("--limit", type=int, default=None, help="the first N selected problems")
    parser.add_argument(
        "--shard", type=parse_shard, default=None, help="K/N: every N-th selected problem from the K-th"
    )
    parser.add_argument("--resume", default=None, help="a previous run's JSON: skip its problems, keep its rows")
    parser.add_argument(
        "--retry-infrastructure",
        action="store_true",
        help="with --resume: run again the problems whose row there is an infrastructure failure",
    )
    parser.add_argument(
        "--retry-status",
        action="append",
        default=[],
        help="with --resume: run again the problems whose row there has this status (hacked, for example)",
    )
    parser.add_argument("--budget-s", type=float, default=None, help="start no problem after this many seconds")
    parser.add_argument("--backend", default="triton-cuda", help="triton-cuda (default), or triton-cpu for tests")
    parser.add_argument(
        "--size", default="auto", choices=["auto", "cpu", "gpu"], help="size preset (auto: the backend's)"
    )
    parser.add_argument("--timeout-s", type=float, default=120.0, help="EvalConfig.timeout_s: the time limit's floor")
    parser.add_argument("--workers-per-gpu", type=int, default=None, help="backend option (default: the backend's)")
    parser.add_argument("--jobs", type=int, default=1, help="problems evaluated at once (1: per-problem times clean)")
    parser.add_argument(
        "--order",
        choices=["name", "mixed"],
        default="name",
        help="name: level and number; mixed: largest forward first, each followed by the smallest left (with "
        "--jobs N, large problems run beside small ones rather than beside each other)",
    )
    parser.add_argument(
        "--problem-limit-s",
        type=float,
        default=None,
        help="the sweep's own deadline per problem (off by default): past it the problem is recorded as "
        "sweep_limit and the workers are restarted, so one stuck problem cannot eat a device call (--jobs 1 only)",
    )
    parser.add_argument(
        "--evaluate-after-screen-failure",
        action="store_true",
        help="evaluate even when the screen failed for time or memory (by default the problem ends there: the "
        "evaluation would rerun that screen first)",
    )
    parser.add_argument("--registry", default=None, help="keep the registry here (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--merge", type=Path, nargs="+", default=None, help="join these sweep JSONs into --out")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.merge:
        report = merge(args.merge, args.out)
    else:
        if args.jobs < 1:
            parser.error("--jobs must be at least 1")
        if args.jobs > 1 and args.problem_limit_s is not None:
            parser.error("--problem-limit-s needs --jobs 1: stopping the workers would stop the other lanes' problems")
        report = run(args)
    report_end(report, args.out)
    return report


if __name__ == "__main__":
    main()
