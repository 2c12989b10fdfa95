"""One candidate per interesting path on `triton-cuda`, printed in full: the first thing to run on a GPU.

    python benchmarks/gpu_smoke.py [PROBLEM ...]

Evaluates each named suite problem's solution (default: relu, softmax, matmul) and prints status,
runtimes, the timing report and the profile, so a new machine or a protocol change is checked by eye
before the benchmarks and the GPU tests run.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem
from tritongym.core.registry import Registry


def main(names: list[str]) -> None:
    names = names or ["relu", "softmax", "matmul"]
    registry = Registry(Path(tempfile.mkdtemp()) / "registry.db")
    began = time.perf_counter()
    with Evaluator(
        EvalConfig(backend="triton-cuda", size="gpu", use_cache=False), registry, PluginHost(load_entry_points=False)
    ) as evaluator:
        problems = [load_problem(n, "gpu") for n in names]
        for result in evaluator.evaluate_many([(p.solution, p) for p in problems]):
            print(json.dumps(result.model_dump(mode="json", exclude={"fingerprint"}), indent=1)[:6000])
            print(
                f"== {result.problem_id}: {result.status.value} runtime {result.runtime_ms} ms "
                f"ref {result.ref_runtime_ms} ms speedup {result.speedup} pr {result.pr} "
                f"worker {result.duration_s:.2f} s"
            )
    print(f"total {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
