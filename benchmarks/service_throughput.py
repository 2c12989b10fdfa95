"""Evaluations per second through `tritongym serve` and through Ray against the in-process pool, on the same
candidates, side by side in one run.

One candidate set (`candidate_set.py`: shipped solutions plus slow, wrong, crashing and unparseable
variants, 8 per problem), one evaluation configuration, and one column per way of running it:

* `in-process`: `Evaluator.evaluate_many` over every candidate, `--workers` sandboxes at once;
* `service`: a `tritongym serve` process on 127.0.0.1 with `--lanes` = `--workers`, fed through
  `Client.evaluate_many` (one submission of everything, then long-polls until all are done);
* `ray xN`: `executor = "ray"` with N actors (one per GPU), on a Ray instance started here (`--ray`).

With `--scaling` on a GPU backend, `in-process` and `service` also run on GPU 0 alone (`... 1 GPU`) and
Ray with one actor, so the table shows how each way scales from one GPU to all of them.

Every column judges with the registry cache off (`use_cache = false`, `--no-cache`), after a warm-up batch
(one shipped solution per GPU, untimed) so each pool has started; wall time runs from the first candidate
handed over to the last verdict back; setup (construction, warm-up, the server's start) is reported apart.
Reported per column: evaluations per second, the ratio to the first column, status counts, whether
every candidate got the same ok / not-ok verdict as in the first column, and (in-process and Ray) the CPU
seconds the caller's process used while it waited.

    python benchmarks/service_throughput.py --scaling                      # GPUs: triton-cuda, gpu sizes
    python benchmarks/service_throughput.py --backend triton-cpu --size cpu --problems 1 --workers 2 --trials 1

Writes benchmarks/results/service_throughput.json (or --out) after every column, so a run cut off by a
time limit keeps the columns it measured (run the rest with `--only`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _common import fmt, print_table
from candidate_set import build_candidate_set, interleaved

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

Cands = list[tuple[str, str, str]]  # (problem, variant, source)


@dataclass
class Column:
    name: str
    setup_s: float
    wall_s: float
    statuses: list[str]  # per candidate, in the order given
    notes: dict = field(default_factory=dict)

    @property
    def per_s(self) -> float:
        return len(self.statuses) / self.wall_s if self.wall_s else 0.0


def eval_config(args, **extra) -> EvalConfig:
    return EvalConfig(
        backend=args.backend,
        size=args.size,
        trials=args.trials,
        workers=args.workers,
        timeout_s=args.timeout,
        use_cache=False,
        **extra,
    )


def warm_sources(cands: Cands, count: int) -> list[tuple[str, str]]:
    """(problem, shipped solution) for `count` problems: the untimed warm-up batch (one per GPU)."""
    names = list(dict.fromkeys(c[0] for c in cands))[: max(1, count)]
    solutions = {name: load_problem(name, "cpu").solution for name in names}
    return [(name, source) for name, source in solutions.items() if source]


def local_column(name: str, cands: Cands, args, workdir: Path, **extra) -> Column:
    """`Evaluator.evaluate_many` in this process: the local pool, or Ray actors (`executor = "ray"`)."""
    config = eval_config(args, **extra)
    started = time.perf_counter()
    evaluator = Evaluator(config, registry=Registry(workdir / "registry.db"), host=PluginHost(load_entry_points=False))
    problems = {p: load_problem(p, evaluator.size) for p in dict.fromkeys(c[0] for c in cands)}
    with evaluator:
        gpus = len(config.gpus or []) or args.gpu_count
        evaluator.evaluate_many([(Candidate(source=src), problems[p]) for p, src in warm_sources(cands, gpus)])
        setup_s = time.perf_counter() - started
        started, cpu = time.perf_counter(), _cpu_s()
        results = evaluator.evaluate_many([(Candidate(source=src), problems[p]) for p, _, src in cands])
        wall_s = time.perf_counter() - started
        notes = {"workers": args.workers, "gpus": config.gpus, "retried": getattr(evaluator.executor, "retried", 0)}
        notes["caller_cpu_s"] = _cpu_s() - cpu
        notes["device_class"] = evaluator.device_class
    return Column(name, setup_s, wall_s, [r.status.value for r in results], notes)


def _cpu_s() -> float:
    """CPU seconds this process has used (user + system, all its threads): with the wall time, how busy the
    caller's one interpreter was while it judged (in-process it also drives the warm pool; under Ray the
    pool runs in the actors)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def service_column(name: str, cands: Cands, args, workdir: Path, gpus: list[int] | None = None) -> Column:
    from tritongym.service.http_client import Client

    out = workdir / "serve.out"
    command = [sys.executable, "-m", "tritongym", "serve", "--port", "0", "--registry", str(workdir / "service.db")]
    command += ["--backend", args.backend, "--size", args.size, "--trials", str(args.trials), "--no-cache"]
    command += ["--timeout", str(args.timeout), "--workers", str(args.workers), "--lanes", str(args.lanes)]
    command += ["--max-batch", str(max(256, len(cands))), "--max-queue", str(max(1024, len(cands)))]
    if gpus is not None:
        command += ["--gpus", ",".join(map(str, gpus))]
    env = {**os.environ, "TRITONGYM_LOAD_PLUGINS": ""}
    env.pop("TRITONGYM_SERVICE_TOKEN", None)
    started = time.perf_counter()
    with open(out, "w") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        url = _wait_for_url(out, proc)
        with Client(url, retry_s=600) as client:
            client.health()
            warm = warm_sources(cands, len(gpus or []) or args.gpu_count)
            client.evaluate_many([{"source": src, "problem": p} for p, src in warm])
            setup_s = time.perf_counter() - started
            started = time.perf_counter()
            tasks = client.evaluate_many([{"source": src, "problem": p} for p, _, src in cands])
            wall_s = time.perf_counter() - started
            metrics = client.metrics()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    statuses = [t.result.status.value if t.result is not None else f"failed: {t.error}" for t in tasks]
    busy = [line for line in metrics.splitlines() if line.startswith("tritongym_device_busy_seconds_total{")]
    return Column(name, setup_s, wall_s, statuses, {"lanes": args.lanes, "gpus": gpus, "busy": busy})


