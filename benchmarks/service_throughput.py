"""Evaluations per second through `tritongym serve` against the in-process pool, on the same candidates.

One candidate set (`candidate_set.py`: shipped solutions plus slow, wrong, crashing and unparseable
variants, 8 per problem), one evaluation configuration, and one column per way of running it:

* `in-process`: `Evaluator.evaluate_many` over every candidate, `--workers` sandboxes at once;
* `service`: a `tritongym serve` process on 127.0.0.1 with `--lanes` = `--workers`, fed through
  `Client.evaluate_many` (one submission of everything, then long-polls until all are done).

Each column gets a fresh registry, so nothing is answered from a cache.  Wall time runs from the first
candidate handed over to the last verdict back; setup (Evaluator construction, or the server's start until
/health answers) is reported apart.  Reported per column: evaluations per second, status counts, and
whether every candidate got the same ok / not-ok verdict as in the first column.

Another way of running the same work is another entry in `EXECUTORS` (a function from the candidates
and the parsed arguments to a `Column`); a Ray column, for instance, takes its address from an added
`--ray ADDRESS` option and appears in the table and the JSON like the others.

    python benchmarks/service_throughput.py [--backend triton-cuda] [--size gpu] [--problems 8]
    python benchmarks/service_throughput.py --backend triton-cpu --size cpu --problems 1 --workers 2 --trials 1

Writes benchmarks/results/service_throughput.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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


def eval_config(args) -> EvalConfig:
    return EvalConfig(
        backend=args.backend, size=args.size, trials=args.trials, workers=args.workers, timeout_s=args.timeout
    )


def in_process(cands: Cands, args, workdir: Path) -> Column:
    config = eval_config(args)
    started = time.perf_counter()
    evaluator = Evaluator(
        config, registry=Registry(workdir / "in_process.db"), host=PluginHost(load_entry_points=False)
    )
    problems = {name: load_problem(name, evaluator.size) for name in dict.fromkeys(c[0] for c in cands)}
    setup_s = time.perf_counter() - started
    with evaluator:
        started = time.perf_counter()
        results = evaluator.evaluate_many([(Candidate(source=src), problems[name]) for name, _, src in cands])
        wall_s = time.perf_counter() - started
    return Column("in-process", setup_s, wall_s, [r.status.value for r in results], {"workers": args.workers})


def service(cands: Cands, args, workdir: Path) -> Column:
    from tritongym.core.service.client import Client

    out = workdir / "serve.out"
    command = [sys.executable, "-m", "tritongym", "serve", "--port", "0", "--registry", str(workdir / "service.db")]
    command += ["--backend", args.backend, "--size", args.size, "--trials", str(args.trials)]
    command += ["--timeout", str(args.timeout), "--workers", str(args.workers), "--lanes", str(args.workers)]
    command += ["--max-batch", str(max(256, len(cands))), "--max-queue", str(max(1024, len(cands)))]
    env = {**os.environ, "TRITONGYM_LOAD_PLUGINS": ""}
    env.pop("TRITONGYM_SERVICE_TOKEN", None)
    started = time.perf_counter()
    with open(out, "w") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        url = _wait_for_url(out, proc)
        with Client(url, retry_s=600) as client:
            client.health()
            setup_s = time.perf_counter() - started
            started = time.perf_counter()
            tasks = client.evaluate_many([{"source": src, "problem": name} for name, _, src in cands])
            wall_s = time.perf_counter() - started
            metrics = client.metrics()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    statuses = [t.result.status.value if t.result is not None else f"failed: {t.error}" for t in tasks]
    busy = [line for line in metrics.splitlines() if line.startswith("tritongym_device_busy_seconds_total{")]
    return Column("service", setup_s, wall_s, statuses, {"lanes": args.workers, "busy": busy})


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


EXECUTORS: dict[str, Callable[[Cands, argparse.Namespace, Path], Column]] = {
    "in-process": in_process,
    "service": service,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", help="tritongym backend")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"], help="problem size preset")
    parser.add_argument("--problems", type=int, default=8, help="problems in the candidate set (8 variants each)")
    parser.add_argument("--limit", type=int, default=None, help="use only N candidates (mixed)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="sandboxes / lanes at once")
    parser.add_argument("--trials", type=int, default=5, help="correctness trials per candidate")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a candidate is killed")
    parser.add_argument("--only", action="append", choices=list(EXECUTORS), help="run only this column (repeatable)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "service_throughput.json")
    args = parser.parse_args()

    cands = interleaved(build_candidate_set(args.size, args.problems))[: args.limit]
    columns: list[Column] = []
    with tempfile.TemporaryDirectory(prefix="service_throughput_") as tmp:
        for name in args.only or list(EXECUTORS):
            workdir = Path(tmp) / name
            workdir.mkdir()
            print(f"{name}: {len(cands)} candidates ...", flush=True)
            columns.append(EXECUTORS[name](cands, args, workdir))
            print(f"{name}: {columns[-1].wall_s:.1f} s", flush=True)

    first = columns[0]
    agree = {c.name: sum((a == "ok") == (b == "ok") for a, b in zip(first.statuses, c.statuses)) for c in columns}
    print_table(
        f"evaluations per second, {len(cands)} candidates, {args.backend} ({args.size}), {args.workers} at once, "
        f"on {platform.node()}",
        ["", "setup s", "wall s", "evals/s", f"x {first.name}", f"verdicts as {first.name}", "statuses"],
        [
            [
                c.name,
                fmt(c.setup_s),
                fmt(c.wall_s),
                fmt(c.per_s),
                fmt(c.per_s / first.per_s if first.per_s else None),
                f"{agree[c.name]}/{len(cands)}",
                ", ".join(f"{k} {v}" for k, v in sorted(Counter(c.statuses).items())),
            ]
            for c in columns
        ],
    )
    report = {
        "benchmark": "service_throughput",
        "host": platform.node(),
        "cpus": os.cpu_count(),
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
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
