"""Square brackets survive the CLI's rich rendering: in help (`pip install 'tritongym[ray]'`) and in the
tables that list problems (`[batch, seq, embed]`), where rich markup would read them as style tags."""

from __future__ import annotations

import os
import subprocess
import sys

from typer.testing import CliRunner

from tritongym.cli.app import app

runner = CliRunner()

PROBLEM = '''"""Sum over a [rows, cols] tensor."""
import torch

SIZES = {"cpu": {"ROWS": 4, "COLS": 8}, "gpu": {"ROWS": 4, "COLS": 8}}
ROWS, COLS = 4, 8


class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
'''


def test_option_help_keeps_its_brackets():
    """Through a real process, as a user reads it; `COLUMNS` wide enough that the hint is on one line."""
    done = subprocess.run(
        [sys.executable, "-m", "tritongym", "eval", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'tritongym[ray]'" in done.stdout


def test_subcommand_help_keeps_its_brackets():
    for argv in (["run", "--help"], ["tune", "--help"], ["train", "--help"]):
        result = runner.invoke(app, argv, env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert "'tritongym[ray]'" in result.stdout, argv


def test_problems_list_keeps_brackets_in_descriptions(tmp_path):
    (tmp_path / "rowsum.py").write_text(PROBLEM)
    result = runner.invoke(app, ["problems", "list", "--problems", str(tmp_path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "Sum over a [rows, cols] tensor." in result.stdout
