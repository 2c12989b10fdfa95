"""Ray executor throughput: evaluations per second through Ray with 1 actor, with N actors, and in-process.

One run, one machine, the same candidate set (`candidate_set.py`: shipped solutions plus slowed, wrong,
crashing and unparseable variants, 8 per problem), registry cache off, judged three ways side by side:

(local)   `executor = "local"`: the in-process worker pool over every visible GPU (today's default);
(ray x1)  `executor = "ray"`, one actor: one GPU's pool, driven through Ray;
(ray xN)  `executor = "ray"`, one actor per GPU (`--actors`, default: the cluster's GPUs).

Each configuration first judges a warm-up batch (one solution per actor, excluded from the timing) so
every pool has started; wall time is measured around one `evaluate_many` over the whole set, and actor
start-up is reported apart as setup.  Reported: evaluations per second, the speedup over (local), status
counts, and how many candidates got the same ok/not-ok verdict as under (local).  Prints a table and
writes JSON (default benchmarks/results/ray_throughput.json).

    python benchmarks/ray_throughput.py                              # GPUs: triton-cuda, gpu sizes
    python benchmarks/ray_throughput.py --backend triton-cpu --size cpu --problems 2 --actors 2
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter
from pathlib import Path

from _common import fmt, print_table
from candidate_set import build_candidate_set, interleaved

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate, EvaluationResult
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem


def judge(label: str, cands: list[tuple[str, str, str]], config: EvalConfig) -> dict:
    problems = {name: load_problem(name, config.size) for name in dict.fromkeys(c[0] for c in cands)}
    started = time.perf_counter()
    evaluator = Evaluator(config, registry=None, host=PluginHost(load_entry_points=False))
    try:
        actors = len(evaluator.executor.actors) if config.executor == "ray" else 0
        warm = [(Candidate(source=p.solution), p) for p in list(problems.values())[: max(1, actors)] if p.solution]
        evaluator.evaluate_many(warm)
        setup_s = time.perf_counter() - started
        print(f"({label}) {evaluator.backend_name} on {evaluator.device_class}, setup {setup_s:.1f} s", flush=True)
        pairs = [(Candidate(source=src), problems[name]) for name, _, src in cands]
        clock = time.perf_counter()
        results: list[EvaluationResult] = evaluator.evaluate_many(pairs)
        wall_s = time.perf_counter() - clock
        retried = getattr(evaluator.executor, "retried", 0)
    finally:
        evaluator.close()
    statuses = Counter(r.status.value for r in results)
    print(f"({label}) {len(results)} in {wall_s:.1f} s: {dict(statuses)}", flush=True)
    return {
        "label": label,
        "actors": actors,
        "candidates": len(results),
        "wall_s": wall_s,
        "setup_s": setup_s,
        "per_s": len(results) / wall_s if wall_s else None,
        "statuses": dict(statuses),
        "retried": retried,
        "device_class": evaluator.device_class,
        "config": config.model_dump(),
        "verdicts": [r.status.value for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", help="tritongym backend")
    parser.add_argument("--size", default="gpu", choices=["cpu", "gpu"], help="problem size preset")
    parser.add_argument("--problems", type=int, default=8, help="problems in the candidate set (8 variants each)")
    parser.add_argument("--limit", type=int, default=None, help="use only N candidates (mixed), for smoke tests")
    parser.add_argument("--actors", type=int, default=None, help="actors of the widest Ray run (default: GPUs)")
    parser.add_argument("--workers", type=int, default=None, help="EvalConfig.workers of the local run (CPU)")
    parser.add_argument("--ray", default="local", help="Ray address: local (start one here), auto, or HOST:PORT")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "ray_throughput.json")
    args = parser.parse_args()

    import ray

    ray.init(address=None if args.ray == "local" else args.ray, include_dashboard=False, log_to_driver=False)
    resources = ray.cluster_resources()
    widest = args.actors or int(resources.get("GPU", 0)) or int(resources.get("CPU", 1))
    cands = interleaved(build_candidate_set(args.size, args.problems))[: args.limit]
    print(f"{len(cands)} candidates over {len(dict.fromkeys(c[0] for c in cands))} problems; {resources}", flush=True)
    common: dict = {"backend": args.backend, "size": args.size, "use_cache": False}
    local_common = {**common, "workers": args.workers} if args.workers else common
    runs = [judge("local", cands, EvalConfig(**local_common))]
    for actors in dict.fromkeys((1, widest)):
        config = EvalConfig(**common, executor="ray", ray={"address": args.ray, "actors": actors})
        runs.append(judge(f"ray x{actors}", cands, config))
    ray.shutdown()

    base = runs[0]
    for run in runs:
        run["x_local"] = run["per_s"] / base["per_s"] if run["per_s"] and base["per_s"] else None
        run["same_verdict_as_local"] = sum(
            (a == "ok") == (b == "ok") for a, b in zip(run["verdicts"], base["verdicts"], strict=True)
        )
    print_table(
        f"evaluations per second on {runs[0]['device_class']} ({platform.node()})",
        ["", "actors", "candidates", "wall s", "setup s", "per s", "x local", "same verdict", "statuses"],
        [
            [
                r["label"],
                r["actors"] or "-",
                r["candidates"],
                fmt(r["wall_s"]),
                fmt(r["setup_s"]),
                fmt(r["per_s"]),
                fmt(r["x_local"]),
                f"{r['same_verdict_as_local']}/{r['candidates']}",
                ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items())),
            ]
            for r in runs
        ],
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"problem": name, "variant": variant} for name, variant, _ in cands]
    for run in runs:
        for row, verdict in zip(rows, run.pop("verdicts")):
            row[run["label"]] = verdict
    args.out.write_text(
        json.dumps({"runs": runs, "candidates": rows, "ray_resources": resources}, indent=2, default=str) + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
