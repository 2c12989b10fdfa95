"""Training beside the judge (issue 40 item 1), on the CPU.

- admission: a trainer's GPU memory, declared to the pool (`WorkerPool.hold_outside`), shrinks what workers may
  reserve; a worker that no longer fits waits (seen as `MemoryBudget.waiting`, not a clock) and is admitted once
  the declaration allows it; the arithmetic of `gpu_budget_mb` / `alone_room_mb` with memory held outside;
- placement: `[placement]` resolved for one GPU, several, and `accelerate launch`'s ranks; its validation;
- the overlap switch: a policy on one of the judge's GPUs never generates while the judge works;
- the trainer's memory estimate, and the time split in every step's metrics and the step table.
"""

from __future__ import annotations

import threading

import pytest
from conftest import task_for

from tritongym.core.errors import ConfigError
from tritongym.core.learn.placement import Placement, place
from tritongym.core.learn.run_config import PlacementConfig, RunConfig, load_run_config
from tritongym.core.problems import load_problem
from tritongym.core.sandbox.gpu_pool import (
    CONTEXT_MB,
    MemoryBudget,
    PoolOptions,
    WorkerPool,
    alone_room_mb,
    gpu_budget_mb,
)

H100 = 81559.0


# --- admission -----------------------------------------------------------------------------------------------


def test_memory_held_outside_the_pool_comes_off_the_budget_and_the_room_alone():
    trainer = 20000.0
    budget = gpu_budget_mb(H100, keepers=4, workers=8, outside_mb=trainer)
    # the GPU less the trainer, the keepers' share of what the trainer leaves, contexts and the driver's margin
    assert budget == pytest.approx(0.95 * H100 - trainer - 0.25 * (H100 - trainer) - 12 * CONTEXT_MB)
    assert gpu_budget_mb(H100, 4, 8) - budget == pytest.approx(0.75 * trainer)
    # keepers started before the trainer declared keep their larger share: the budget counts it
    later = gpu_budget_mb(H100, 4, 8, outside_mb=trainer, keeper_cache=0.25 * H100)
    assert gpu_budget_mb(H100, 4, 8) - later == pytest.approx(trainer)
    assert alone_room_mb(H100, 4, 8) - alone_room_mb(H100, 4, 8, outside_mb=trainer) == pytest.approx(trainer)
    # never below a quarter of what the trainer leaves
    assert gpu_budget_mb(8000.0, 4, 8, outside_mb=4000.0) == pytest.approx(1000.0)


def test_a_resized_budget_keeps_its_grants_and_measures_waiting_reservations_against_the_new_capacity():
    budget = MemoryBudget(10000.0)
    held = budget.reserve(6000.0)
    assert budget.admits(3000.0)
    budget.resize(8000.0)  # a trainer declared 2000 MiB more
    assert budget.reserved_mb == held == 6000.0  # granted stays granted
    assert not budget.admits(3000.0) and budget.admits(2000.0)
    granted: list[float] = []
    waiter = threading.Thread(target=lambda: granted.append(budget.reserve(3000.0)))
    waiter.start()
    with budget.cond:
        assert budget.cond.wait_for(lambda: budget.waiting == 1, timeout=30)
    assert granted == []
    budget.resize(10000.0)  # the trainer's declaration lowered: the waiting reservation fits now
    waiter.join(30)
    assert granted == [3000.0] and budget.waiting == 0 and budget.peak_mb == 9000.0


def test_a_worker_that_would_overflow_beside_the_trainer_waits_and_is_admitted_once_it_fits():
    """A pool that sees the trainer's 9000 MiB (declared before it started: its keepers' cache share is of what the
    trainer leaves) on a GPU of 20000 MiB, with 4000 MiB already reserved by other work: the reference's build
    (1 GiB) fits, the candidate's worker (2 GiB) does not and waits; without the trainer's memory it is admitted."""
    total, trainer = 20000.0, 9000.0
    pool = WorkerPool(PoolOptions(gpus=["cpu"], workers_per_gpu=1, memory_mb=4096, outside_mb={"cpu": trainer}))
    try:
        assert pool.keeper("cpu").role_env()["TRITONGYM_KEEPER_OUTSIDE_MB"] == "9000"
        budget = pool.size_gpu("cpu", total)  # the CPU has no size: the test's GPU
        assert budget.capacity_mb == pytest.approx(gpu_budget_mb(total, pool.keepers_per_gpu, 1, trainer))
        other = budget.take(4000.0)
        need = 2048.0  # a small problem's worker (`TaskDriver.worker_need_mb`)
        assert not budget.admits(need)
        done: list = []
        relu = load_problem("relu")
        runner = threading.Thread(target=lambda: done.append(pool.run(task_for(relu, relu.solution), timeout_s=120)))
        runner.start()
        with budget.cond:
            assert budget.cond.wait_for(lambda: budget.waiting == 1, timeout=120), "the worker never waited"
        assert done == []
        pool.hold_outside("cpu", 0.0)  # the trainer gone: the same worker fits
        runner.join(120)
        assert done and done[0].error is None, done
        assert budget.admits(need)
        budget.release(other)
    finally:
        pool.close()


