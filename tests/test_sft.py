"""Cold-start SFT: examples from trajectory files and bundled solutions, the assistant-only mask, and a short
training run on a tiny model (CPU)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import torch  # noqa: E402

from tritongym.core.errors import ConfigError  # noqa: E402
from tritongym.core.generation import ModelSpec, TinyModelSpec  # noqa: E402
from tritongym.core.learn.interaction import Interaction, extract_code  # noqa: E402
from tritongym.core.learn.model_loading import CHATML_TEMPLATE, IM_END, load_tokenizer  # noqa: E402
from tritongym.core.learn.run_config import RunConfig  # noqa: E402
from tritongym.core.learn.sft import SFT_METRICS, SFTTrainer, masked_nll, run_sft  # noqa: E402
from tritongym.core.learn.sft_data import SFTExample, read_trajectories, solution_examples  # noqa: E402
from tritongym.core.learn.sft_masks import tokenize_example  # noqa: E402
from tritongym.core.problems import SOLUTIONS_DIR, suite_names, suite_problem  # noqa: E402

SYSTEM = {"role": "system", "content": "You write fast kernels."}
USER = {"role": "user", "content": "Write a ReLU kernel."}
FIRST = {"role": "assistant", "content": "```python\nimport triton\n\ndef relu(x):\n    return x\n```"}
FEEDBACK = {"role": "user", "content": "Wrong result: max abs error 1.0. Try again."}
SECOND = {"role": "assistant", "content": "Fixed it:\n```python\nimport torch\nx = torch.relu(x)\n```"}
TWO_TURNS = [SYSTEM, USER, FIRST, FEEDBACK, SECOND]


@pytest.fixture(scope="module")
def tiny_spec(tmp_path_factory) -> ModelSpec:
    return ModelSpec(tiny=TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="module")
def tokenizer(tiny_spec):
    return load_tokenizer(tiny_spec)


def _runs(ids: list[int], mask: list[int]) -> list[list[int]]:
    """Maximal runs of masked tokens."""
    runs, current = [], []
    for token, m in zip(ids, mask):
        if m:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def _learned(tokenizer, row) -> list[str]:
    return [tokenizer.decode(run, skip_special_tokens=False) for run in _runs(row.input_ids, row.mask)]


# --- the mask --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("messages", [[SYSTEM, USER, FIRST], [USER, FIRST], TWO_TURNS])
def test_mask_is_exactly_the_replies_and_their_end_token(tokenizer, messages):
    row = tokenize_example(tokenizer, SFTExample(messages))
    rendered = tokenizer.apply_chat_template(messages, tokenize=False)
    assert tokenizer.decode(row.input_ids, skip_special_tokens=False) == rendered  # the whole conversation
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    assert _learned(tokenizer, row) == [reply + IM_END for reply in replies]
    context = tokenizer.decode([t for t, m in zip(row.input_ids, row.mask) if not m], skip_special_tokens=False)
    for message in messages:
        if message["role"] != "assistant":
            assert message["content"] in context  # system and user text is never learned
    assert "<|im_start|>assistant\n" in context  # nor the role header of a reply
    assert row.targets == sum(row.mask) and not row.truncated


def test_targets_pick_which_replies_are_learned(tokenizer):
    row = tokenize_example(tokenizer, SFTExample(TWO_TURNS, targets=(4,)))
    assert _learned(tokenizer, row) == [SECOND["content"] + IM_END]
    with pytest.raises(ValueError, match="not assistant"):
        tokenize_example(tokenizer, SFTExample(TWO_TURNS, targets=(3,)))


def test_mask_with_templates_that_are_not_prefix_consistent_or_rewrite_replies(tokenizer):
    # a header that depends on the whole conversation: renderings of prefixes are not prefixes
    counting = copy.deepcopy(tokenizer)
    counting.chat_template = "{{- messages | length }} messages\n" + CHATML_TEMPLATE
    row = tokenize_example(counting, SFTExample(TWO_TURNS))
    assert _learned(counting, row) == [FIRST["content"] + IM_END, SECOND["content"] + IM_END]

    # a template that trims replies: the trimmed text is what is learned
    trimming = copy.deepcopy(tokenizer)
    trimming.chat_template = CHATML_TEMPLATE.replace("message['content']", "(message['content'] | trim)")
    padded = {"role": "assistant", "content": "  answer  \n"}
    row = tokenize_example(trimming, SFTExample([USER, padded]))
    assert _learned(trimming, row) == ["answer" + IM_END]


def test_truncation_keeps_the_start(tokenizer):
    whole = tokenize_example(tokenizer, SFTExample(TWO_TURNS))
    cut = tokenize_example(tokenizer, SFTExample(TWO_TURNS), max_length=len(whole.input_ids) - 5)
    assert cut.truncated and len(cut.input_ids) == len(whole.input_ids) - 5
    assert cut.input_ids == whole.input_ids[: len(cut.input_ids)] and cut.mask == whole.mask[: len(cut.mask)]
    assert not tokenize_example(tokenizer, SFTExample(TWO_TURNS), max_length=len(whole.input_ids)).truncated


# --- examples --------------------------------------------------------------------------------------------


def _turn(problem, trajectory, turn, response, correct=False, hacked=False, messages=None) -> dict:
    return {
        "problem": problem,
        "group": 0,
        "trajectory": trajectory,
        "sample": trajectory,
        "turn": turn,
        "messages": messages or [SYSTEM, {"role": "user", "content": f"{problem} turn {turn}"}],
        "response": response,
        "code": None,
        "status": "correct" if correct else "wrong",
        "reward": 1.0 if correct else 0.0,
        "correct": correct,
        "hacked": hacked,
    }


def _write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_trajectories_are_grouped_filtered_and_rebuilt(tmp_path):
    lines = [
        # turn 0 of every trajectory, then turn 1, as a rollout writes them; relu/0 and softmax/0 share an id
        _turn("relu", 0, 0, "r0"),
        _turn("softmax", 0, 0, "s0", correct=True),
        _turn("relu", 1, 0, "bad", hacked=True),
        _turn("relu", 2, 0, "ok", correct=True, hacked=True),
        "",
        _turn("relu", 1, 1, "good", correct=True),
        _turn("relu", 0, 1, "r1", correct=True, messages=[SYSTEM, USER, FIRST, FEEDBACK]),
        _turn("softmax", 0, 1, "s1"),
        # a second `tritongym rollouts` appended to the file: trajectory ids start again at 0
        _turn("relu", 0, 0, "again", correct=True),
    ]
    path = _write_jsonl(tmp_path / "t.jsonl", lines)
    examples = read_trajectories([path], prefill="```python\n")
    assert [e.source for e in examples] == [f"{path}:7", f"{path}:9"]
    first, again = examples
    assert first.messages == [SYSTEM, USER, FIRST, FEEDBACK, {"role": "assistant", "content": "```python\nr1"}]
    assert first.targets == (4,)  # the earlier, failed reply is context only
    assert again.messages[-1]["content"] == "```python\nagain"
    assert read_trajectories([path], earlier_turns=True)[0].targets is None

    everything = read_trajectories([path], only_correct=False)
    # softmax/0 ends incorrect but is kept; relu/1 and relu/2 hold a hacked turn and are always dropped
    assert [e.messages[-1]["content"] for e in everything] == ["r1", "s1", "again"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "not a JSON object"),
        (json.dumps({k: v for k, v in _turn("relu", 0, 0, "x").items() if k != "correct"}), "missing field correct"),
        (json.dumps(_turn("relu", "0", 0, "x")), "field trajectory must be int"),
        (json.dumps({**_turn("relu", 0, 0, "x"), "messages": [{"role": "user"}]}), r"messages\[0\]"),
    ],
    ids=["json", "object", "missing", "type", "message"],
)
def test_bad_lines_name_file_and_line(tmp_path, line, message):
    path = _write_jsonl(tmp_path / "bad.jsonl", [_turn("relu", 0, 0, "x", correct=True), "", line])
    with pytest.raises(ConfigError, match=rf"bad\.jsonl:3: .*{message}"):
        read_trajectories([path])


def test_missing_data_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        read_trajectories([tmp_path / "nope.jsonl"])


def test_bundled_solution_examples():
    solutions = sorted(p.stem for p in SOLUTIONS_DIR.glob("*.py"))
    assert solutions and set(solutions) <= set(suite_names())  # each solution file is named after its problem
    interaction = Interaction({"max_turns": 2})
    examples = {e.source: e for e in solution_examples(interaction)}
    with_solution = [name for name in suite_names() if suite_problem(name).solution is not None]
    assert sorted(examples) == sorted(f"solution:{name}" for name in with_solution)
    for name in with_solution:
        problem = suite_problem(name)
        messages = examples[f"solution:{name}"].messages
        assert messages[:-1] == interaction.first_messages(problem)
        reply = messages[-1]
        assert reply["role"] == "assistant" and reply["content"].startswith("```python\n")
        assert reply["content"].endswith("\n```")
        assert extract_code(reply["content"]).code == problem.solution.strip()
    assert [e.source for e in solution_examples(interaction, ["relu", "softmax"])] == [
        "solution:relu",
        "solution:softmax",
    ]
    prefilled = solution_examples(Interaction({"assistant_prefill": "Here it is.\n"}), ["relu"])[0]
    assert prefilled.messages[-1]["content"].startswith("Here it is.\n```python\n")


# --- training --------------------------------------------------------------------------------------------


def _config(tmp_path, spec, **sft) -> RunConfig:
    return RunConfig(
        output_dir=tmp_path / "run",
        model=spec,
        seed=3,
        sft={"lr": 3e-3, "micro_batch": 3, "epochs": 30, **sft},
        rollout={"problems": ["relu"]},
    )


def _correct_trajectories(path: Path) -> Path:
    replies = [
        "```python\nimport triton\n\ndef relu(x):\n    return x.clamp(min=0)\n```",
        "```python\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n```",
        "Done:\n```python\n" + "y = x * 2\n" * 30 + "```",  # long: cut by max_length below
    ]
    rows = [
        _turn(name, i, 0, reply, correct=True, messages=[SYSTEM, {"role": "user", "content": f"Task {name}."}])
        for i, (name, reply) in enumerate(zip(["relu", "gelu", "silu"], replies))
    ]
    return _write_jsonl(path, rows)


def test_loss_is_normalised_by_the_global_token_count(tiny_spec, tokenizer, tmp_path):
    """Splitting a step's rows into shards (processes), each padded on its own, gives the same gradient."""
    trainer = SFTTrainer(_config(tmp_path, tiny_spec))
    rows = [tokenize_example(tokenizer, SFTExample(m)) for m in ([USER, FIRST], TWO_TURNS, [SYSTEM, USER, SECOND])]
    model = trainer.model

    def grads(shards):
        model.zero_grad()
        total = sum(r.targets for r in rows)
        for shard in shards:
            summed, count = masked_nll(model, shard, trainer.pad_id)
            assert count == sum(r.targets for r in shard)
            (summed / total).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    whole = grads([rows])
    assert torch.allclose(whole, grads([rows[:1], rows[1:]]), atol=1e-6)
    assert torch.allclose(whole, grads([rows[::2], rows[1::2]]), atol=1e-6)


