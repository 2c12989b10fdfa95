"""The precision class tritongym measures for GEMMs written the ways public Triton code writes them.

Each candidate is evaluated on a float32 problem under the `tf32` policy (the default) and under `ieee`, one
process, no registry: the table gives the status, the precision class reached, the candidate's error against
the float64 gold and the reference's own at its dtype, the precision the reference was timed in, and the
speedup.  The default candidates are honest idioms of tests/hacks/honest/: an autotuned GEMM with a default
`tl.dot` (TF32 on the GPU), one whose tiles are cast to float16 before `tl.dot`, and one asking for
`input_precision="tf32"`.

    python benchmarks/precision_classes.py                            # triton-cuda, gpu sizes
    python benchmarks/precision_classes.py --backend triton-cpu       # the interpreter: every dot is exact
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from tritongym.core.config import EvalConfig
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import EvaluationResult
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import load_problem

HONEST = Path(__file__).resolve().parents[1] / "tests" / "hacks" / "honest"
DEFAULT = ["matmul_rect_autotune.py:matmul_rect", "matmul_fp16_operands.py:matmul", "matmul_tf32.py:matmul"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton-cuda", choices=["triton-cpu", "triton-cuda"])
    parser.add_argument("pairs", nargs="*", default=DEFAULT, help="FILE:PROBLEM (FILE under tests/hacks/honest/)")
    parser.add_argument("--out", default=None, help="JSON path (default benchmarks/results/precision_classes.json)")
    args = parser.parse_args()
    size = "gpu" if args.backend == "triton-cuda" else "cpu"
    rows = []
    for policy in ("tf32", "ieee"):
        config = EvalConfig(backend=args.backend, size=size, precision=policy, use_cache=False, workers=1)
        with Evaluator(config, registry=None, host=PluginHost(load_entry_points=False)) as evaluator:
            pairs = []
            for pair in args.pairs:
                name, problem = pair.split(":")
                path = Path(name) if "/" in name else HONEST / name
                pairs.append((path.read_text(), load_problem(problem, size)))
            for pair, result in zip(args.pairs, evaluator.evaluate_many(pairs)):
                rows.append(row(pair, policy, result))
                print(json.dumps(rows[-1]), flush=True)
    print_table(rows)
    out = Path(args.out or Path(__file__).parent / "results" / "precision_classes.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": platform.node(), "backend": args.backend, "rows": rows}, indent=1))


def row(pair: str, policy: str, result: EvaluationResult) -> dict:
    verdict = next((v for v in result.checks if v.name == "precision"), None)
    return {
        "candidate": pair,
        "policy": policy,
        "status": result.status.value,
        "precision_class": precision_class(verdict.reason) if verdict else None,
        "precision_reason": verdict.reason if verdict else result.message,
        "reference_timed_in": result.timing.precision if result.timing else None,
        "speedup": result.speedup,
        "device": result.fingerprint.device_name,
    }


def precision_class(reason: str) -> str | None:
    words = reason.split()
    return words[words.index("class") + 1] if "class" in words else None


def print_table(rows: list[dict]) -> None:
    header = f"{'candidate':42s} {'policy':6s} {'status':9s} {'class':9s} {'ref timed':9s} {'speedup':>8s}"
    print(header)
    for r in rows:
        speed = f"{r['speedup']:.2f}" if r["speedup"] else "-"
        print(
            f"{r['candidate']:42s} {r['policy']:6s} {r['status']:9s} {str(r['precision_class']):9s} "
            f"{str(r['reference_timed_in']):9s} {speed:>8s}"
        )


if __name__ == "__main__":
    main()