# --- placement -----------------------------------------------------------------------------------------------


def test_one_gpu_is_shared_and_two_split_policy_and_judge():
    one = place(PlacementConfig(), visible=[0])
    assert one == Placement(0, "cuda:0", (0,)) and one.shared
    two = place(PlacementConfig(), visible=[0, 1])
    assert two == Placement(0, "cuda:0", (1,)) and not two.shared
    every = place(PlacementConfig(judge_gpus="all"), visible=[0, 1])
    assert every.judge_gpus == (0, 1) and every.shared
    moved = place(PlacementConfig(policy_gpu=1), visible=[0, 1, 2])
    assert moved == Placement(1, "cuda:1", (0, 2))
    # numbered as eval.gpus numbers them: CUDA_VISIBLE_DEVICES=2,3 makes GPU 3 torch's cuda:1
    assert place(PlacementConfig(policy_gpu=3), visible=[2, 3]) == Placement(3, "cuda:1", (2,))
    assert place(PlacementConfig(), visible=[0, 1], eval_gpus=[0]).shared  # eval.gpus names the judge's
    assert place(PlacementConfig(), visible=[0, 1], gpu_judge=False).judge_gpus is None  # triton-cpu, Ray
    assert place(PlacementConfig(), visible=[]) == Placement()  # no GPU: the policy on the CPU
    with pytest.raises(ConfigError, match="not a visible GPU"):
        place(PlacementConfig(policy_gpu=5), visible=[0, 1])


def test_under_accelerate_launch_each_process_trains_on_its_gpu_and_judges_on_its_share_of_the_rest():
    def placed(processes: int, gpus: int, **config) -> list[Placement]:
        return [place(PlacementConfig(**config), list(range(gpus)), None, r, processes) for r in range(processes)]

    assert [(p.policy_gpu, p.judge_gpus) for p in placed(2, 4)] == [(0, (2,)), (1, (3,))]
    assert [(p.policy_gpu, p.judge_gpus) for p in placed(2, 2)] == [(0, (0,)), (1, (1,))]  # each on its own
    # fewer spare GPUs than processes: the rest judge on their own GPU; no GPU has two judges
    assert [p.judge_gpus for p in placed(4, 6)] == [(4,), (5,), (2,), (3,)]
    with pytest.raises(ConfigError, match='"all"'):
        placed(2, 4, judge_gpus="all")
    with pytest.raises(ConfigError, match="another process trains"):
        placed(2, 2, judge_gpus=[1, 0])
    with pytest.raises(ConfigError, match="LOCAL_RANK"):
        placed(2, 4, policy_gpu=0)