def test_sft_lowers_the_loss_and_saves_a_loadable_model(tiny_spec, tmp_path):
    from transformers import AutoModelForCausalLM

    from tritongym.core.learn.model_loading import load_model

    data = _correct_trajectories(tmp_path / "good.jsonl")
    config = _config(tmp_path, tiny_spec, max_length=100)
    seen = []
    summary = run_sft(config, data=[data], progress=lambda done, total: seen.append((done, total)))
    assert summary.examples == 3 and summary.truncated == 1 and summary.dropped == 0
    assert summary.steps == 30 == len(summary.losses) and seen[-1] == (30, 30)
    assert summary.last_loss < 0.5 * summary.first_loss, summary.losses
    assert summary.model_dir == str(tmp_path / "run" / "sft-model") and summary.data == [str(data)]
    logged = [json.loads(line) for line in (tmp_path / "run" / SFT_METRICS).read_text().splitlines()]
    assert [row["loss"] for row in logged] == summary.losses
    assert summary.tokens == sum(row["tokens"] for row in logged)

    # the saved directory is an RL run's `[model] path`, and it learned the data
    saved = ModelSpec(path=Path(summary.model_dir))
    trainer = SFTTrainer(config.model_copy(update={"model": saved}))
    examples = read_trajectories([data])
    rows = trainer.tokenize(examples)
    with torch.no_grad():
        summed, count = masked_nll(load_model(saved), rows, trainer.pad_id)
    assert float(summed) / count < 0.5 * summary.first_loss
    assert trainer.tokenizer.chat_template == CHATML_TEMPLATE

    # and from_pretrained gives exactly the trained model: train two steps in memory, save, reload
    short = SFTTrainer(_config(tmp_path, tiny_spec, epochs=2))
    short.train(short.tokenize(examples))
    out = short.save(tmp_path / "short")
    reloaded = AutoModelForCausalLM.from_pretrained(out).eval()
    ids = torch.tensor([rows[0].input_ids])
    with torch.no_grad():
        assert torch.equal(short.model(input_ids=ids).logits, reloaded(input_ids=ids).logits)


