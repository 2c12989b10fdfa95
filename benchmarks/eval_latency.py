"""One kernel judged in seconds (issue 40 item 3): how long a user waits for `tritongym eval`, cold and warm.

For each of a few small problems, its honest bundled solution is judged by `tritongym eval ... --json` run as a
fresh process, the wall time of the whole command measured as a user waits for it:

* cold: `--pool off`, each run into a fresh registry (`--cold-registry fresh`, the default: no screen, reference
  timing or bandwidth stored yet, like the anchor's fresh process per task) or into one registry shared by the cold
  runs (`shared`: what a user who evaluated the problem before sees: the table's "cold s (known problem)" is the
  median of the shared registry's second and later runs, "cold s (new problem)" its first);
* warm: one `tritongym serve` started here on 127.0.0.1 with the same options, then `--pool require` (each
  candidate handed over; an eval that is not is an error, not a cold number).  The service's start is reported
  apart: until it announced itself, and until a first evaluation of a problem not measured (`--warm-up`) came back
  (its workers warm).

Every run judges with the registry cache off (`--no-cache`, on the service too), so `--repeats N` runs judge the
candidate N times: the first warm run of a problem computes its screen and reference timing in the pool, later
ones find them stored (steady state).  Announcements go to a directory of this run's own
(`TRITONGYM_RUNTIME_DIR`), so a pool the user has running is neither used nor disturbed.

Per candidate and run: wall seconds, status, the result's own duration and phases (the cold one's say where its
time went: `worker_startup_*` parts, `wait_worker`, the reference's side...), and whether the warm verdict is the
cold one's (status, correct, hacked, each check's outcome, trials, and the keys: problem, kernel, protocol,
backend, device class, size; timings and errors measured on fresh random inputs are not compared).

    python benchmarks/eval_latency.py --backend triton-cuda --size gpu                     # a GPU, ~5-8 minutes
    python benchmarks/eval_latency.py --backend triton-cpu --size cpu --problems relu,softmax --repeats 1 --trials 2

Each run keeps its timeline (`core/timeline.py`): the marks the CLI, the evaluator and the pool's parent side (the
service's too, for warm runs) wrote while it ran, in seconds from the command's start, so a slow run says which part
it waited for (imports, the pool's processes starting, the screen, the task).

Prints a table and writes JSON (default benchmarks/results/eval_latency.json), rewritten after every run, so a run
cut off by a time limit keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import fmt, print_table

from tritongym.core import timeline
from tritongym.core.problems import SUITE_DIR

SOLUTIONS = SUITE_DIR.parent / "solutions"
DEFAULT_PROBLEMS = "relu,softmax,gelu,layer_norm,sum_dim"
VERDICT = ("status", "correct", "hacked", "trials", "problem_key", "kernel_id", "protocol", "backend", "device_class")


def verdict(result: dict) -> dict:
    """What must be the same whoever judged it: the decision and its keys (not times, not fresh-input errors)."""
    kept = {k: result.get(k) for k in (*VERDICT, "size")}
    kept["checks"] = [(c["name"], c["passed"], c.get("unjudged", False)) for c in result.get("checks", [])]
    return kept


def options(args) -> list[str]:
    found = ["--backend", args.backend, "--size", args.size, "--no-cache", "--timeout", str(args.timeout)]
    if args.trials is not None:
        found += ["--trials", str(args.trials)]
    if args.gpus:
        found += ["--gpus", args.gpus]
    if args.config:
        found += ["--config", str(args.config)]
    return found


def run_eval(problem: str, registry: Path, pool: str, args, env: dict, service_marks: Path | None = None) -> dict:
    """`tritongym eval` on `problem`'s bundled solution as a fresh process: its wall time, JSON answer and timeline
    (its own marks, and the service's made meanwhile when `service_marks` names the service's timeline file)."""
    command = [sys.executable, "-m", "tritongym", "eval", str(SOLUTIONS / f"{problem}.py"), "-p", problem]
    command += [*options(args), "--registry", str(registry), "--pool", pool, "--json"]
    marks = registry.with_name(f"{registry.stem}-{problem}-{time.monotonic_ns()}.timeline")
    begun = time.time()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**env, timeline.ENV: str(marks)})
    wall = time.perf_counter() - started
    ended = time.time()
    seen = timeline.read(marks) + [
        {**m, "event": f"service:{m['event']}"}
        for m in (timeline.read(service_marks) if service_marks else [])
        if begun <= m["t"] <= ended
    ]
    timed = [
        [round(m["t"] - begun, 3), m["event"], {k: v for k, v in m.items() if k not in ("t", "event")}] for m in seen
    ]
    timed.sort(key=lambda m: m[0])
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = {"error": (done.stdout + done.stderr)[-2000:]}
    return {"wall_s": round(wall, 3), "exit_code": done.returncode, "result": answer, "timeline": timed}


def start_service(args, workdir: Path, env: dict) -> tuple[subprocess.Popen, Path, float]:
    """`tritongym serve` on a free loopback port; (process, its log, seconds until it announced itself)."""
    log = workdir / "serve.log"
    command = [sys.executable, "-m", "tritongym", "serve", "--port", "0", *options(args)]
    command += ["--registry", str(workdir / "warm.db")]
    started = time.perf_counter()
    with open(log, "w") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    runtime = Path(env["TRITONGYM_RUNTIME_DIR"])
    deadline = time.monotonic() + 300
    while not list(runtime.glob("serve-*.json")):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"tritongym serve did not announce itself:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    return proc, log, time.perf_counter() - started


def summary(run: dict) -> dict:
    """One run as the JSON keeps it: wall, exit code, status, the result's duration and what it measured (phases,
    counts, flags, memory), its verdict."""
    result = run["result"]
    return {
        "wall_s": run["wall_s"],
        "exit_code": run["exit_code"],
        "status": result.get("status") or f"error: {result.get('error', '')[:300]}",
        "duration_s": result.get("duration_s"),
        "runtime_ms": result.get("runtime_ms"),
        "speedup": result.get("speedup"),
        "phases": result.get("phases", {}),
        "counts": result.get("counts", {}),
        "flags": result.get("flags", {}),
        "memory_mb": result.get("memory_mb", {}),
        "verdict": verdict(result) if "status" in result else None,
        "lends_ms": lend_parts(run),
        "timeline": run.get("timeline", []),
    }


def lend_parts(run: dict) -> dict:
    """The keeper's `LEND`s of the run, from its timeline: how many, and each part's milliseconds summed and at most
    (`compare`: the outputs lent before, compared; `allocate`: the new handouts; `sync`: their fill's wait)."""
    parts = [m[2]["parts"] for m in run.get("timeline", []) if m[2].get("kind") == "LEND" and m[2].get("parts")]
    found: dict = {"lends": len(parts)}
    for name in sorted({k for p in parts for k in p}):
        values = [1000 * float(p.get(name, 0.0)) for p in parts]
        found[name] = {"sum": round(sum(values), 2), "max": round(max(values), 2)}
    return found


def timeline_line(run: dict) -> str:
    """A run's marks on one line: `seconds event`, in order (the pid only where more than one process marked)."""
    pids = {m[2].get("pid") for m in run.get("timeline", [])}
    return ", ".join(
        f"{m[0]:.2f} {m[1]}"
        + (f":{m[2]['part']}" if "part" in m[2] else "")
        + (f":{m[2]['kind']}" if "kind" in m[2] else "")
        + (f"({m[2]['seconds']:.2f} s)" if m[2].get("seconds", 0) >= 0.05 else "")
        + (f"[{m[2].get('pid')}]" if len(pids) > 1 else "")
        for m in run.get("timeline", [])
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", help="tritongym backend")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"], help="problem size preset")
    parser.add_argument("--problems", default=DEFAULT_PROBLEMS, help="bundled problems, comma separated")
    parser.add_argument("--warm-up", default="silu", help="problem the service judges once before the measured runs")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each candidate, cold and warm")
    parser.add_argument("--cold-registry", choices=["fresh", "shared"], default="fresh", help="see the docstring")
    parser.add_argument("--trials", type=int, default=None, help="correctness trials (default: the config's)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a candidate is killed")
    parser.add_argument("--gpus", default=None, help="GPU indices for triton-cuda, e.g. 0")
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help='a TOML config for every eval and the serve (e.g. [backend_options] profiler_warm_up = "cupti")',
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "eval_latency.json")
    args = parser.parse_args()
    problems = [p.strip() for p in args.problems.split(",") if p.strip()]
    if args.warm_up in problems:
        raise SystemExit(f"--warm-up {args.warm_up} is measured too: pick a problem outside --problems")

    workdir = Path(tempfile.mkdtemp(prefix="tritongym-eval-latency-"))
    env = {**os.environ, "TRITONGYM_RUNTIME_DIR": str(workdir / "run"), "TRITONGYM_SQLITE_WARNING": "0"}
    env.pop("TRITONGYM_SERVICE_TOKEN", None)
    env.pop("TRITONGYM_POOL", None)
    report: dict = {
        "backend": args.backend,
        "size": args.size,
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "options": options(args),
        "cold_registry": args.cold_registry,
        "repeats": args.repeats,
        "problems": {p: {"cold": [], "warm": []} for p in problems},
    }

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, default=str))

    print(f"cold: {len(problems)} problems x {args.repeats}, registry {args.cold_registry}", flush=True)
    for repeat in range(args.repeats):
        for problem in problems:
            name = f"cold-{problem}-{repeat}.db" if args.cold_registry == "fresh" else "cold.db"
            run = summary(run_eval(problem, workdir / name, "off", args, env))
            report["problems"][problem]["cold"].append(run)
            print(f"  cold {problem} #{repeat}: {run['wall_s']:.2f} s, {run['status']}", flush=True)
            print(f"    {timeline_line(run)}", flush=True)
            save()

    service_marks = workdir / "serve.timeline"
    proc, log, announce_s = start_service(args, workdir, {**env, timeline.ENV: str(service_marks)})
    try:
        first = summary(run_eval(args.warm_up, workdir / "warm.db", "require", args, env, service_marks))
        report["service"] = {"announce_s": round(announce_s, 3), "warm_up": {"problem": args.warm_up, **first}}
        print(f"serve: announced in {announce_s:.2f} s; warm-up {args.warm_up} {first['wall_s']:.2f} s", flush=True)
        save()
        for repeat in range(args.repeats):
            for problem in problems:
                run = summary(run_eval(problem, workdir / "warm.db", "require", args, env, service_marks))
                report["problems"][problem]["warm"].append(run)
                print(f"  warm {problem} #{repeat}: {run['wall_s']:.2f} s, {run['status']}", flush=True)
                print(f"    {timeline_line(run)}", flush=True)
                save()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
        report["service"] = {**report.get("service", {}), "log_tail": log.read_text()[-3000:]}

    rows = []
    for problem, runs in report["problems"].items():
        cold, warm = runs["cold"], runs["warm"]
        cold_verdicts = [r["verdict"] for r in cold]
        runs["identical"] = bool(cold and warm) and all(r["verdict"] == cold_verdicts[0] for r in cold + warm)
        first_cold = cold[0]["phases"] if cold else {}
        # a fresh registry makes every cold run a problem's first on this machine (its screen, the keeper's
        # weighing); a shared one, only the first: the later runs are what a user who judged the problem before waits
        new = cold if args.cold_registry == "fresh" else cold[:1]
        known = [] if args.cold_registry == "fresh" else cold[1:]
        rows.append(
            [
                problem,
                fmt(statistics.median(r["wall_s"] for r in new)) if new else "-",
                fmt(statistics.median(r["wall_s"] for r in known)) if known else "-",
                fmt(warm[0]["wall_s"]) if warm else "-",
                fmt(statistics.median(r["wall_s"] for r in warm[1:])) if len(warm) > 1 else "-",
                "/".join(sorted({r["status"] for r in cold})),
                "/".join(sorted({r["status"] for r in warm})),
                "yes" if runs["identical"] else "NO",
                fmt(first_cold.get("worker_startup")),
                fmt(first_cold.get("wait_worker")),
            ]
        )
    service = report.get("service", {})
    print_table(
        f"tritongym eval wall seconds, {args.backend} ({args.size}) on {platform.node()}; serve announced in "
        f"{fmt(service.get('announce_s'))} s, first (warm-up) eval {fmt(service.get('warm_up', {}).get('wall_s'))} s",
        ["problem", "cold s (new problem)", "cold s (known problem)", "warm s (first)", "warm s (later)"]
        + ["cold status", "warm status", "same verdict"]
        + ["cold worker start s", "cold wait worker s"],
        rows,
    )
    save()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