def test_placement_is_validated_with_the_run_config(tmp_path):
    config = RunConfig.model_validate({"placement": {"policy_gpu": 1, "judge_gpus": [0, 2]}})
    assert config.placement.judge_gpus == [0, 2]
    path = tmp_path / "run.toml"
    for text, message in (
        ('[placement]\njudge_gpus = "some"\n', "judge_gpus"),
        ("[placement]\njudge_gpus = []\n", "at least one"),
        ("[placement]\nnear = 1\n", "near"),
        ("[placement]\npolicy_gpu = -1\n", "policy_gpu"),
        ("[placement]\njudge_gpus = [1]\n[eval]\ngpus = [1]\n", "named twice"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_run_config(path)


# --- the overlap switch --------------------------------------------------------------------------------------


class ScriptedEngine:
    """Answers every conversation with the relu solution; notes whether the judge was busy at each call."""

    name = "scripted"

    def __init__(self, solution: str, judging: list[int]) -> None:
        self.text = f"```python\n{solution}\n```"
        self.judging = judging
        self.busy_at_calls: list[int] = []

    def generate(self, conversations):
        from tritongym.core.generation import Generation

        self.busy_at_calls.append(self.judging[0])
        return [Generation(text=self.text, token_ids=[1], logprobs=[0.0]) for _ in conversations]


@pytest.mark.parametrize("shared", [True, False])
def test_a_policy_on_the_judges_gpu_never_generates_while_the_judge_works(shared):
    from tritongym.core.config import EvalConfig
    from tritongym.core.eval.evaluate import Evaluator
    from tritongym.core.learn.interaction import Interaction
    from tritongym.core.learn.rollouts import RolloutRunner
    from tritongym.core.learn.run_setup import RunParts
    from tritongym.core.plugins import get_host

    relu = load_problem("relu", "cpu")
    judging = [0]  # evaluations running now
    engine = ScriptedEngine(relu.solution, judging)
    evaluator = Evaluator(EvalConfig(backend="triton-cpu", trials=1, workers=2), registry=None)
    evaluate_many = evaluator.evaluate_many

    def counted(pairs, on_result=None):
        judging[0] += 1
        try:
            return evaluate_many(pairs, on_result)
        finally:
            judging[0] -= 1

    evaluator.evaluate_many = counted
    placement = Placement(0, "cuda:0", (0,) if shared else (1,))
    config = RunConfig.model_validate({"rollout": {"overlap": True}, "interaction": {"max_turns": 2}})
    parts = RunParts(config, get_host(), [relu], evaluator, Interaction({"max_turns": 2}), None, engine, placement)
    try:
        runner = RolloutRunner.for_run(parts)
        batch = runner.collect([relu], samples=4)
    finally:
        evaluator.close()
    assert len(batch.turns) == 8 and all(r.correct for r in batch.turns), [r.feedback for r in batch.turns]
    assert batch.wait_s > 0  # the caller's wait for the judge, `time/judge_s` in a training step
    if shared:
        assert runner.overlap is False and batch.overlap_s == 0
        assert engine.busy_at_calls == [0, 0]  # one call per turn, never beside an evaluation
    else:
        assert runner.overlap is True and batch.overlap_s > 0
        assert len(engine.busy_at_calls) == 4  # two chunks take turns


# --- the trainer's memory and time ---------------------------------------------------------------------------


def test_the_memory_estimate_adds_up_the_trainers_parts():
    from tritongym.core.learn.gpu_memory import TRAINER_CONTEXT_MB, ModelShape, estimate_mb

    smollm2 = ModelShape(
        parameters=134_515_008, layers=30, hidden=576, intermediate=1536, kv_heads=3, head_dim=64, vocab=49152
    )
    mib = 2**20
    parts = estimate_mb(
        smollm2,
        engine_bytes=2,
        prompt_tokens=700,
        max_tokens=320,
        max_turns=1,
        generation_batch=4,
        micro_batch=4,
    )
    assert parts.policy_mb == pytest.approx(12 * smollm2.parameters / mib)  # fp32 weights + AdamW's two moments
    assert parts.engine_mb == pytest.approx(2 * smollm2.parameters / mib)  # the engine's bf16 copy
    kv = 2 * 30 * 3 * 64 * (700 + 320) * 4 * 2
    assert parts.generation_mb == pytest.approx((kv + 320 * 4 * 49152 * 4) / mib)
    assert parts.update_mb > 4 * smollm2.parameters / mib + 4 * 1020 * 49152 * 4 * 5 / mib  # grads and logits
    assert parts.total_mb > parts.policy_mb + parts.engine_mb + parts.update_mb + TRAINER_CONTEXT_MB
    # later turns carry the earlier replies and feedback: longer prompts, more memory
    assert estimate_mb(smollm2, engine_bytes=2, prompt_tokens=700, max_tokens=320, max_turns=3, generation_batch=4,
                       micro_batch=4).total_mb > parts.total_mb  # fmt: skip
    # no engine copy on this GPU: no KV cache either
    assert estimate_mb(smollm2, engine_bytes=0, prompt_tokens=700, max_tokens=320, max_turns=1, generation_batch=4,
                       micro_batch=4).generation_mb == 0  # fmt: skip


def tiny_relu_run(tmp_path, size: str, **sections) -> RunConfig:
    """One RL step of a tiny model on relu whose prefill is the bundled solution (so its kernel is judged correct),
    with `sections` replacing the config's tables."""
    from tritongym.core.generation import TinyModelSpec
    from tritongym.core.learn.model_loading import build_tiny_model

    solution = load_problem("relu", size).solution
    tiny = build_tiny_model(TinyModelSpec(directory=tmp_path / "tiny"))
    base = {
        "output_dir": str(tmp_path / "run"),
        "model": {"path": str(tiny)},
        "sampling": {"max_tokens": 2, "seed": 0},
        "interaction": {"max_turns": 1, "assistant_prefill": f"```python\n{solution}\n```\n"},
        "rollout": {"problems": ["relu"], "samples": 2, "prompts_per_step": 1},
        "optim": {"steps": 1, "micro_batch": 2},
    }
    return RunConfig.model_validate({**base, **sections})


# slow tier (8.5 s: a training run of its own): the fast tier trains end to end in test_trainer.py's
# test_full_loop_stores_every_turn_checkpoints_and_resumes, and shares the GPU with the trainer in
# test_a_worker_that_would_overflow_beside_the_trainer_waits_and_is_admitted_once_it_fits
@pytest.mark.slow
def test_every_step_splits_its_time_and_the_cpu_reports_no_gpu_memory(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from tritongym import api
    from tritongym.core.learn.run_setup import prepare_run
    from tritongym.core.learn.trainer import Trainer
    from tritongym.core.reports.metrics_report import step_line, step_table

    config = tiny_relu_run(
        tmp_path,
        "cpu",
        engine={"name": "transformers", "options": {"device": "cpu"}},
        eval={"backend": "triton-cpu", "trials": 1},
    )
    rows: list[dict] = []
    api.train(config, registry=False, on_step=rows.append)
    (row,) = rows
    for part in ("generate", "judge", "update", "push"):
        assert row[f"time/{part}_s"] >= 0, part
    assert row["time/judge_s"] > 0 and row["time/update_s"] > 0  # two kernels judged, one update
    assert sum(row[f"time/{p}_s"] for p in ("generate", "judge", "update", "push")) <= row["step_s"]
    assert not any(key.startswith(("memory/", "judge/")) for key in row)  # CUDA only
    assert "gen/judge/upd/push" in step_line(row)

    from rich.console import Console

    console = Console(width=300, record=True)
    console.print(step_table([{**row, "memory/generate_mb": 700.0, "memory/update_mb": 1500.0}]))
    text = console.export_text()
    assert "s gen/judge/upd/push" in text and "GPU MiB" in text and "1500" in text

    parts = prepare_run(config)  # the estimate weighs the same model on the CPU
    try:
        parts.engine.start(config.model, config.sampling)
        estimate = Trainer(parts).estimate_memory()
        params = sum(p.numel() for p in parts.engine.model.parameters())
        assert estimate.policy_mb == pytest.approx(12 * params / 2**20)
        assert estimate.engine_mb == 0  # the engine's copy is not on a GPU the trainer shares
    finally:
        parts.close()


@pytest.mark.gpu
def test_on_a_gpu_the_trainer_declares_its_memory_to_the_judge_it_shares_and_steps_measure_it(tmp_path):
    """One step on one GPU (the first visible, by its index as [placement] names it), policy and judge together: the
    trainer's estimate reaches the pool before the first worker, the step measures the trainer's memory per phase,
    and the pool's budget for that GPU holds the declaration."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("transformers")
    from tritongym import api
    from tritongym.core.learn.placement import visible_gpus

    gpu = visible_gpus()[0]
    config = tiny_relu_run(
        tmp_path,
        "gpu",
        sampling={"max_tokens": 4, "seed": 0},
        rollout={"problems": ["relu"], "samples": 2, "prompts_per_step": 1, "overlap": True},
        eval={"backend": "triton-cuda", "trials": 1, "backend_options": {"workers_per_gpu": 2}},
        placement={"policy_gpu": gpu, "judge_gpus": [gpu]},
    )
    rows: list[dict] = []
    api.train(config, registry=False, on_step=rows.append)
    (row,) = rows
    assert row["turn1/correct"] == 1.0, row
    for part in ("generate", "update", "push"):
        assert row[f"memory/{part}_mb"] > 0, part
    assert row["memory/declared_mb"] >= row["memory/estimate_mb"] > 0
    assert row[f"judge/cuda:{gpu}/outside_mb"] == row["memory/declared_mb"]
    assert 0 < row[f"judge/cuda:{gpu}/capacity_mb"]


# slow tier (50 s): a training run; the fast tier's is test_every_step_splits_its_time_and_the_cpu_reports_...
@pytest.mark.slow
def test_the_training_benchmark_runs_end_to_end_on_the_cpu(tmp_path):
    """`benchmarks/train_gpu.py --device cpu` with a tiny model: SFT, one RL step, the JSON and its time split."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("transformers")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "train_gpu.json"
    line = [sys.executable, "benchmarks/train_gpu.py", "--device", "cpu", "--tiny", "--steps", "1", "--sft-epochs", "1"]
    line += ["--samples", "2", "--max-tokens", "8", "--work", str(tmp_path / "work"), "--out", str(out)]
    done = subprocess.run(line, cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(out.read_text())
    assert results["sft"]["steps"] == 1 and len(results["sft"]["epoch_seconds"]) == 1
    (step,) = results["runs"]["cpu"]["steps"]
    assert all(f"time/{part}_s" in step for part in ("generate", "judge", "update", "push"))
    assert results["runs"]["cpu"]["checks"]["no_failure"]
