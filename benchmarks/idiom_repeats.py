"""The honest idioms of tests/hacks/honest/, each judged several times under the default configuration.

A check that catches hacks by refusing honest code is broken, and a rare false positive (a split-K sum whose
atomics reorder, a timing that drifts) shows only over repeats.  Every idiom of `HONEST_CASES` is evaluated
`--repeats` times (fresh secret seeds, no cache), one `evaluate_many` batch per repeat; the table gives each
idiom's statuses, the checks that failed (if any), its precision class and its median speedup and PR.  The
JSON is rewritten after every repeat, so a call cut off by its time limit keeps what it measured.

    python benchmarks/idiom_repeats.py --repeats 5                   # triton-cuda, gpu sizes
    python benchmarks/idiom_repeats.py --backend triton-cpu --repeats 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hacks._harness import HONEST, evaluate_cases  # noqa: E402
from tests.hacks.test_honest import HONEST_CASES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", choices=["triton-cpu", "triton-cuda"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=4, help="sandboxes at once")
    parser.add_argument("--only", nargs="*", default=None, help="idiom files to run (default: all)")
    parser.add_argument("--out", default=None, help="JSON path (default benchmarks/results/idiom_repeats.json)")
    args = parser.parse_args()
    cases = [c for c in HONEST_CASES if not args.only or c.file in args.only]
    out = Path(args.out or ROOT / "benchmarks" / "results" / "idiom_repeats.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {c.id: [] for c in cases}
    started = time.perf_counter()
    for repeat in range(args.repeats):
        results = evaluate_cases(
            cases, args.backend, folder=HONEST, trials=5, timeout_s=300, workers=args.workers, use_cache=False
        )
        for case in cases:
            r = results[case.id]
            precision = next((v.reason for v in r.checks if v.name == "precision"), "")
            runs[case.id].append(
                {
                    "repeat": repeat,
                    "status": r.status.value,
                    "failed": [v.name for v in r.checks if not v.passed],
                    "message": r.message[:400],
                    "speedup": r.speedup,
                    "pr": r.pr,
                    "precision": precision[:200],
                    "lazy": next((v.reason[:200] for v in r.checks if v.name == "torch_compute"), ""),
                }
            )
        payload = {
            "machine": platform.node(),
            "backend": args.backend,
            "repeats_done": repeat + 1,
            "wall_s": round(time.perf_counter() - started, 1),
            "device": results[cases[0].id].fingerprint.device_name,
            "runs": runs,
        }
        out.write_text(json.dumps(payload, indent=1))
        print(f"repeat {repeat + 1}/{args.repeats} done at {payload['wall_s']} s", flush=True)
    print_table(runs)


def print_table(runs: dict[str, list[dict]]) -> None:
    print(f"{'idiom':48s} {'statuses':30s} {'failed checks':24s} {'class':6s} {'speedup':>8s} {'PR':>6s}")
    bad = 0
    for case_id, rows in runs.items():
        statuses = " ".join(r["status"] for r in rows)
        failed = sorted({name for r in rows for name in r["failed"]})
        bad += sum(r["status"] != "ok" for r in rows)
        speeds = [r["speedup"] for r in rows if r["speedup"]]
        prs = [r["pr"] for r in rows if r["pr"] is not None]
        cls = rows[0]["precision"].split(" ")[2] if rows and rows[0]["precision"].startswith("precision class") else "-"
        speed = f"{statistics.median(speeds):.2f}" if speeds else "-"
        pr = f"{statistics.median(prs):.2f}" if prs else "-"
        print(f"{case_id:48s} {statuses:30s} {','.join(failed) or '-':24s} {cls:6s} {speed:>8s} {pr:>6s}")
    total = sum(len(rows) for rows in runs.values())
    print(f"{total - bad}/{total} evaluations ok")


if __name__ == "__main__":
    main()
