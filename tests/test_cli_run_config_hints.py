"""The commands driven by a run config (rollouts, train, sft, tts) have no --backend or --gpus: an evaluator's
error that names those flags is reworded as the `--set eval.X=...` that works for them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tritongym.cli.app import app

CONFIG = """
name = "hints"
output_dir = "{out}"
[model]
tiny = {{ directory = "{out}/tiny" }}
[rollout]
problems = ["relu"]
samples = 1
prompts_per_step = 1
[optim]
micro_batch = 1
[eval]
backend = "triton-cuda"
gpus = [99]
"""


@pytest.mark.parametrize("command", ["tts", "train", "rollouts"])
def test_a_backend_hint_names_the_set_override_these_commands_take(command, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(CONFIG.format(out=tmp_path / "runs"))
    result = CliRunner().invoke(app, [command, str(config), "--registry", str(tmp_path / "r.db")])
    assert result.exit_code == 3, result.output
    # no GPU here: "use --backend triton-cpu"; a GPU machine: "--gpus names [99], but the visible GPUs are ..."
    assert "--set eval.backend=triton-cpu" in result.stderr or "eval.gpus names [99]" in result.stderr, result.stderr
    assert "use --backend" not in result.stderr and "--gpus" not in result.stderr