def ray_column(name: str, cands: Cands, args, workdir: Path, actors: int) -> Column:
    return local_column(name, cands, args, workdir, executor="ray", ray={"address": args.ray, "actors": actors})


def columns_for(args) -> dict[str, Callable[[Cands, argparse.Namespace, Path], Column]]:
    """The ways of running the work, in table order (the first is the baseline the others are compared to)."""
    one_gpu = args.scaling and args.backend == "triton-cuda" and args.gpu_count > 1
    found: dict[str, Callable[[Cands, argparse.Namespace, Path], Column]] = {}
    if one_gpu:
        found["in-process 1 GPU"] = lambda c, a, w: local_column("in-process 1 GPU", c, a, w, gpus=[0])
    found["in-process"] = lambda c, a, w: local_column("in-process", c, a, w)
    if one_gpu:
        found["service 1 GPU"] = lambda c, a, w: service_column("service 1 GPU", c, a, w, gpus=[0])
    found["service"] = lambda c, a, w: service_column("service", c, a, w)
    if args.ray:
        widest = args.gpu_count if args.backend == "triton-cuda" else 2
        for actors in dict.fromkeys([1, widest] if args.scaling else [widest]):
            found[f"ray x{actors}"] = lambda c, a, w, n=actors: ray_column(f"ray x{n}", c, a, w, n)
    return found


def _wait_for_url(out: Path, proc: subprocess.Popen) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in out.read_text().splitlines():
            if "listening on " in line:
                return line.split("listening on ", 1)[1].strip()
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"tritongym serve did not start:\n{out.read_text()}")


def _agreement(columns: list[Column]) -> dict[str, int]:
    """Per column: how many candidates got the same ok / not-ok verdict as in the first column."""
    first = columns[0]
    return {c.name: sum((a == "ok") == (b == "ok") for a, b in zip(first.statuses, c.statuses)) for c in columns}


