"""The GPU lock's options side by side on the bundled workload: wall time and where the lock's time went.

Most of a batch's GPU-lock time was spent *draining* (a timing waiting for sharers to finish while new ones are
held back: 66-101 s of 115-124 s for the 27 bundled problems on an H100, stop 32).  Two `TimingOptions` shorten
what a sharer holds: `unlock_compiles` (Triton's compiler runs with the hold given back) and
`yield_between_calls` (the hold given back between correctness calls, taken again behind waiting timings).
This runs the bundled problems' solutions (the registry cache off, a fresh registry per setting) once per
setting, in the order given, in one process on one device, and reports per setting the wall seconds, the
statuses, and the lock's seconds per state (`GPULock.seconds`: exclusive, draining, shared, idle).  Run the
settings in both orders (`--settings a b` then `--settings b a`) to see the order's effect: one run each is
noisy (stop 32 saw 78 s and 121 s for the same setting in two calls).

    python benchmarks/lock_options_ab.py --settings locked unlocked yield unlocked+yield

`workers=N` sets the backend's `workers_per_gpu` (default: CPUs per GPU, at most 8), `spares=N` its
`spare_workers_per_gpu` (warm workers on standby, so a task never waits for a fresh one to start), `starts=N` its
`starts_at_once` (workers starting at one time on the host: `unlocked+starts=8`), `connections=N` its
`device_connections` (hardware queues per CUDA context; the default 1, `connections=8` the driver's own default),
`sched=W` its `device_schedule` (how contexts wait for the GPU: `default+sched=yield`, `blocking`, `spin`; the
default `auto`).
A setting of `name=value` parts alone turns every switch it does not name off (`workers=16` is locked, without
`handback`); `default+...` keeps the backend's defaults for what it does not name (`default+connections=8`).
`shared=S` sets `shared_check_s` (how recent another task's timing of the reference before its candidate may be to
serve this one; `shared=0`: every task takes an exclusive hold to time it itself).
`window=S` sets `timing_window_s` (a timer waits up to S seconds, sharers still admitted, for other timers to queue
behind it: one drain for several timings), e.g. `unlocked+window=1.5`.  `--workload rl` runs the RL-like batch
(`kernelgym_throughput.rl_candidates`: 128 candidates, more timings per minute than the bundled 27, the registry
cache on as in training) instead of the bundled pairs.  Stop 34 on an H100 (bundled): `unlocked+yield` 138 and
114 s against `unlocked` 79 s, so `yield_between_calls` stays off.  `handback` sets `yield_to_waiting_timings`
(the hold given back between calls only while a timing waits: a byte the pool shares, no round trip otherwise),
e.g. `--workload rl --limit 64 --settings unlocked unlocked+handback`; the `yields/eval` column counts them
(stop 37 on an H100: 228.5 s against 104.8 s: it lost, since with eight workers some timing nearly always waits,
so every sharer gave its hold back after every call and waited for the queue of timings).
`profiler=WORD` sets the backend's `profiler_warm_up` (`cupti`, the default since stop 53: no torch.profiler, CUPTI's
activity API read directly; `unlocked`: every worker sets Kineto up at its start with no GPU hold, by a session that
launches no kernel; `startup`: a kernel under the start's shared hold).
Stop 38 on an H100 (64 RL): `unlocked+profiler=unlocked` 100.1 s against `unlocked` (then `startup`) 118.1 s,
statuses equal; `profiler=before_timing` (CUPTI set up only for candidates that passed correctness) had all 32
honest candidates `hacked` (apparently CUPTI misses kernels of modules loaded before it) and was removed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _common import fmt, print_table
from eval_throughput import run_tritongym
from kernelgym_throughput import bundled_candidates, rl_candidates

from tritongym.core.config import EvalConfig

RESULTS = Path(__file__).resolve().parent / "results"
OPTIONS = {"unlocked": "unlock_compiles", "yield": "yield_between_calls", "handback": "yield_to_waiting_timings"}


SECONDS = {"window": "timing_window_s", "shared": "shared_check_s"}  # `name=S` parts: timing options in seconds
COUNTS = {
    "workers": "workers_per_gpu",
    "spares": "spare_workers_per_gpu",
    "starts": "starts_at_once",
    "connections": "device_connections",
    # tasks per worker before it is replaced (1, the default: a fresh process and CUDA context per candidate); a
    # context's creation is serialised across the host (`fork_contention.py`), so `tasks=4` shows what that costs
    "tasks": "max_tasks_per_worker",
}  # `name=N` parts: backend options
# `name=word` parts: backend options by name (`profiler=startup`, `sched=yield`)
WORDS = {"profiler": "profiler_warm_up", "sched": "device_schedule"}


def backend_options(setting: str) -> dict:
    """The triton-cuda backend's options for a setting: `locked`, `unlocked`, `yield` and `name=value` parts
    (`window=S`, `shared=S`, `workers=N`, `spares=N`, `starts=N`, `connections=N`, `tasks=N`) joined by `+`; each
    named switch on, the others off.  With a `default` part the switches not named keep the backend's defaults instead
    (`default+workers=12`: today's defaults, 12 workers per GPU), where `workers=12` alone also turns off every
    switch it does not name (stop 57 compared `workers=16`, locked, with `default`)."""
    switches, timing, backend = set(), {}, {}
    parts = set(setting.split("+")) - {"locked"}
    keep_defaults = "default" in parts
    for part in parts - {"default"}:
        name, eq, value = part.partition("=")
        if not eq and name in OPTIONS:
            switches.add(name)
            continue
        if eq and name in WORDS:
            backend[WORDS[name]] = value
            continue
        if not eq or name not in SECONDS | COUNTS:
            raise SystemExit(
                f"unknown setting {part!r}: use locked, {', '.join(OPTIONS)}, "
                f"{', '.join(f'{n}=S' for n in SECONDS)}, {', '.join(f'{n}=N' for n in COUNTS)}, or a '+' mix"
            )
        try:
            if name in SECONDS:
                timing[SECONDS[name]] = float(value)
            else:
                backend[COUNTS[name]] = int(value)
        except ValueError:
            raise SystemExit(f"{part!r}: {name} takes a number, e.g. {name}=2") from None
    timing.update(
        {option: name in switches for name, option in OPTIONS.items() if name in switches or not keep_defaults}
    )
    return {"timing": timing, **backend}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=["locked", "unlocked", "yield", "unlocked+yield"])
    parser.add_argument("--size", choices=["cpu", "gpu"], default="gpu")
    parser.add_argument("--backend", default="triton-cuda")
    parser.add_argument("--limit", type=int, default=None, help="only the first N candidates")
    parser.add_argument("--workload", choices=["bundled", "rl"], default="bundled")
    parser.add_argument("--out", type=Path, default=RESULTS / "lock_options_ab.json")
    args = parser.parse_args()
    for setting in args.settings:
        backend_options(setting)  # every setting understood before anything runs
    cands = (bundled_candidates if args.workload == "bundled" else rl_candidates)(args.size)[: args.limit]
    report: dict = {"settings": args.settings, "workload": args.workload, "candidates": len(cands), "runs": {}}
    rows = []
    for setting in args.settings:
        options = {}
        if args.backend == "triton-cuda":
            options = backend_options(setting)
        config = EvalConfig(
            backend=args.backend, size=args.size, use_cache=args.workload == "rl", backend_options=options
        )
        with tempfile.TemporaryDirectory(prefix="lock-ab-") as tmp:
            summary = run_tritongym(setting, cands, config, Path(tmp) / "registry.db", [], None)["summary"]
        lock = next(iter(summary["gpu_lock_s"].values()), {})
        report["runs"][setting] = {k: summary[k] for k in ("wall_s", "statuses", "phases_s", "counts", "gpu_lock_s")}
        phases, counts, ran = summary["phases_s"], summary["counts"], summary["worker_evaluations"] or 1
        rows.append(
            [setting, fmt(summary["wall_s"]), json.dumps(summary["statuses"])]
            + [fmt(lock.get(state)) for state in ("exclusive", "draining", "shared", "idle")]
            # per evaluation: the worker's start before it (what spares hide), waits for the GPU lock and for a
            # worker; and how many ran again alone (out of memory beside others)
            + [fmt(phases.get(k, 0.0) / ran) for k in ("worker_startup", "gpu_lock_wait", "wait_worker")]
            + [fmt(counts.get("ran_alone", 0)), fmt(counts.get("yields", 0) / ran)]
        )
        print(" | ".join(rows[-1]), flush=True)  # a cut-off run's log keeps the settings it finished
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))  # after every setting: a cut-off run keeps its rows
    headers = ["setting", "wall s", "statuses", "exclusive s", "draining s", "shared s", "idle s"]
    headers += ["startup s/eval", "lock wait s/eval", "worker wait s/eval", "ran alone", "yields/eval"]
    print_table(f"GPU lock options, {len(cands)} {args.workload} candidates", headers, rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
