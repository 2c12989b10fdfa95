"""Scaling over the GPUs of one host: the RL-like batch judged on one GPU, then on two (and four), in one run.

Issue 40 item 2: the RL-like batch (`candidate_set.py`: 16 problems x 8 variants, 128 candidates of mixed
verdicts, interleaved) through one `Evaluator.evaluate_many` per column, default configuration, every check on,
a fresh registry each (cache on, as `kernelgym_throughput.py --workload rl`: nothing is reused from an earlier
column), backend triton-cuda with `gpus` set to the column's GPUs.  Per column:

* wall seconds, candidates per minute and the ratio to the one-GPU column (the issue's floor: two GPUs at least
  1.85x one, four at least 3.6x);
* statuses, and whether every candidate got the same status as in the first column (`verdicts_equal`);
* per GPU, the GPU lock's seconds (exclusive, draining, shared, idle), its exclusive grants, and what the
  draining waited for (`GPULock.drained_by`: the kinds of shared holds the timers waited behind);
* where the host's CPUs went: the busy fraction of all cores over the column (`/proc/stat`), its peak over
  one-second samples, and the CPU seconds of this process (the pool's parent: every frame of every worker and
  keeper passes through it) against the column's wall time;
* the phases of the results (seconds), summed over worker evaluations, and their counts and flags (`counts`);
* every column screens its problems afresh (`screen.forget_held`: the process holds screens once computed, so a
  later column started with every screen known, and the first column paid for all of them);
* the column's timeline (`core/timeline.py`, the pool's marks): when the first worker was ready, the first
  candidate started and the last one ended, the candidates ended in each tenth of the column, and the workers
  ready but idle (`ready_unused_s`: summed over workers, seconds from ready to their first task), so the fixed
  costs (start-up, the tail) show apart from the steady rate.

The columns run in the order given (`--gpu-sets 0 0,1`); `--repeats 2` runs the list again reversed, so an
order effect shows.  `--settings` runs every GPU set under each of the backend's settings in turn (the names of
`lock_options_ab.py`: `default`, `unlocked+handback`, `unlocked+handback+shared=30`, ...), each setting's ratios
against its own one-GPU column: which lock option scales, measured as the issue's floor is (a `switch=S` part sets
this process's GIL hand-over interval for the column: `default+switch=0.0005`).  The JSON is rewritten
after every column, so a call cut off by its limit keeps what it ran.

    python benchmarks/gpu_scaling.py --gpu-sets 0 0,1 --out $OUT/scaling.json > $OUT/scaling.log 2>&1
    TRITON_INTERPRET=1 python benchmarks/gpu_scaling.py --device cpu --limit 8   # the script itself, on a CPU
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from _common import fmt, print_table
from candidate_set import build_candidate_set, interleaved
from lock_options_ab import backend_options

from tritongym.core import timeline
from tritongym.core.config import EvalConfig
from tritongym.core.eval import screen
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry

RESULTS = Path(__file__).parent / "results"
RL_PROBLEMS = 16


def _cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat's first line."""
    with open("/proc/stat") as f:
        fields = [float(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already in user
    return total - idle, total


class HostLoad:
    """The host's CPU busy fraction over a span (all cores), and its peak over one-second samples."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        last = _cpu_times()
        while not self._stop.wait(1.0):
            now = _cpu_times()
            total = now[1] - last[1]
            if total > 0:
                self.samples.append((now[0] - last[0]) / total)
            last = now

    def __enter__(self) -> HostLoad:
        self._start = _cpu_times()
        self._self_start = _self_cpu_s()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(2)
        end = _cpu_times()
        total = end[1] - self._start[1]
        self.busy_fraction = (end[0] - self._start[0]) / total if total > 0 else None
        self.parent_cpu_s = _self_cpu_s() - self._self_start


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _delta(after, before):
    """`after` less `before`, key by key through nested dicts: the pool's cumulative counters over one batch."""
    if isinstance(after, dict):
        before = before if isinstance(before, dict) else {}
        return {k: _delta(v, before.get(k)) for k, v in after.items()}
    return round(after - (before or 0), 3)


def _pool_counters(evaluator) -> dict:
    backend_obj = evaluator.backend
    pool = getattr(backend_obj, "_pool", None)
    return {
        "gpu_lock_s": getattr(backend_obj, "lock_seconds", dict)(),
        "drained_by": getattr(backend_obj, "drained_by", dict)(),
        "exclusive_grants": pool.exclusive_grants() if pool is not None else {},
        # tasks that took a worker of a GPU other than their problem's (the tail's balance: `ReadyWorkers`)
        "taken_elsewhere": pool.ready.taken_elsewhere if pool is not None else 0,
    }


def _batch(evaluator, pairs: list, label: str) -> dict:
    """One `evaluate_many` of `pairs` on `evaluator`: its results, wall seconds, host load and the pool's
    counters over it."""
    done = [0]

    def progress(_result) -> None:
        done[0] += 1
        if done[0] % 16 == 0 or done[0] == len(pairs):
            print(f"[{label}] {done[0]}/{len(pairs)} in {time.perf_counter() - clock:.1f} s", flush=True)

    before = _pool_counters(evaluator)
    with HostLoad() as load:
        clock = time.perf_counter()
        results = evaluator.evaluate_many(pairs, on_result=progress)
        wall_s = time.perf_counter() - clock
    after = _pool_counters(evaluator)
    return {"results": results, "wall_s": wall_s, "load": load, **{k: _delta(after[k], before[k]) for k in after}}


def _summary(batch: dict) -> dict:
    results, wall_s, load = batch["results"], batch["wall_s"], batch["load"]
    phases: Counter = Counter()  # seconds
    counts: Counter = Counter()  # events, and how many evaluations each flag was set for
    for r in results:
        if not r.cached:
            phases.update(r.phases)
            counts.update(r.counts)
            counts.update({name: 1 for name, flag in r.flags.items() if flag})
    return {
        "candidates": len(results),
        "cached": sum(1 for r in results if r.cached),
        "wall_s": round(wall_s, 2),
        "per_min": round(len(results) / wall_s * 60, 2),
        "statuses": dict(Counter(r.status.value for r in results)),
        "verdicts": [r.status.value for r in results],
        "gpu_lock_s": batch["gpu_lock_s"],
        "drained_by": batch["drained_by"],
        "exclusive_grants": batch["exclusive_grants"],
        "taken_elsewhere": batch["taken_elsewhere"],
        "host_cpus": os.cpu_count(),
        "host_busy_fraction": None if load.busy_fraction is None else round(load.busy_fraction, 3),
        "host_busy_peak": round(max(load.samples), 3) if load.samples else None,
        "parent_cpu_s": round(load.parent_cpu_s, 1),
        "parent_cpu_per_wall": round(load.parent_cpu_s / wall_s, 3),
        "phases_s": {k: round(v, 2) for k, v in phases.most_common()},
        "counts": dict(counts.most_common()),  # counts summed, flags as how many evaluations had them
    }


def split_switch(setting: str) -> tuple[str, float | None]:
    """A setting's `switch=S` part apart from the lock's (`default+switch=0.0005`): the pool's process hands the GIL
    over every S seconds (`sys.setswitchinterval`, 0.005 by default) while the column runs.  The pool relays every
    keeper request through a thread of this process; on two H200s each task's `keeper_queue` doubled against one
    GPU, and a shorter hand-over tells whether threads waiting for the GIL are that."""
    parts = setting.split("+")
    switches = [p for p in parts if p.startswith("switch=")]
    rest = "+".join(p for p in parts if not p.startswith("switch=")) or "default"
    if not switches:
        return rest, None
    try:
        seconds = float(switches[-1].partition("=")[2])
    except ValueError:
        raise SystemExit(f"{switches[-1]!r}: switch takes seconds, e.g. switch=0.0005") from None
    if not 0 < seconds <= 1:
        raise SystemExit(f"{switches[-1]!r}: switch takes seconds in (0, 1], e.g. switch=0.0005")
    return rest, seconds


def run_column(
    gpus: list[int] | None,
    cands: list[tuple[str, str, str]],
    size: str,
    backend: str,
    plugins: list[str],
    steady: int = 0,
    setting: str = "default",
) -> dict:
    """One column: a fresh Evaluator and registry over `gpus`, every candidate in one `evaluate_many` (cold: the
    pool, its keepers, every screen and reference record started from nothing); then `steady` more batches of the
    same candidates on the same evaluator with the cache off, as an RL run's later steps judge new samples of
    problems it has seen (pool warm, screens held, records kept), each judged afresh."""
    options = {"gpus": gpus} if gpus is not None else {}
    lock_setting, switch_s = split_switch(setting)
    if lock_setting != "default" and backend == "triton-cuda":  # the lock's options are triton-cuda's
        options.update(backend_options(lock_setting))
    default_switch_s = sys.getswitchinterval()
    if switch_s is not None:
        sys.setswitchinterval(switch_s)
    config = EvalConfig(backend=backend, size=size, backend_options=options)
    problems = {name: load_problem(name, size) for name in dict.fromkeys(c[0] for c in cands)}
    screen.forget_held()  # each column screens its problems afresh: held ones made a later column's start free
    label = ",".join(map(str, gpus)) if gpus is not None else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        marks_path = Path(tmp) / "column.timeline"
        os.environ[timeline.ENV] = str(marks_path)
        begun = time.time()
        started = time.perf_counter()
        host = PluginHost(extra_plugins=plugins, load_entry_points=False)
        evaluator = Evaluator(config, registry=Registry(Path(tmp) / "registry.db"), host=host)
        setup_s = time.perf_counter() - started
        pairs = [(Candidate(source=src), problems[name]) for name, _, src in cands]
        steady_batches = []
        try:
            cold = _batch(evaluator, pairs, label)
            marks = timeline.read(marks_path)
            evaluator.config = evaluator.config.model_copy(update={"use_cache": False})
            for k in range(steady):
                steady_batches.append(_summary(_batch(evaluator, pairs, f"{label} steady {k + 1}")))
        finally:
            evaluator.close()
            os.environ.pop(timeline.ENV, None)
            sys.setswitchinterval(default_switch_s)
    column = {"gpus": gpus, "setting": setting, "setup_s": round(setup_s, 2), **_summary(cold)}
    column["timeline"] = timeline_summary(marks, begun, begun + setup_s, cold["wall_s"])
    if steady_batches:
        column["steady"] = steady_batches
        column["steady_per_min"] = round(
            sum(b["candidates"] for b in steady_batches) / sum(b["wall_s"] for b in steady_batches) * 60, 2
        )
    return column


def timeline_summary(marks: list[dict], begun: float, clock: float, wall_s: float) -> dict:
    """The column's fixed costs apart from its steady rate, from the pool's marks (seconds from the batch's start)."""

    def at(m: dict) -> float:
        return round(m["t"] - clock, 2)

    tasks = [m for m in marks if m["event"] in ("task_start", "task_end") and m.get("mode") != "screen"]
    starts = [at(m) for m in tasks if m["event"] == "task_start"]
    ends = [at(m) for m in tasks if m["event"] == "task_end"]
    ready = [m for m in marks if m["event"] == "worker_ready"]
    screens = [at(m) for m in marks if m["event"] == "task_end" and m.get("mode") == "screen"]
    # a worker's idle time before its first task: each ready mark paired with the next task start of its GPU
    unused = 0.0
    pending: dict[str, list[float]] = {}
    for m in marks:
        if m["event"] == "worker_ready":
            pending.setdefault(str(m.get("gpu")), []).append(m["t"])
        elif m["event"] == "task_start" and pending.get(str(m.get("gpu"))):
            unused += m["t"] - pending[str(m.get("gpu"))].pop(0)
    tenths = [0] * 10
    for end in ends:
        tenths[min(9, max(0, int(end / wall_s * 10)))] += 1
    return {
        "pool_start_s": round(clock - begun, 2),
        "first_worker_ready_s": min((at(m) for m in ready), default=None),
        "workers_ready": len(ready),
        "first_task_start_s": min(starts, default=None),
        "first_task_end_s": min(ends, default=None),
        "last_task_end_s": max(ends, default=None),
        "last_screen_end_s": max(screens, default=None),
        "ended_per_tenth": tenths,
        "ready_unused_s": round(unused, 1),
        # a keeper's request with its kind, seconds, process (which of a GPU's keepers served it) and parts (where a
        # LEND's or a PREP's seconds went), the rest by GPU
        "marks": [
            [at(m), m["event"], m.get("gpu"), m.get("mode")]
            if m["event"] != "keeper_request"
            else [at(m), m["event"], m.get("pid"), m.get("kind"), m.get("seconds"), m.get("parts")]
            for m in marks
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gpu-sets",
        nargs="+",
        default=None,
        help="columns, each a comma list of GPU indices (default: 0, then 0,1 and 0,1,2,3 where visible)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="run the columns again, in reverse order, this often")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: triton-cpu, one column")
    parser.add_argument("--limit", type=int, default=None, help="only the first N candidates (interleaved)")
    parser.add_argument("--plugin", action="append", default=[], help="extra tritongym plugin module or file")
    parser.add_argument(
        "--steady",
        type=int,
        default=0,
        help="after each column's cold batch, judge the same candidates this many times more on its warm pool, "
        "cache off (an RL run's later steps): `steady_per_min` and its ratio to one GPU's",
    )
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["default"],
        help="the backend's settings, each over every GPU set (lock_options_ab.py's names: default, "
        "unlocked+handback, unlocked+shared=30, ...)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "gpu_scaling.json")
    args = parser.parse_args()
    for setting in args.settings:
        lock_setting, _ = split_switch(setting)
        if lock_setting != "default":
            backend_options(lock_setting)  # every setting understood before anything runs

    size = "gpu" if args.device == "cuda" else "cpu"
    backend = "triton-cuda" if args.device == "cuda" else "triton-cpu"
    cands = interleaved(build_candidate_set(size, RL_PROBLEMS))[: args.limit]
    if args.device == "cpu":
        sets: list[list[int] | None] = [None]
    elif args.gpu_sets:
        sets = [[int(g) for g in s.split(",")] for s in args.gpu_sets]
    else:
        import torch

        n = torch.cuda.device_count()
        sets = [list(range(k)) for k in (1, 2, 4) if k <= n]
    gpu_order = list(sets)
    for repeat in range(1, args.repeats):
        gpu_order += list(reversed(sets)) if repeat % 2 else list(sets)
    order = [(setting, gpus) for setting in args.settings for gpus in gpu_order]
    report: dict = {"candidates": len(cands), "size": size, "backend": backend, "columns": []}
    if args.device == "cuda":
        import torch

        report["device_name"] = torch.cuda.get_device_name(0)
        report["visible_gpus"] = torch.cuda.device_count()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for setting, gpus in order:
        column = run_column(gpus, cands, size, backend, args.plugin, args.steady, setting)
        report["columns"].append(column)
        first = {}
        for c in report["columns"]:
            first.setdefault((c["setting"], len(c["gpus"] or [0])), c)
        for c in report["columns"]:
            base = first.get((c["setting"], 1))
            c["ratio_to_one_gpu"] = round(c["per_min"] / base["per_min"], 3) if base else None
            if base and c.get("steady_per_min") and base.get("steady_per_min"):
                c["steady_ratio_to_one_gpu"] = round(c["steady_per_min"] / base["steady_per_min"], 3)
                c["steady_verdicts_equal"] = all(b["verdicts"] == c["verdicts"] for b in c["steady"])
            c["verdicts_equal"] = c["verdicts"] == report["columns"][0]["verdicts"]  # the first setting's too
        args.out.write_text(json.dumps(report, indent=1))
        hidden = ("verdicts", "phases_s", "counts", "timeline", "steady")
        shown = {k: v for k, v in column.items() if k not in hidden}
        shown["timeline"] = {k: v for k, v in column["timeline"].items() if k != "marks"}
        print(json.dumps(shown), flush=True)
    rows = [
        [
            ",".join(map(str, c["gpus"])) if c["gpus"] is not None else "cpu",
            c["setting"],
            fmt(c["wall_s"]),
            fmt(c["per_min"]),
            fmt(c["ratio_to_one_gpu"]),
            fmt(c.get("steady_per_min")),
            fmt(c.get("steady_ratio_to_one_gpu")),
            str(c["verdicts_equal"] and c.get("steady_verdicts_equal", True)),
            fmt(c["host_busy_fraction"], 2),
            fmt(c["parent_cpu_per_wall"], 2),
            "; ".join(
                f"{gpu}: drain {s.get('draining', 0):.0f} of {sum(s.values()):.0f} s"
                for gpu, s in (c["gpu_lock_s"] or {}).items()
            ),
        ]
        for c in report["columns"]
    ]
    print_table(
        "RL-like batch over the GPUs of one host",
        [
            "GPUs",
            "setting",
            "wall s",
            "per min",
            "x one GPU",
            "steady/min",
            "steady x",
            "same verdicts",
            "host busy",
            "parent CPU/wall",
            "GPU lock",
        ],
        rows,
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