def test_sft_defaults_to_the_bundled_solutions_of_the_run_problems(tiny_spec, tmp_path):
    config = _config(tmp_path, tiny_spec, epochs=1, max_length=4096)
    summary = run_sft(config, output=tmp_path / "out")
    assert summary.data == ["bundled solutions"] and summary.examples == 1 and summary.steps == 1
    assert (tmp_path / "out" / "config.json").is_file() and (tmp_path / "out" / "tokenizer.json").is_file()


def test_no_examples_is_a_config_error_saying_what_to_pass(tiny_spec, tmp_path):
    config = _config(tmp_path, tiny_spec)
    wrong = _write_jsonl(tmp_path / "wrong.jsonl", [_turn("relu", 0, 0, "x"), _turn("relu", 1, 0, "y", hacked=True)])
    with pytest.raises(ConfigError, match="2 trajectories, 1 hacked, 1 without a correct.*bundled solutions"):
        run_sft(config, data=[wrong])
    with pytest.raises(ConfigError, match="0 trajectories.*pass trajectory files"):
        run_sft(config, data=[_write_jsonl(tmp_path / "empty.jsonl", [])])
    unknown = config.model_copy(update={"rollout": config.rollout.model_copy(update={"problems": ["nope"]})})
    with pytest.raises(ConfigError, match=r"no bundled solution .*\(nope\).*--data"):
        run_sft(unknown)
    with pytest.raises(ConfigError, match="raise max_length"):
        run_sft(_config(tmp_path, tiny_spec, max_length=16), data=[_correct_trajectories(tmp_path / "g.jsonl")])
