"""The TRL and verl reward adapters (`tritongym.adapters`), on real triton-cpu evaluations.

TRL's `GRPOTrainer` runs two steps on the tiny Llama with the tritongym reward; verl is not installed
here, so its functions are held to verl's documented contract (`compute_score(data_source, solution_str,
ground_truth, extra_info)` -> float or a dict with "score"; the batch manager's list form).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import RELU_KERNEL
from tritongym.adapters import verl
from tritongym.adapters.scoring import NO_CODE, EvaluationClient, InProcessClient, ServiceClient
from tritongym.adapters.trl import TritonGymReward, completion_text, prompt_rows
from tritongym.core.errors import ConfigError

HONEST = f"Here is the kernel.\n```python\n{RELU_KERNEL}```\n"
WRONG = f"```python\n{RELU_KERNEL.replace('tl.maximum(x, 0.0)', 'x')}```"
# hacked in a way only the worker's probes see: softmax through Triton only when no grad is recorded
HACKED_SOURCE = (Path(__file__).parent / "hacks" / "candidates" / "grad_mode_shortcut.py").read_text()


@pytest.fixture
def client(evaluator) -> InProcessClient:
    return InProcessClient(evaluator)


class TrlLoggers:
    """TRL's `log_metric` / `log_extra` callbacks, recording what they were given."""

    def __init__(self) -> None:
        self.metrics: dict[str, list[float]] = {}
        self.extra: dict[str, list] = {}

    def log_metric(self, name: str, value: float) -> None:
        self.metrics.setdefault(name, []).append(value)

    def log_extra(self, column: str, values: list) -> None:
        self.extra.setdefault(column, []).extend(values)


def test_trl_reward_judges_each_completion_and_logs_the_verdicts(client):
    reward = TritonGymReward(client=client)
    assert isinstance(client, EvaluationClient)
    loggers = TrlLoggers()
    completions = [
        [{"role": "assistant", "content": HONEST}],  # conversational
        WRONG,  # standard
        [{"role": "assistant", "content": "I would use a Triton kernel."}],
    ]
    rewards = reward(
        prompts=["p"] * 3,
        completions=completions,
        completion_ids=[[1]] * 3,
        problem=["relu"] * 3,
        trainer_state=None,
        log_metric=loggers.log_metric,
        log_extra=loggers.log_extra,
    )
    assert rewards == [1.0, 0.0, 0.0]  # correctness 1; speed and PR are absent on triton-cpu
    assert [s.status for s in reward.last] == ["ok", "incorrect", NO_CODE]
    assert loggers.metrics == {
        "tritongym/correct": [pytest.approx(1 / 3)],
        "tritongym/hacked": [0.0],
        "tritongym/no_code": [pytest.approx(1 / 3)],
    }
    assert loggers.extra["tritongym_status"] == ["ok", "incorrect", NO_CODE]
    assert loggers.extra["tritongym_message"][2].startswith("nothing was evaluated: ")


def test_trl_reward_names_a_missing_problem_column(client):
    with pytest.raises(ConfigError, match="no 'problem' column.*columns: task"):
        TritonGymReward(client=client)(prompts=["p"], completions=[HONEST], task=["relu"])


def test_completion_text_reads_every_trl_completion_form():
    assert completion_text("x") == "x"
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"}]) == "a"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "b"}]}]) == "b"


def test_prompt_rows_carry_tritongym_s_task_prompt():
    rows = prompt_rows(["relu", "softmax"])
    assert [r["problem"] for r in rows] == ["relu", "softmax"]
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    assert "ModelNew" in rows[0]["prompt"][1]["content"]


def test_verl_compute_score_follows_verl_s_contract(client):
    verl.use_client(client)
    try:
        honest = verl.compute_score("tritongym", HONEST, "relu", extra_info={"index": 0})
        by_extra_info = verl.compute_score("tritongym", WRONG, None, {"problem": "relu"})
        batch = verl.compute_score_batch(
            data_sources=["tritongym"] * 3,
            solution_strs=[HONEST, f"```python\n{HACKED_SOURCE}```", "no code"],
            ground_truths=["relu", "softmax", "relu"],
            extra_infos=[None, {}, None],
        )
    finally:
        verl.use_client(None)
    assert honest["score"] == 1.0 and honest["status"] == "ok" and honest["correct"] == 1.0
    assert by_extra_info["score"] == 0.0 and by_extra_info["status"] == "incorrect"
    assert [b["status"] for b in batch] == ["ok", "hacked", NO_CODE]
    assert batch[1]["hacked"] == 1.0 and batch[1]["score"] == client.evaluator.config.hack_penalty
    # verl gathers every key of every response into reward_extra_info: the keys must be the same for all
    assert {tuple(sorted(d)) for d in [honest, by_extra_info, *batch]} == {tuple(sorted(honest))}
    assert all(isinstance(d["score"], float) for d in batch)
    assert math.isnan(honest["speedup"])  # triton-cpu does not time: no speedup, not a zero


