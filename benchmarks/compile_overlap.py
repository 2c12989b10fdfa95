"""Compilation overlapping timing: judging throughput and timing with and without the lock release.

A GPU worker compiles its candidate's Triton kernels (LLVM and ptxas: CPU work) inside the first call,
while it holds the GPU shared with other workers' correctness trials.  With
`TimingOptions.unlock_compiles` on (off by default) it gives that shared hold back while the compiler
runs, so a timing waiting for the GPU alone does not wait for compilers, and takes it back ahead of
timings still waiting.  This runs eval_throughput's (a) (the
registry cache off, the same 64 candidates) alternately with the option on and off, `--rounds` times
each, in one process on one device, and reports:

* wall time and candidates per minute of each run, and the summed seconds per stage;
* whether the measurements move: for every candidate that is `ok` in every run, the relative difference
  of its median `speedup` between the two settings, against the same difference between two runs of one
  setting (the noise floor).

Prints a table and writes JSON (default benchmarks/results/compile_overlap.json).

    python benchmarks/compile_overlap.py [--rounds 2] [--problems 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from _common import fmt, print_table
from candidate_set import build_candidate_set, interleaved
from eval_throughput import run_tritongym

from tritongym.core.config import EvalConfig

SETTINGS = {"unlocked": True, "locked": False}


def relative_gap(x: float, y: float) -> float:
    return abs(x - y) / ((x + y) / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"])
    parser.add_argument("--problems", type=int, default=8, help="problems in the candidate set (8 variants each)")
    parser.add_argument("--limit", type=int, default=None, help="use only N candidates (mixed), for smoke tests")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each setting, alternating")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "compile_overlap.json")
    args = parser.parse_args()

    cands = interleaved(build_candidate_set(args.size, args.problems))[: args.limit]
    print(f"{len(cands)} candidates, {args.rounds} round(s) of {', '.join(SETTINGS)}", flush=True)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="compile-overlap-") as tmp:
        for round_ in range(args.rounds):
            order = list(SETTINGS) if round_ % 2 == 0 else list(reversed(SETTINGS))  # ABBA: drift cancels
            for name in order:
                # only the GPU backend has the option (a CPU smoke run compares a setting with itself)
                options = {"timing": {"unlock_compiles": SETTINGS[name]}} if args.backend == "triton-cuda" else {}
                config = EvalConfig(backend=args.backend, size=args.size, use_cache=False, backend_options=options)
                label = f"{name} #{round_ + 1}"
                run = run_tritongym(label, cands, config, Path(tmp) / f"{name}-{round_}.db", [], None)
                runs.append({"setting": name, "round": round_ + 1, **run})

    every_ok = [
        i
        for i in range(len(cands))
        if all(r["results"][i].status.value == "ok" and r["results"][i].speedup for r in runs)  # CPU: no speedup
    ]

    def speedups(setting: str, i: int) -> list[float]:
        return [r["results"][i].speedup for r in runs if r["setting"] == setting]

    across, within = [], []
    for i in every_ok:
        on, off = speedups("unlocked", i), speedups("locked", i)
        across.append(relative_gap(statistics.median(on), statistics.median(off)))
        for values in (on, off):
            if len(values) >= 2:
                within.append(relative_gap(values[0], values[1]))

    rows = []
    for r in runs:
        s = r["summary"]
        stages = s["phases_s"]
        rows.append(
            [
                f"{r['setting']} #{r['round']}",
                s["candidates"],
                fmt(s["wall_s"]),
                fmt(s["per_min"]),
                fmt(stages.get("compile_unlocked", 0.0)),
                ", ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items())),
            ]
        )
    print_table(
        f"compilation overlapping timing on {platform.node()}",
        ["run", "candidates", "wall s", "per min", "compile s unlocked", "statuses"],
        rows,
    )
    per_min = {name: [r["summary"]["per_min"] for r in runs if r["setting"] == name] for name in SETTINGS}
    summary = {
        "per_min_median": {name: statistics.median(v) for name, v in per_min.items()},
        "speedup_gap_between_settings_median": statistics.median(across) if across else None,
        "speedup_gap_between_settings_max": max(across) if across else None,
        "speedup_gap_within_setting_median": statistics.median(within) if within else None,
        "speedup_gap_within_setting_max": max(within) if within else None,
        "candidates_ok_in_every_run": len(every_ok),
    }
    print(
        f"candidates per minute, median: unlocked {fmt(summary['per_min_median']['unlocked'])}, "
        f"locked {fmt(summary['per_min_median']['locked'])}"
    )
    if across:
        print(
            f"speedup gap over {len(every_ok)} ok candidates: between settings median "
            f"{summary['speedup_gap_between_settings_median']:.2%} "
            f"(max {summary['speedup_gap_between_settings_max']:.2%}); "
            + (
                f"within one setting median {summary['speedup_gap_within_setting_median']:.2%} "
                f"(max {summary['speedup_gap_within_setting_max']:.2%})"
                if within
                else "within one setting: needs --rounds 2"
            )
        )
    device_name = next((r.fingerprint.device_name for run in runs for r in run["results"] if r.fingerprint), "")
    report = {
        "device_name": device_name,
        "host": platform.node(),
        "settings": {**vars(args), "out": str(args.out), "cpu_count": os.cpu_count()},
        "summary": summary,
        "runs": [
            {
                "setting": r["setting"],
                "round": r["round"],
                "summary": r["summary"],
                "speedups": [x.speedup for x in r["results"]],
                "statuses": [x.status.value for x in r["results"]],
            }
            for r in runs
        ],
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