def print_table_of(columns: list[Column], cands: Cands, args) -> None:
    """The table, each column's rate next to the first's."""
    first, agree = columns[0], _agreement(columns)
    print_table(
        f"evaluations per second, {len(cands)} candidates, {args.backend} ({args.size}), {args.gpu_count} GPU(s) "
        f"visible, on {platform.node()}",
        ["", "setup s", "wall s", "caller CPU s", "evals/s", f"x {first.name}"]
        + [f"verdicts as {first.name}", "statuses"],
        [
            [
                c.name,
                fmt(c.setup_s),
                fmt(c.wall_s),
                fmt(c.notes.get("caller_cpu_s")),
                fmt(c.per_s),
                fmt(c.per_s / first.per_s if first.per_s else None),
                f"{agree[c.name]}/{len(cands)}",
                ", ".join(f"{k} {v}" for k, v in sorted(Counter(c.statuses).items())),
            ]
            for c in columns
        ],
    )


def write_report(columns: list[Column], cands: Cands, args) -> None:
    """The JSON of the columns measured so far, with every candidate's status in each."""
    first, agree = columns[0], _agreement(columns)
    report = {
        "benchmark": "service_throughput",
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "settings": {k: v for k, v in vars(args).items() if k != "out"} | {"candidates": len(cands)},
        "columns": [
            {
                "name": c.name,
                "setup_s": c.setup_s,
                "wall_s": c.wall_s,
                "per_s": c.per_s,
                "ratio_to_first": c.per_s / first.per_s if first.per_s else None,
                "same_verdict_as_first": agree[c.name],
                "statuses": dict(Counter(c.statuses)),
                **c.notes,
            }
            for c in columns
        ],
        "candidates": [
            {"problem": p, "variant": v, **{c.name: c.statuses[i] for c in columns}}
            for i, (p, v, _) in enumerate(cands)
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", help="tritongym backend")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"], help="problem size preset")
    parser.add_argument("--problems", type=int, default=8, help="problems in the candidate set (8 variants each)")
    parser.add_argument("--limit", type=int, default=None, help="use only N candidates (mixed)")
    parser.add_argument("--workers", type=int, default=0, help="sandboxes at once (0: every CPU)")
    parser.add_argument("--lanes", type=int, default=None, help="service lanes (default: --workers, or the CPUs)")
    parser.add_argument("--ray", default="local", help="Ray address for the ray columns: local (start one), HOST:PORT")
    parser.add_argument("--no-ray", dest="ray", action="store_const", const=None, help="leave the Ray columns out")
    parser.add_argument("--scaling", action="store_true", help="also run each way on GPU 0 alone / one Ray actor")
    parser.add_argument("--trials", type=int, default=5, help="correctness trials per candidate")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a candidate is killed")
    parser.add_argument("--only", action="append", help="run only this column (repeatable), e.g. 'ray x2'")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "service_throughput.json")
    args = parser.parse_args()
    args.lanes = args.lanes or args.workers or os.cpu_count() or 1
    args.gpu_count = 1
    if args.backend == "triton-cuda":
        import torch

        args.gpu_count = torch.cuda.device_count()
    if args.ray:
        import ray

        ray.init(address=None if args.ray == "local" else args.ray, include_dashboard=False, log_to_driver=False)
        print(f"ray: {ray.cluster_resources()}", flush=True)

    cands = interleaved(build_candidate_set(args.size, args.problems))[: args.limit]
    columns: list[Column] = []
    executors = columns_for(args)
    with tempfile.TemporaryDirectory(prefix="service_throughput_") as tmp:
        for index, name in enumerate(args.only or list(executors)):
            workdir = Path(tmp) / f"column{index}"
            workdir.mkdir()
            print(f"{name}: {len(cands)} candidates ...", flush=True)
            columns.append(executors[name](cands, args, workdir))
            print(f"{name}: {columns[-1].wall_s:.1f} s, setup {columns[-1].setup_s:.1f} s", flush=True)
            write_report(columns, cands, args)  # after every column: a run cut off keeps what it measured

    print_table_of(columns, cands, args)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
