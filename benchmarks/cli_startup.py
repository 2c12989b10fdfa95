"""CLI start-up: wall time of everyday `tritongym` commands as processes, side by side with `import torch`.

The commands that never need torch (`--help`, `plugins`, `best`, `registry stats`, and an `eval` the
registry answers) must each finish in under 0.5 s; `python -c "import torch"` is measured in the same run
as the yardstick of what every command paid before torch became a lazy import.  Set-up (not timed): a
fresh registry in a temporary directory holding one evaluation of the bundled relu solution on
`triton-cpu`, so the timed `eval` is a cache hit.  Each command runs `--repeat` times after one untimed
warm run (the page cache and Python's bytecode cache are what a first run fills: PYTHONDONTWRITEBYTECODE is
removed from the commands' environment, as on a normal install; `--no-bytecode-cache` keeps every run
compiling from source, the worst case).  Each median is also given as a fraction of `import torch`'s, the
measure that holds on a machine other processes load (both slow down together): `tritongym --help` must stay
under `--help-ratio` (0.25) of it, since help reads only the commands' signatures (no API, evaluator or
registry; tests/test_cli_startup.py checks what it imports).  Prints a table and writes JSON (default
benchmarks/results/cli_startup.json); exits 1 if a command's median is over the limit, or help's ratio is.

    python benchmarks/cli_startup.py [--repeat 7] [--limit-s 0.5] [--help-ratio 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import fmt, print_table

REPO = Path(__file__).resolve().parents[1]


def tritongym_command() -> list[str]:
    """The console script next to this interpreter (what a user types), else `python -m tritongym`."""
    script = Path(sys.executable).parent / "tritongym"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tritongym"]


def wall_times(argv: list[str], cwd: str, env: dict[str, str], repeat: int) -> tuple[list[float], int]:
    """Seconds per run of `argv` (one untimed warm run first) and the last exit code."""
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    times, code = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        code = subprocess.run(argv, cwd=cwd, env=env, capture_output=True).returncode
        times.append(time.perf_counter() - started)
    return times, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per command")
    parser.add_argument("--limit-s", type=float, default=0.5, help="the floor: median wall seconds per command")
    parser.add_argument(
        "--help-ratio", type=float, default=0.25, help="the most `tritongym --help` may take, as a fraction of torch"
    )
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="set PYTHONDONTWRITEBYTECODE=1: every run compiles"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cli_startup.json")
    args = parser.parse_args()

    load_before = os.getloadavg()  # 1, 5 and 15 minutes: how busy the machine was (others' work included)
    tg = tritongym_command()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"TRITON_INTERPRET": "1"}
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    bytecode = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    work = tempfile.mkdtemp(prefix="tritongym-cli-startup-")
    try:
        shutil.copy(REPO / "tritongym" / "problems" / "solutions" / "relu.py", Path(work) / "relu.py")
        seeded = subprocess.run(
            [*tg, "eval", "relu.py", "--problem", "relu", "--backend", "triton-cpu", "--registry", "r.db"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        if seeded.returncode != 0:
            print(f"set-up failed: tritongym eval exited {seeded.returncode}\n{seeded.stdout}{seeded.stderr}")
            return 2
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"], False),
            ('python -c "import torch"', [sys.executable, "-c", "import torch"], False),
            ("tritongym --help", [*tg, "--help"], True),
            ("tritongym plugins", [*tg, "plugins"], True),
            ("tritongym best relu", [*tg, "best", "relu", "--registry", "r.db"], True),
            ("tritongym registry stats", [*tg, "registry", "stats", "--registry", "r.db"], True),
            (
                "tritongym eval (cached)",
                [*tg, "eval", "relu.py", "--problem", "relu", "--backend", "triton-cpu", "--registry", "r.db"],
                True,
            ),
        ]
        rows, records, over = [], [], []
        for label, argv, limited in cases:
            times, code = wall_times(argv, work, env, args.repeat)
            median = statistics.median(times)
            verdict = ("yes" if median < args.limit_s else "NO") if limited else "-"
            if limited and (median >= args.limit_s or code != 0):
                over.append(label)
            rows.append([label, fmt(median), fmt(min(times)), fmt(max(times)), code, verdict])
            records.append(
                {"command": label, "argv": argv[1:] if argv[0] == sys.executable else argv, "exit_code": code}
                | {"median_s": median, "min_s": min(times), "max_s": max(times), "times_s": times, "limited": limited}
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch_s = next(r["median_s"] for r in records if "torch" in r["command"])
    for row, record in zip(rows, records):
        record["torch_ratio"] = record["median_s"] / torch_s
        row.insert(2, f"{record['torch_ratio']:.2f}")
    help_ratio = next(r["torch_ratio"] for r in records if r["command"] == "tritongym --help")
    if help_ratio >= args.help_ratio:
        over.append(f"tritongym --help at {help_ratio:.2f}x import torch (limit {args.help_ratio}x)")
    print_table(
        f"CLI start-up on {platform.machine()}, {cpus} CPUs, {args.repeat} runs each, {bytecode}",
        ["command", "median s", "x torch", "min s", "max s", "exit", f"< {args.limit_s} s"],
        rows,
    )
    slowest = max((r for r in records if r["limited"]), key=lambda r: r["median_s"])
    print(
        f"slowest command: {slowest['command']} {slowest['median_s']:.3f} s, "
        f"{torch_s / slowest['median_s']:.1f}x faster than importing torch ({torch_s:.3f} s)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "python": platform.python_version(),
                "cpus": cpus,
                "repeat": args.repeat,
                "limit_s": args.limit_s,
                "help_ratio_limit": args.help_ratio,
                "load_average": {"before": load_before, "after": os.getloadavg()},
                "bytecode_cache": not args.no_bytecode_cache,
                "commands": records,
                "over_limit": over,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")
    if over:
        print(f"over {args.limit_s} s (or failed): {', '.join(over)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