def test_verl_compute_score_builds_its_evaluator_from_reward_kwargs(tmp_path, monkeypatch):
    config = tmp_path / "eval.toml"
    config.write_text('backend = "triton-cpu"\ntrials = 2\nworkers = 1\n')
    registry = tmp_path / "registry.db"
    monkeypatch.setattr(verl, "_clients", {})
    first = verl.compute_score("tritongym", HONEST, "relu", config=str(config), registry=str(registry))
    again = verl.compute_score("tritongym", HONEST, "relu", config=str(config), registry=str(registry))
    assert first["status"] == again["status"] == "ok"
    (built,) = verl._clients.values()
    assert built.evaluator.config.trials == 2
    assert built.evaluator.registry.db["evaluations"].count == 1  # the second answer came from the registry
    built.close()


def test_grpo_trainer_trains_with_the_tritongym_reward(tmp_path, evaluator):
    """Two GRPO steps on the tiny Llama: every completion's code is judged for real (the prompt opens a
    ```python block, so even a random model's tokens are code to evaluate) and the reward and verdicts
    reach TRL's logged metrics."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from tritongym.core.generation import ModelSpec, TinyModelSpec
    from tritongym.core.learn.model_loading import load_model, load_tokenizer

    spec = ModelSpec(tiny=TinyModelSpec(directory=tmp_path / "tiny"))
    tokenizer = load_tokenizer(spec)
    prefill = "```python\n"
    dataset = Dataset.from_list(
        [{"prompt": f"Write ModelNew for {name} with Triton.\n{prefill}", "problem": name} for name in ("relu", "silu")]
    )
    reward = TritonGymReward(evaluator, assistant_prefill=prefill)
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=16,
        max_steps=2,
        logging_steps=1,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=load_model(spec), reward_funcs=reward, args=args, train_dataset=dataset, processing_class=tokenizer
    )
    trainer.train()
    logged = [row for row in trainer.state.log_history if "rewards/tritongym/mean" in row]
    assert len(logged) == 2
    for row in logged:
        assert row["rewards/tritongym/mean"] == pytest.approx(row["reward"])
        assert {"tritongym/correct", "tritongym/hacked", "tritongym/no_code"} <= row.keys()
    judged = [s for s in reward.last if s.result is not None]
    assert judged, "the random completions were expected to hold code to judge"
    assert evaluator.registry.db["evaluations"].count >= len(judged)


def test_both_adapters_judge_through_a_real_service_on_loopback(tmp_path, monkeypatch):
    """The same rewards through `tritongym serve` (a real uvicorn process) as in process; the service's
    registry holds the verdicts, and a problem given as a file travels as its reference source."""
    import test_service  # its `Served` helper: one `python -m tritongym serve` process

    served = test_service.Served(tmp_path / "service", token=test_service.TOKEN)
    try:
        client = ServiceClient(served.url, test_service.TOKEN, timeout_s=180)
        assert isinstance(client, EvaluationClient)
        reward = TritonGymReward(client=client)
        assert reward(prompts=["p"] * 2, completions=[HONEST, WRONG], problem=["relu"] * 2) == [1.0, 0.0]
        assert [s.status for s in reward.last] == ["ok", "incorrect"]
        assert client.client.best("relu") is not None  # stored by the service, the one writer
        reference = tmp_path / "my_relu.py"
        reference.write_text(test_service.RELU_REFERENCE)
        monkeypatch.setenv("TRITONGYM_SERVICE_TOKEN", test_service.TOKEN)  # how verl's reward_kwargs get it
        scored = verl.compute_score("tritongym", HONEST, str(reference), None, service=served.url)
        assert scored["score"] == 1.0 and scored["status"] == "ok"
    finally:
        served.stop_gracefully()
