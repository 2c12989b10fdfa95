"""Judge the field corpus (benchmarks/field_corpus/): production Triton kernels, honest by construction.

Every kernel of the corpus is a library's own code (FlagGems, Liger-Kernel, ...) wrapped as a `ModelNew` against
the torch operation it implements, so any verdict but `ok` is a false refusal of the judge (or a wrapper bug:
see benchmarks/field_corpus/SOURCES.md).  Each repeat judges the whole corpus in one `evaluate_many` batch under
the default configuration (every check on, fresh secret seeds, no cache); the table gives each kernel's
statuses, and the JSON every verdict and every refusal with its message.  The JSON is rewritten (whole, by a
rename) after every verdict: the repeat in progress is its `partial`, so a run cut off by a time limit keeps what
it judged, and `--resume` judges only the rest of that repeat (a full repeat did not fit one 545 s call on one
H200, and a cut one used to keep nothing).

    python benchmarks/field_corpus.py --backend triton-cuda --repeats 5                  # gpu sizes, all kernels
    python benchmarks/field_corpus.py --backend triton-cpu --size cpu --limit 10         # the interpreter's share
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "field_corpus"
sys.path.insert(0, str(ROOT))

from tritongym.core.config import EvalConfig  # noqa: E402
from tritongym.core.eval.evaluate import Evaluator  # noqa: E402
from tritongym.core.plugins import PluginHost  # noqa: E402
from tritongym.core.problems import load_problem  # noqa: E402
from tritongym.core.source import kernel_id_of  # noqa: E402


def manifest() -> list[dict]:
    return json.loads((CORPUS / "manifest.json").read_text())["kernels"]


def select(kernels: list[dict], backend: str, only: list[str] | None, limit: int | None) -> list[dict]:
    """The kernels to judge: on `triton-cpu` those the interpreter runs; `--only` names; `--limit` takes the first N
    in turn from each library, so a small sample spans the libraries."""
    chosen = [k for k in kernels if (not only or k["name"] in only) and (backend != "triton-cpu" or not k["gpu_only"])]
    if limit is None:
        return chosen
    by_library: dict[str, list[dict]] = {}
    for k in chosen:
        by_library.setdefault(k["library"], []).append(k)
    picked: list[dict] = []
    while len(picked) < min(limit, len(chosen)):
        for rows in by_library.values():
            if rows and len(picked) < limit:
                picked.append(rows.pop(0))
    return picked


def judge(kernels: list[dict], backend: str, size: str, workers: int, timeout_s: int, on_verdict=None) -> dict:
    """One repeat: every kernel judged once, in one batch, under the default configuration; `on_verdict(name,
    result)` as each verdict comes."""
    config = EvalConfig(backend=backend, size=size, workers=workers, timeout_s=timeout_s, use_cache=False)
    evaluator = Evaluator(config, registry=None, host=PluginHost(load_entry_points=False))
    try:
        pairs = [
            (
                (CORPUS / "candidates" / f"{k['name']}.py").read_text(),
                load_problem(str(CORPUS / "problems" / f"{k['name']}.py"), size),
            )
            for k in kernels
        ]
        # by problem and kernel: two libraries' kernels of one operation share the problem (FlagGems's and attorch's
        # softmax), so the problem alone named one of them twice and the other never
        name_of = {(problem.key, kernel_id_of(source)): k["name"] for k, (source, problem) in zip(kernels, pairs)}

        def verdict(result) -> None:
            if on_verdict is not None:
                on_verdict(name_of[(result.problem_key, result.kernel_id)], result)

        results = evaluator.evaluate_many(pairs, on_result=verdict)
    finally:
        evaluator.close()
    return {k["name"]: r for k, r in zip(kernels, results)}


def row(result) -> dict:
    return {
        "status": result.status.value,
        "failed": [v.name for v in result.checks if not v.passed],
        "message": result.message[:600],
        "error": f"{result.error.kind}: {result.error.message[:600]}" if result.error else None,
        "speedup": result.speedup,
        "precision": next((v.reason[:200] for v in result.checks if v.name == "precision"), ""),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", choices=["triton-cpu", "triton-cuda"])
    parser.add_argument("--size", default=None, help="size preset (default: gpu on triton-cuda, cpu on triton-cpu)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="judge N kernels, taken in turn from each library")
    parser.add_argument("--only", nargs="*", default=None, help="kernel names (default: all)")
    parser.add_argument("--workers", type=int, default=None, help="sandboxes at once (default: 4, cpu count on CPU)")
    parser.add_argument("--timeout-s", type=int, default=300)
    parser.add_argument("--out", default=None, help="JSON path (default benchmarks/results/field_corpus-BACKEND.json)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="add to the repeats already in --out (same backend, size and kernels) until --repeats are done, "
        "judging first the rest of a repeat that was cut off",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        help="judge nothing: join the repeats of these JSON files (runs of the same kernels, backend and size, "
        "made side by side on different GPUs, say) into --out",
    )
    args = parser.parse_args()
    size = args.size or ("gpu" if args.backend == "triton-cuda" else "cpu")
    workers = args.workers or (4 if args.backend == "triton-cuda" else max(1, os.cpu_count() or 1))
    kernels = select(manifest(), args.backend, args.only, args.limit)
    out = Path(args.out or ROOT / "benchmarks" / "results" / f"field_corpus-{args.backend}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge:
        runs, device, repeats_on, wall_s = merged(args.merge, kernels, args.backend, size)
        payload = summary(kernels, runs, args, size, device, len(repeats_on), wall_s)
        payload["repeats_on"] = repeats_on
        payload["merged_from"] = [str(p) for p in args.merge]
        out.write_text(json.dumps(payload, indent=1) + "\n")
        print_table(kernels, runs)
        print(f"wrote {out}: {len(repeats_on)} repeats from {len(args.merge)} files")
        return
    runs: dict[str, list[dict]] = {k["name"]: [] for k in kernels}
    device, done, earlier_s, repeats_on, partial = None, 0, 0.0, [], {"parts": 0, "rows": {}}
    if args.resume and out.exists():
        runs, device, done, earlier_s, repeats_on, partial = resumed(out, kernels, args.backend, size)
        cut = len(partial["rows"])
        print(f"resuming {out}: {done} repeats done on {device}, {cut} kernels of the next", flush=True)
    started = time.perf_counter() - earlier_s

    def write(repeats_done: int) -> dict:
        payload = summary(kernels, runs, args, size, device, repeats_done, time.perf_counter() - started)
        payload["repeats_on"] = repeats_on
        if partial["rows"]:
            payload["partial"] = partial
        written = out.with_name(out.name + ".part")
        written.write_text(json.dumps(payload, indent=1) + "\n")
        written.replace(out)  # whole or not at all: a call cut off mid-write keeps the previous file
        return payload

    for repeat in range(done, args.repeats):
        began = time.perf_counter()
        rows = partial["rows"]
        todo = [k for k in kernels if k["name"] not in rows]
        partial["parts"] = partial["parts"] + 1 if rows else 1

        def judged(name: str, result, repeat: int = repeat, rows: dict = rows) -> None:
            nonlocal device
            rows[name] = row(result)
            device = device or (result.fingerprint.device_name if result.fingerprint else None)
            write(repeat)
            print(f"[{repeat + 1}/{args.repeats}] {len(rows)}/{len(kernels)} {name}: {result.status.value}", flush=True)

        results = judge(todo, args.backend, size, workers, args.timeout_s, on_verdict=judged) if todo else {}
        for k in kernels:
            runs[k["name"]].append(rows[k["name"]])
        repeats_on.append({**machine_of(results, time.perf_counter() - began), "parts": partial["parts"]})
        partial = {"parts": 0, "rows": {}}
        payload = write(repeat + 1)
        print(f"repeat {repeat + 1}/{args.repeats} done at {payload['wall_s']} s", flush=True)
    print_table(kernels, runs)
    print(f"wrote {out}")


def resumed(
    out: Path, kernels: list[dict], backend: str, size: str, flag: str = "--resume"
) -> tuple[dict, str, int, float, list, dict]:
    """The repeats an earlier run (another call on the device machine, say) wrote to `out`, and the repeat it was cut
    off in (`partial`: the rows judged so far, and `parts`, the calls that repeat has taken): a run that judged other
    kernels, another backend or size is not the same measurement, so it is refused rather than mixed in."""
    earlier = json.loads(out.read_text())
    names = [k["name"] for k in kernels]
    if earlier["backend"] != backend or earlier["size"] != size or sorted(earlier["runs"]) != sorted(names):
        raise SystemExit(f"{flag}: {out} holds another run (backend, size or kernels differ); give another --out")
    if len({len(rows) for rows in earlier["runs"].values()}) > 1:
        raise SystemExit(f"{flag}: {out} holds an unfinished repeat; give another --out")
    # Files written before repeats were recorded one by one say only the first repeat's device.
    repeats_on = earlier.get("repeats_on") or [{"device": earlier["device"], "gpus": None, "wall_s": None}] * int(
        earlier["repeats_done"]
    )
    partial = earlier.get("partial") or {"parts": 0, "rows": {}}
    if set(partial["rows"]) - set(names):
        raise SystemExit(f"{flag}: {out} holds an unfinished repeat of other kernels; give another --out")
    return earlier["runs"], earlier["device"], earlier["repeats_done"], earlier["wall_s"], list(repeats_on), partial


def merged(files: list[Path], kernels: list[dict], backend: str, size: str) -> tuple[dict, str, list, float]:
    """`--merge`: the repeats of several runs of one measurement joined, each file checked as `--resume` checks
    one; `wall_s` is the longest file's (runs side by side on different GPUs overlap in time)."""
    runs: dict[str, list[dict]] = {k["name"]: [] for k in kernels}
    device, repeats_on, wall_s = None, [], 0.0
    for path in files:
        more, device_of, _, seconds, on, partial = resumed(path, kernels, backend, size, "--merge")
        if partial["rows"]:
            raise SystemExit(f"--merge: {path} holds an unfinished repeat; finish it with --resume first")
        for name, rows in more.items():
            runs[name].extend(rows)
        device, repeats_on, wall_s = device or device_of, repeats_on + on, max(wall_s, seconds)
    return runs, device, repeats_on, wall_s


