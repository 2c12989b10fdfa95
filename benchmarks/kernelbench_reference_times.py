"""KernelBench reference times: ours in the own class and under the field's convention, beside KernelBench's.

Issue 41 item 6.  For each KernelBench problem (read from `../shared/kernelbench`, never copied into the project) the
reference `Model` is built and timed in this process with tritongym's own timer (`measure/timing.py`'s `Timer`, the
keeper's: CUDA-graph replay, L2 flushed, median of a time budget) twice:

* `own_ms`: in its own precision class, as tritongym times the reference for `speedup` (`configure_precision` under
  `--precision`, default `tf32`: float32 matmuls and convolutions in TF32);
* `field_ms`: under the field's convention (`measure/field_convention.py`: float32 matmuls exact, cuDNN convolutions
  TF32, torch's defaults), as tritongym times it for `speedup_field`, which is where KernelBench's published eager
  baselines come from.

Beside them, KernelBench's published eager time of the problem (`results/timing/<--baseline>/baseline_time_torch.json`,
`mean` in ms; default `H100_Modal`, an H100 80GB HBM3), and the ratios ours / KernelBench's.  Each problem is put in a
family from the ops one forward runs at float32 (`field_convention.sensitive_ops`): `conv` (a cuDNN convolution or
RNN), `matmul` (a GEMM, no convolution), `other`; `differs` says whether tritongym would time the field's convention
apart (the policy's switches differ from the field's on an op the forward runs: the verdict's `field_convention`).
The summary gives the median ratios overall and per family.  Rows are printed as they finish, the table at the end;
the JSON (default benchmarks/results/kernelbench_reference_times.json) is rewritten after every problem, and
`--resume` skips the problems it already holds, so a run can be split over device calls.

On the CPU (a dry run, tiny problems: `--kernelbench DIR` with DIR/level1/*.py and DIR/results/timing/...) the times
are wall-clock medians of a few calls, the two conventions are one (torch has no TF32 there) and the ratios to an
H100's times mean nothing; the JSON says which device and timer made each number.

    python benchmarks/kernelbench_reference_times.py --levels 1 2 3 --out $OUT/kb_ref_times.json [--resume ...]
    python benchmarks/kernelbench_reference_times.py --limit 2 --kernelbench TINY_DIR --out /tmp/kb.json   # CPU
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from _common import build_model, fmt, load_module, make_inputs, median_ms, print_table

from tritongym.core.measure.field_convention import (
    CUDNN_OPS,
    FIELD_CONVENTION,
    MATMUL_OPS,
    differing_switches,
    field_switches,
    sensitive_ops,
)
from tritongym.core.worker.task_runner import configure_precision
from tritongym.core.worker_task import TimingOptions, WorkerTask

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "kernelbench_reference_times.json"
FAMILIES = ("matmul", "conv", "other")


def default_kernelbench() -> Path:
    """`../shared/kernelbench` beside the repository, else `shared/kernelbench` inside it (the device machine's)."""
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
        files = sorted(directory.glob("*.py"), key=lambda p: (_number(p), p.name))
        found += [(level, p) for p in files if not p.name.startswith("_")]
    return found


def published_times(kernelbench: Path, baseline: str) -> tuple[dict, str]:
    """KernelBench's published eager times: {level: {file name: mean ms}}, and the hardware they name."""
    path = kernelbench / "results" / "timing" / baseline / "baseline_time_torch.json"
    if not path.is_file():
        there = sorted(p.name for p in (kernelbench / "results" / "timing").glob("*") if p.is_dir())
        raise SystemExit(f"no {path}: pass --baseline, one of {', '.join(there) or 'none found'}")
    data = json.loads(path.read_text())
    times = {level: {name: entry["mean"] for name, entry in entries.items()} for level, entries in data.items()}
    hardware = next((e.get("hardware", "") for entries in data.values() for e in entries.values()), "")
    return times, hardware


def family(ops: list[str]) -> str:
    if any(op in CUDNN_OPS for op in ops):
        return "conv"
    return "matmul" if any(op in MATMUL_OPS for op in ops) else "other"


def time_reference(model, inputs: list, device: torch.device, timer, options: TimingOptions) -> float:
    """One timing of `model(*inputs)` in ms: tritongym's Timer on a GPU, a wall-clock median on the CPU."""
    if device.type == "cuda":
        stats, _ = timer.time_forward(lambda xs: model(*xs), [inputs], options)
        return stats.median_ms
    with torch.no_grad():
        return median_ms(lambda: model(*inputs), "cpu")


def measure(level: int, path: Path, device: torch.device, timer, args, workdir: str) -> dict:
    """One problem's row: our two times, its ops' family and whether tritongym would time the field apart."""
    row: dict = {"level": level, "problem": path.name, "status": "ok"}
    began = time.perf_counter()
    try:
        module = load_module(f"kb_{level}_{path.stem}".replace("-", "_"), path.read_text(), workdir)
        model = build_model(module, module.Model, str(device)).eval()
        inputs = make_inputs(module, 0, str(device))
        ops = sensitive_ops(model, inputs, ["matmul", "cudnn"])
        task = WorkerTask(problem_name=path.stem, problem_source="", precision=args.precision)
        options = TimingOptions(rep_ms=args.rep_ms)
        configure_precision(task)
        row["own_ms"] = time_reference(model, inputs, device, timer, options)
        with field_switches():
            row["field_ms"] = time_reference(model, inputs, device, timer, options)
        row.update(
            family=family(ops),
            fp32_ops=ops,
            differs=device.type == "cuda" and bool(sensitive_ops(model, inputs, differing_switches(args.precision))),
        )
    except Exception as exc:  # noqa: BLE001 - one problem's failure is its row; the sweep goes on
        row.update(status="error", message=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    row["seconds"] = round(time.perf_counter() - began, 3)
    return row


def with_ratios(row: dict, published: dict) -> dict:
    kb = published.get(f"level{row['level']}", {}).get(row["problem"])
    row["kernelbench_ms"] = kb
    for key in ("own", "field"):
        ours = row.get(f"{key}_ms")
        row[f"{key}_ratio"] = ours / kb if ours and kb else None
    return row


def summary_of(rows: list[dict]) -> dict:
    """Median ratios ours / KernelBench's, both ways, overall and per family (problems with both numbers)."""

    def medians(chosen: list[dict]) -> dict:
        out = {"problems": len(chosen)}
        for key in ("own", "field"):
            values = [r[f"{key}_ratio"] for r in chosen if r.get(f"{key}_ratio")]
            out[f"median_{key}_ratio"] = statistics.median(values) if values else None
        return out

    timed = [r for r in rows if r["status"] == "ok" and r.get("kernelbench_ms")]
    found = {"overall": medians(timed)}
    for name in FAMILIES:
        found[name] = medians([r for r in timed if r.get("family") == name])
    found["timed_apart"] = sum(bool(r.get("differs")) for r in rows)
    found["errors"] = sum(r["status"] != "ok" for r in rows)
    found["no_published_time"] = sum(r["status"] == "ok" and not r.get("kernelbench_ms") for r in rows)
    return found


def write_json(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(json.dumps(report, indent=2, default=str))
    partial.replace(path)


def print_rows(rows: list[dict], title: str) -> None:
    print_table(
        title,
        ["problem", "family", "apart", "ours own ms", "ours field ms", "KB ms", "own/KB", "field/KB"],
        [
            [
                f"L{r['level']} {r['problem']}",
                r.get("family", r["status"]),
                "yes" if r.get("differs") else "",
                fmt(r.get("own_ms")),
                fmt(r.get("field_ms")),
                fmt(r.get("kernelbench_ms")),
                fmt(r.get("own_ratio")),
                fmt(r.get("field_ratio")),
            ]
            for r in rows
        ],
    )


def run(args) -> dict:
    kernelbench = Path(args.kernelbench) if args.kernelbench else default_kernelbench()
    published, hardware = published_times(kernelbench, args.baseline)
    files = problem_files(kernelbench, args.levels)
    if args.only:
        files = [(level, p) for level, p in files if any(name in p.stem for name in args.only)]
    done: list[dict] = []
    if args.resume and args.out.exists():
        done = json.loads(args.out.read_text()).get("rows", [])
    seen = {(r["level"], r["problem"]) for r in done}
    todo = [(level, p) for level, p in files if (level, p.name) not in seen]
    if args.limit is not None:
        todo = todo[: args.limit]
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    timer = None
    if device.type == "cuda":
        from tritongym.core.measure.timing import Timer

        torch.cuda.set_device(device)
        timer = Timer(device)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    report = {
        "benchmark": "kernelbench_reference_times",
        "kernelbench": str(kernelbench),
        "baseline": args.baseline,
        "baseline_hardware": hardware,
        "device": device_name,
        "timer": "tritongym Timer (CUDA graph, L2 flushed)" if device.type == "cuda" else "wall-clock median (CPU)",
        "precision": args.precision,
        "field_convention": FIELD_CONVENTION,
        "torch": torch.__version__,
        "rows": done,
    }
    print(f"{len(todo)} problems to time on {device_name} ({len(done)} already in {args.out})", flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kb-ref-times-") as workdir:
        for index, (level, path) in enumerate(todo, 1):
            row = with_ratios(measure(level, path, device, timer, args, workdir), published)
            report["rows"].append(row)
            report["summary"] = summary_of(report["rows"])
            write_json(args.out, report)
            what = row.get("message") or (
                f"own {fmt(row.get('own_ms'))} ms, field {fmt(row.get('field_ms'))} ms, KB {fmt(row['kernelbench_ms'])}"
                f" ms ({row.get('family')})"
            )
            print(f"[{index}/{len(todo)}] L{level} {path.name}: {what} ({time.perf_counter() - started:.0f} s)")
    report["summary"] = summary_of(report["rows"])
    write_json(args.out, report)
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", default=None, help="the directory holding level1/ ... and results/timing/")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--only", nargs="*", default=[], help="problems whose file name contains one of these")
    parser.add_argument("--limit", type=int, default=None, help="time at most this many problems (after --resume)")
    parser.add_argument("--baseline", default="H100_Modal", help="results/timing/<this>/baseline_time_torch.json")
    parser.add_argument("--precision", default="tf32", choices=["ieee", "tf32", "half"], help="the own class's policy")
    parser.add_argument("--rep-ms", type=float, default=100.0, help="timing budget per convention (Timer's rep_ms)")
    parser.add_argument("--cpu", action="store_true", help="time on the CPU even where CUDA is present")
    parser.add_argument("--resume", action="store_true", help="skip the problems --out already holds")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    report = run(args)
    rows = report["rows"]
    print_rows(
        rows, f"KernelBench reference times on {report['device']} vs {args.baseline} ({report['baseline_hardware']})"
    )
    s = report["summary"]
    for name in ("overall", *FAMILIES):
        m = s[name]
        print(
            f"{name}: {m['problems']} problems, median ours/KB own class {fmt(m['median_own_ratio'])}, "
            f"field convention {fmt(m['median_field_ratio'])}"
        )
    print(f"timed apart: {s['timed_apart']}; errors: {s['errors']}; no published time: {s['no_published_time']}")
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
