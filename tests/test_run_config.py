"""Bad run configs fail before any work (no model loaded or built, no worker, no output written), with a
message that names what to change; and `--set` overrides reach the config."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tritongym.core.errors import ConfigError, TritonGymError
from tritongym.core.learn.run_config import load_run_config
from tritongym.core.learn.run_setup import prepare_run

GOOD = """
name = "bad"
output_dir = "{out}"
[model.tiny]
directory = "{tiny}"
[rollout]
problems = ["relu", "softmax"]
samples = 2
prompts_per_step = 2
[eval]
backend = "triton-cpu"
[optim]
micro_batch = 2
"""

BAD = [
    ("unknown engine", {"engine.name": "tgi"}, "not a registered engine (valid choices: "),
    ("unknown estimator", {"learning.estimator": "ppo-magic"}, "ppo-magic"),
    ("unknown filter", {"learning.filters": {"nope": {}}}, "nope"),
    ("bad filter option", {"learning.filters": {"mrs": {"band": "wide"}}}, "mrs"),
    ("unknown backend", {"eval.backend": "tpu"}, "tpu"),
    ("unknown reward", {"eval.rewards": {"vibes": 1.0}}, "vibes"),
    ("unknown problem", {"rollout.problems": ["relu", "fft9000"]}, "fft9000 not found"),
    ("too many prompts", {"rollout.prompts_per_step": 3}, "lower prompts_per_step or add problems"),
    ("micro batch too big", {"optim.micro_batch": 99}, "lower micro_batch"),
    ("zero samples", {"rollout.samples": 0}, "rollout.samples"),
    ("unknown section key", {"optim.learning_rate": 1e-5}, "learning_rate"),
    ("bad precision", {"optim.precision": "fp4"}, "choose auto, no, bf16 or fp16"),
    ("two model sources", {"model.builtin": "smollm2-135m-instruct"}, "name exactly one model source"),
    ("untrainable engine", {"engine.name": "openai"}, "cannot be trained"),
    ("bad interaction option", {"interaction.context": "everything"}, "context"),
]


def _config(tmp_path: Path, overrides: dict):
    path = tmp_path / "run.toml"
    path.write_text(GOOD.format(out=tmp_path / "out", tiny=tmp_path / "tiny"))
    return load_run_config(path, overrides)


@pytest.mark.parametrize(("what", "overrides", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_config_fails_before_any_work(tmp_path, what, overrides, message):
    started = time.perf_counter()
    with pytest.raises(TritonGymError) as info:
        prepare_run(_config(tmp_path, overrides))
    assert message in str(info.value), str(info.value)
    assert info.value.exit_code == 2  # bad input, as the CLI reports it
    assert time.perf_counter() - started < 30
    assert not (tmp_path / "tiny").exists() and not (tmp_path / "out").exists()  # nothing built or written


def test_missing_model_directory_says_what_to_pass(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        GOOD.format(out=tmp_path / "out", tiny=tmp_path / "tiny").replace(
            f'[model.tiny]\ndirectory = "{tmp_path / "tiny"}"', f'[model]\npath = "{tmp_path / "no-such-model"}"'
        )
    )
    with pytest.raises(ConfigError) as info:
        prepare_run(load_run_config(path))
    assert "no-such-model" in str(info.value)


def test_cli_reports_a_bad_config_with_exit_code_2(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(GOOD.format(out=tmp_path / "out", tiny=tmp_path / "tiny"))
    from typer.testing import CliRunner

    from tritongym.cli.app import app  # what `python -m tritongym` runs (`cli.app.main`), in this process

    for args in (["--set", "rollout.prompts_per_step=5"], ["--set", "optim"], ["--set", "engine.name=nope"]):
        done = CliRunner().invoke(app, ["train", str(path), "--json", *args])
        assert done.exit_code == 2, (args, done.output, done.exception)
        error = json.loads(done.stdout)
        assert error["exit_code"] == 2 and error["error"], error
    assert not (tmp_path / "tiny").exists() and not (tmp_path / "out").exists()


def test_set_overrides_take_toml_values_or_strings(tmp_path):
    from tritongym.cli.train import parse_overrides

    overrides = parse_overrides(["optim.steps=3", "sampling.stop=['```']", "name=demo run", "optim.lr=1e-3"])
    assert overrides == {"optim.steps": 3, "sampling.stop": ["```"], "name": "demo run", "optim.lr": 1e-3}
    config = _config(tmp_path, overrides)
    assert config.optim.steps == 3 and config.sampling.stop == ["```"] and config.name == "demo run"
    with pytest.raises(ConfigError, match="section.key=value"):
        parse_overrides(["steps"])


def test_an_engine_that_serves_its_own_model_does_not_need_a_local_one(tmp_path):
    """`openai` rollouts: the server holds the model, so [model] names it and no directory is checked."""
    config = _config(tmp_path, {"engine.name": "openai", "model": {"path": "/served/Qwen2.5-Coder-7B"}})
    parts = prepare_run(config, training=False)
    parts.close()
    with pytest.raises(ConfigError, match="no-such-model"):
        prepare_run(_config(tmp_path, {"model": {"path": str(tmp_path / "no-such-model")}}), training=False)