def machine_of(results: dict, wall_s: float) -> dict:
    """Where one repeat ran: a resumed file can gather repeats from several device calls, even several machines."""
    import torch

    names = {r.fingerprint.device_name for r in results.values() if r.fingerprint is not None}
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return {
        "device": ", ".join(sorted(n for n in names if n)),
        "gpus": gpus,
        "machine": platform.node(),
        "wall_s": round(wall_s, 1),
    }


def summary(kernels, runs, args, size, device, repeats_done, wall_s) -> dict:
    refusals = [
        {
            "kernel": name,
            "repeat": i,
            "status": r["status"],
            "failed": r["failed"],
            "message": r["message"],
            "error": r["error"],
        }
        for name, rows in runs.items()
        for i, r in enumerate(rows)
        if r["status"] != "ok"
    ]
    return {
        "machine": platform.node(),
        "backend": args.backend,
        "size": size,
        "device": device,
        "repeats_done": repeats_done,
        "wall_s": round(wall_s, 1),
        "kernels": len(kernels),
        "libraries": sorted({k["library"] for k in kernels}),
        "evaluations": sum(len(rows) for rows in runs.values()),
        "false_refusals": len(refusals),
        "refusals": refusals,
        "runs": runs,
    }


def print_table(kernels: list[dict], runs: dict[str, list[dict]]) -> None:
    library = {k["name"]: k["library"] for k in kernels}
    print(f"{'kernel':36s} {'library':14s} {'statuses':34s} failed checks")
    for name, rows in runs.items():
        statuses = " ".join(r["status"] for r in rows)
        failed = sorted({c for r in rows for c in r["failed"]})
        print(f"{name:36s} {library[name]:14s} {statuses:34s} {','.join(failed) or '-'}")
    refusals = [(name, r) for name, rows in runs.items() for r in rows if r["status"] != "ok"]
    total = sum(len(rows) for rows in runs.values())
    print(f"{total - len(refusals)}/{total} evaluations ok; {len(refusals)} false refusals")
    for name, r in refusals:
        print(f"  {name}: {r['status']} ({', '.join(r['failed']) or '-'}): {r['message'][:300]}")


if __name__ == "__main__":
    main()
