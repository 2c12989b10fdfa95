"""The RL trainer end to end on the CPU: a tiny model, the transformers engine and the triton-cpu backend.

- the full loop (TRLOO + MRS + PRS) for 2 steps on 2 problems, every turn in the registry, checkpoints and
  `--resume`, metrics, plot and the saved model;
- learning: with a cheap deterministic reward the mean reward of the last steps is clearly above the first;
- data-parallel invariance: `accelerate launch` with 2 processes gives the same loss and update as one;
- the CLI: `tritongym train` and `tritongym rollouts`.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from tritongym import api  # noqa: E402
from tritongym.core.generation import TinyModelSpec  # noqa: E402
from tritongym.core.learn.model_loading import build_tiny_model  # noqa: E402
from tritongym.core.learn.run_config import RunConfig  # noqa: E402
from tritongym.core.registry import Registry  # noqa: E402

HERE = Path(__file__).parent

PARSES_REWARD = '''
"""Learning-test reward: 1 when the extracted code parses (cheap: no worker ever runs), else 0."""
from tritongym import hookimpl
from tritongym.core.interfaces import Reward
from tritongym.core.models import Status


class Parses(Reward):
    name = "parses"

    def score(self, result):
        return 0.0 if result.status == Status.compile_error else 1.0


@hookimpl
def register_rewards(register):
    register(Parses)
'''


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_model(TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="module")
def short_prompts(tmp_path_factory) -> dict[str, str]:
    """A system line and a task of the problem's name and reference code, no example: `loop_config` changes
    that name them.  The bundled templates and example make a prompt of about 1500 of the tiny tokenizer's
    tokens, and the tiny model's cost is that prompt's attention, in every generation and every update; what
    the bundled templates put in a prompt is test_interaction.py's (its first prompt's reference, example and
    contract)."""
    folder = tmp_path_factory.mktemp("templates")
    (folder / "system.md").write_text("You write Triton kernels.\n")
    (folder / "task.md").write_text(
        "Turn $turn of $max_turns: $problem_name in Triton.\n```python\n$reference_code\n```\n"
    )
    (folder / "example.md").write_text("")
    return {
        "interaction__system_template": str(folder / "system.md"),
        "interaction__task_template": str(folder / "task.md"),
        "interaction__example_file": str(folder / "example.md"),
    }


def loop_config(tiny_dir: Path, out: Path, **changes) -> RunConfig:
    data = {
        "name": "loop",
        "output_dir": str(out),
        "seed": 0,
        "model": {"path": str(tiny_dir)},
        "engine": {"name": "transformers", "options": {"device": "cpu", "batch_size": 8}},
        "sampling": {"temperature": 1.0, "max_tokens": 12, "seed": 1},
        "interaction": {"max_turns": 2, "assistant_prefill": "```python\n"},
        "rollout": {"problems": ["relu", "softmax"], "samples": 2, "prompts_per_step": 2},
        "eval": {"backend": "triton-cpu"},
        "learning": {"estimator": "trloo", "filters": {"mrs": {}, "prs": {}}},
        "optim": {"lr": 1e-4, "steps": 2, "micro_batch": 4, "checkpoint_every": 1},
    }
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        data[section][key] = value
    return RunConfig.model_validate(data)


# slow tier (10 s: two runs, one resumed): the fast tier trains through the loop in
# test_weights_reach_the_engine_after_each_step and
# test_a_training_step_with_hrd_gives_plan_and_code_tokens_their_own_advantages
@pytest.mark.slow
def test_full_loop_stores_every_turn_checkpoints_and_resumes(tiny_dir, tmp_path, short_prompts):
    config = loop_config(tiny_dir, tmp_path / "run", sampling__max_tokens=6, **short_prompts)
    registry = Registry(tmp_path / "registry.db")
    summary = api.train(config, registry=registry)

    assert summary.steps == 2 and summary.resumed_from is None
    turns = registry.turns(summary.run_id)
    assert len(turns) == 2 * 2 * 2 * 2  # steps x problems x samples x turns
    assert {t["step"] for t in turns} == {0, 1}
    assert {t["problem_name"] for t in turns} == {"relu", "softmax"}
    for t in turns:
        assert t["status"] and t["response"] is not None and json.loads(t["prompt"])[0]["role"] == "system"
        assert t["advantage"] is not None and t["kept"] in (0, 1)
        assert (t["evaluation_id"] is None) == (t["status"] == "no_code")

    lines = [json.loads(line) for line in Path(summary.metrics_file).read_text().splitlines()]
    assert [m["step"] for m in lines] == [0, 1]
    for key in ("reward", "turn1/correct", "turn2/fast@1.2", "mrs/rejected", "prs/rejected", "mismatch_kl", "entropy"):
        assert key in lines[0], key
    assert lines[0]["grad_norm"] >= 0 and lines[0]["tokens_per_s"] > 0
    assert Path(summary.plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "run" / "checkpoints" / "step-2" / "trainer_state.json").is_file()

    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(summary.model_dir)  # the saved policy loads

    again = api.train(config, registry=registry, steps=3, resume=True)
    assert again.resumed_from == 2 and again.steps == 3
    lines = [json.loads(line) for line in Path(again.metrics_file).read_text().splitlines()]
    assert [m["step"] for m in lines] == [0, 1, 2]
    assert {t["step"] for t in registry.turns(again.run_id)} == {2}


@pytest.fixture
def parses_plugin(tmp_path) -> str:
    plugin = tmp_path / "parses.py"
    plugin.write_text(PARSES_REWARD)
    return str(plugin)


def test_weights_reach_the_engine_after_each_step(tiny_dir, tmp_path, parses_plugin):
    import torch

    from tritongym.core.learn.run_setup import prepare_run
    from tritongym.core.learn.trainer import Trainer

    config = loop_config(
        tiny_dir,
        tmp_path / "run",
        optim__lr=1e-2,
        interaction__max_turns=1,
        sampling__max_tokens=1,
        rollout__samples=4,
        eval__rewards={"parses": 1.0},
    )
    parts = prepare_run(config, extra_plugins=[parses_plugin])
    try:
        parts.engine.start(config.model, config.sampling)
        trainer = Trainer(parts)
        before = {k: v.clone() for k, v in parts.engine.model.state_dict().items()}
        trainer.train_step()
        trained = trainer.accelerator.unwrap_model(trainer.model).state_dict()
        engine = parts.engine.model.state_dict()
        assert any(not torch.equal(before[k], engine[k]) for k in engine)
        for name, tensor in engine.items():
            assert torch.equal(tensor, trained[name].to(tensor.dtype)), name
    finally:
        parts.close()


# slow tier (71 s): twelve steps; the fast tier trains end to end in test_full_loop_stores_every_turn_...
@pytest.mark.slow
def test_reward_rises_with_a_cheap_deterministic_reward(tiny_dir, tmp_path, parses_plugin):
    """A one-token bandit: after the ```python prefill the model writes one token, rewarded 1 when the code
    parses.  The policy gradient must raise the parse rate well above where it starts."""
    short = tmp_path / "templates"
    short.mkdir()
    (short / "system.md").write_text("You write Python.\n")
    (short / "task.md").write_text("Code for $problem_name:\n$reference_code\n")
    (short / "example.md").write_text("")
    config = loop_config(
        tiny_dir,
        tmp_path / "run",
        sampling__max_tokens=1,
        interaction__max_turns=1,
        interaction__system_template=str(short / "system.md"),
        interaction__task_template=str(short / "task.md"),
        interaction__example_file=str(short / "example.md"),
        rollout__samples=8,
        eval__rewards={"parses": 1.0},
        learning__estimator="rloo",
        learning__filters={},
        optim__lr=2e-2,
        optim__steps=12,
        optim__micro_batch=16,
        optim__checkpoint_every=100,
    )
    rewards: list[float] = []
    api.train(config, registry=False, extra_plugins=[parses_plugin], on_step=lambda m: rewards.append(m["reward"]))
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last > first + 0.3 and last >= 0.75, rewards  # seen: about 0.4 -> 0.9-1.0 over 12 steps


# slow tier (46 s): two `accelerate launch` processes; the fast tier trains one in test_full_loop_...
@pytest.mark.slow
def test_data_parallel_step_equals_one_process(tiny_dir, tmp_path):
    """The same global batch, trained by one process and by two under `accelerate launch`: same loss, same
    gradient norm, same updated weights.  (On a CPU, accelerate's `--cpu --num_processes 2` starts one
    process unless MPI is set up; `--multi_gpu` launches through torchrun, which on a CPU gives gloo.)"""
    script = HERE / "scripts" / "dp_train_step.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE.parent)}
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    subprocess.run([sys.executable, str(script), str(tiny_dir), str(one)], check=True, env=env, timeout=300)
    # `accelerate launch` through this interpreter: the venv's accelerate whether or not its bin is on PATH
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    launch += ["--num_machines", "1"]
    launch += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29517"]
    subprocess.run([*launch, str(script), str(tiny_dir), str(two)], check=True, env=env, timeout=300)
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert (a["world"], b["world"]) == (1, 2)
    for key in ("loss", "grad_norm", "entropy", "kept_rows", "mrs/rejected", "prs/rejected"):
        assert b["metrics"][key] == pytest.approx(a["metrics"][key], rel=1e-5, abs=1e-7), key
    assert 0 < a["metrics"]["kept_rows"] < 1 and a["metrics"]["loss"] != 0
    import torch

    # Adam's first step is about lr x sign(gradient): compare whole update vectors, not single elements
    # (where a gradient is ~0, float noise may flip a sign)
    ua, ub = torch.load(f"{one}.update.pt"), torch.load(f"{two}.update.pt")
    for name, delta in ua.items():
        assert delta.norm() > 0, name
        assert (ub[name] - delta).norm() <= 1e-3 * delta.norm(), name


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tritongym", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def _write_config(path: Path, tiny_dir: Path, out: Path) -> Path:
    path.write_text(
        f"""
name = "cli"
output_dir = "{out}"
[model]
path = "{tiny_dir}"
[engine]
name = "transformers"
options = {{ device = "cpu" }}
[sampling]
max_tokens = 8
seed = 3
[interaction]
max_turns = 1
assistant_prefill = "```python\\n"
[rollout]
problems = ["relu", "softmax"]
samples = 2
prompts_per_step = 2
[eval]
backend = "triton-cpu"
[optim]
steps = 1
micro_batch = 2
"""
    )
    return path


# slow tier (63 s): the CLI's rollouts and train on the loop test_full_loop_... runs in-process (fast)
@pytest.mark.slow
def test_cli_rollouts_and_train(tiny_dir, tmp_path):
    config = _write_config(tmp_path / "run.toml", tiny_dir, tmp_path / "out")
    db = str(tmp_path / "registry.db")
    done = _cli("rollouts", str(config), "--json", "--registry", db, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["turns"] == 4 and sum(summary["statuses"].values()) == 4
    lines = Path(summary["trajectories_file"]).read_text().splitlines()
    assert len(lines) == 4 and {json.loads(x)["problem"] for x in lines} == {"relu", "softmax"}
    assert len(Registry(db).turns(summary["run_id"])) == 4

    done = _cli("train", str(config), "--registry", db, "--set", "optim.lr=0.001", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 steps" in done.stdout and "metrics.png" in done.stdout
    assert (tmp_path / "out" / "model" / "config.json").is_file()


def _hand_turn(trainer, problem, trajectory: int, response: str, components: dict):
    """A turn as rollouts make it, with a response we wrote: the engine's ids and log-probs are the real
    tokenizer's and model's (what the engine would have returned), the reward is given."""
    from tritongym.core.generation import Generation
    from tritongym.core.learn.model_loading import render_prompt
    from tritongym.core.learn.rollouts import TurnRecord
    from tritongym.core.learn.token_rows import TokenRow
    from tritongym.core.models import RewardBreakdown

    messages = trainer.parts.interaction.first_messages(problem)
    prompt = render_prompt(trainer.tokenizer, messages)
    ids = trainer.tokenizer(response, add_special_tokens=False)["input_ids"] + [trainer.tokenizer.eos_token_id]
    (logprobs,) = trainer.old_logprobs([TokenRow(prompt, ids)])
    generation = Generation(text=response, prompt_token_ids=prompt, token_ids=ids, logprobs=logprobs)
    reward = RewardBreakdown(total=sum(components.values()), components=components)
    code = trainer.parts.interaction.extract(response).code
    return TurnRecord(problem, 0, trajectory, trajectory, 0, messages, generation, code, None, reward, "", "ok")


def test_a_training_step_with_hrd_gives_plan_and_code_tokens_their_own_advantages(tiny_dir, tmp_path):
    import torch

    from tritongym.core.learn.run_setup import prepare_run
    from tritongym.core.learn.trainer import Trainer

    config = loop_config(
        tiny_dir,
        tmp_path / "run",
        interaction__max_turns=1,
        interaction__assistant_prefill="",
        learning__estimator="hrd",
        learning__filters={},
        optim__lr=1e-2,
        optim__micro_batch=2,
    )
    parts = prepare_run(config)
    try:
        trainer = Trainer(parts)
        problem = parts.problems[0]
        code = "```python\nimport triton\n\nclass ModelNew:\n    pass\n```"
        records = [
            _hand_turn(
                trainer, problem, 0, f"Fuse the max into one pass.\n{code}\nDone.", {"correctness": 1.0, "speedup": 2.0}
            ),
            _hand_turn(trainer, problem, 1, f"Copy, then clamp.\n{code}", {"correctness": 0.0}),
        ]
        before = [p.detach().clone() for p in trainer.model.parameters()]
        metrics, batch = trainer.learn(records, step=0)
        assert 0 < metrics["hrd/code_tokens"] < 1 and metrics["grad_norm"] > 0 and math.isfinite(metrics["loss"])
        assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))
        signal = parts.learning.build(batch)
        for row, (plan, code_advantage) in enumerate([(0.1 * 2.0, 1.0), (0.1 * -2.0, -1.0)]):
            tokens = batch.tokens[row]
            is_code = batch.code_mask[row] & tokens
            ids = records[row].generation.token_ids
            assert bool(is_code.any()) and bool((tokens & ~is_code).any())  # both spans present
            assert signal.advantages[row][is_code].tolist() == pytest.approx([code_advantage] * int(is_code.sum()))
            plan_tokens = tokens & ~is_code
            assert signal.advantages[row][plan_tokens].tolist() == pytest.approx([plan] * int(plan_tokens.sum()))
            code_text = trainer.tokenizer.decode([t for t, c in zip(ids, is_code.tolist()) if c])
            assert code_text.strip().startswith("```python") and code_text.strip().endswith("```")
    finally:
        parts.close()


# slow tier (7 to 11 s: a training run of its own): the fast tier trains end to end in
# test_full_loop_stores_every_turn_checkpoints_and_resumes, and test_hrd.py checks hrd's advantages and the
# learning signal that carries them (test_the_learning_signal_carries_hrds_token_advantages)
@pytest.mark.slow
def test_train_with_hrd_on_the_tiny_model(tiny_dir, tmp_path, parses_plugin):
    """One real RL step (rollouts through the transformers engine, the gym, the registry) with `hrd` chosen."""
    config = loop_config(
        tiny_dir,
        tmp_path / "run",
        interaction__max_turns=1,
        sampling__max_tokens=6,
        rollout__samples=4,
        eval__rewards={"parses": 1.0},
        learning__estimator="hrd",
        learning__estimator_options={"code_components": {"parses": 1.0}, "plan_components": {"parses": 1.0}},
        learning__filters={},
        optim__steps=1,
    )
    registry = Registry(tmp_path / "registry.db")
    summary = api.train(config, registry=registry, extra_plugins=[parses_plugin])
    (metrics,) = [json.loads(line) for line in Path(summary.metrics_file).read_text().splitlines()]
    assert metrics["hrd/code_tokens"] > 0 and math.isfinite(metrics["loss"]) and metrics["grad_norm"] >= 0
    turns = registry.turns(summary.run_id)
    assert len(turns) == 2 * 4 and all(t["advantage"] is not None for t in turns)
