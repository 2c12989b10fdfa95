"""metrics.jsonl reading, the console table and line, and the PNG plot (tritongym.core.reports.metrics_report)."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import pytest
from rich.console import Console

from tritongym.core.errors import ConfigError
from tritongym.core.reports.metrics_report import (
    MISSING,
    filter_labels,
    plot_metrics,
    read_metrics,
    step_line,
    step_table,
    turn_numbers,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def full_row(step: int, turns: int = 3) -> dict:
    """A step as the trainer writes it: reward and components, per-turn rates, two filters, update stats."""
    row: dict = {"step": step, "reward": 0.1 * step, "reward/correctness": 0.05 * step, "reward/speedup": 0.02 * step}
    for t in range(1, turns + 1):
        row[f"turn{t}/correct"] = min(1.0, 0.25 * t)
        row[f"turn{t}/hacked"] = 0.0
        row[f"turn{t}/no_code"] = 0.1
        row[f"turn{t}/fast@1"] = 0.125 * t
        row[f"turn{t}/fast@1.2"] = 0.0625 * t
    row.update(
        {
            "pr": 0.8,
            "mrs/w_mean": 1.0,
            "mrs/kl_k3": 2e-5,
            "mrs/band_rejected": 0.05,
            "mrs/rejected": 0.05,
            "prs/rejected_correct": 0.1,
            "prs/unprofiled": 0.0,
            "prs/rejected": 0.03,
            "trloo/singleton_rows": 0.0,
            "kept_rows": 0.92,
            "mismatch_kl": 1.5e-5,
            "loss": 0.0123,
            "grad_norm": 0.87,
            "entropy": 0.61,
            "clip_fraction": 0.02,
            "tokens_per_s": 12345.6,
            "evaluations_per_s": 3.4,
            "step_s": 45.2,
        }
    )
    return row


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def render(table) -> str:
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(table)
    return console.export_text()


# --- read_metrics -------------------------------------------------------------------------------------------


def test_read_round_trip(tmp_path):
    rows = [full_row(0), {"step": 1, "reward": 0.5}, full_row(2, turns=1)]
    path = tmp_path / "metrics.jsonl"
    write_jsonl(path, rows)
    assert read_metrics(path) == rows


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"step": 0}) + "\n" + json.dumps({"step": 1}) + "\n" + '{"step": 2, "reward": \n')
    with pytest.raises(ConfigError) as info:
        read_metrics(path)
    assert f"{path}:3" in str(info.value)


def test_non_object_and_missing_step_are_errors(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n[1, 2]\n')
    with pytest.raises(ConfigError, match=r"metrics\.jsonl:2: expected a JSON object"):
        read_metrics(path)
    path.write_text('{"step": 0}\n{"reward": 1.0}\n')
    with pytest.raises(ConfigError, match=r"metrics\.jsonl:2: no integer 'step'"):
        read_metrics(path)


def test_unfinished_last_line_is_called_out(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 0}\n{"step": 1, "rew')
    with pytest.raises(ConfigError, match=r"metrics\.jsonl:2 \(the last line, without a newline"):
        read_metrics(path)


def test_missing_file_is_named(tmp_path):
    path = tmp_path / "nowhere" / "metrics.jsonl"
    with pytest.raises(ConfigError, match="does not exist") as info:
        read_metrics(path)
    assert str(path) in str(info.value)


# --- table and line -----------------------------------------------------------------------------------------


def test_filter_labels_and_turns_come_from_the_real_metric_names():
    rows = [full_row(0)]
    # `<label>/rejected` is the host's metric; `mrs/band_rejected` and `prs/rejected_correct` are not labels
    assert filter_labels(rows) == ["mrs", "prs"]
    assert turn_numbers(rows) == [1, 2, 3]
    assert filter_labels([{"step": 0, "turn1/rejected": 0.1, "reward/rejected": 0.2}]) == []


def test_missing_keys_show_a_dash():
    rows = [full_row(0, turns=2), {"step": 1, "reward": 0.25, "turn1/correct": 0.5}]
    text = render(step_table(rows))
    line = next(line for line in text.splitlines() if line.strip().startswith("1 "))
    assert MISSING in line
    assert "0.50/–" in line  # turn 2 missing on that step, turn 1 present
    assert "0.25" in line
    assert line.count(MISSING) >= 10  # pr, both filters, kl, entropy, grad, loss, tok/s, evals/s, rates


def test_per_turn_columns_and_filter_columns():
    text = render(step_table([full_row(0), full_row(1)]))
    assert "0.25/0.50/0.75" in text  # correct, turns 1..3
    assert "0.12/0.25/0.38" in text  # fast@1
    assert "0.00/0.00/0.00" in text  # hacked
    for header in ("step", "reward", "correct", "hacked", "fast@1.2", "pr", "mrs rej", "prs rej", "kl", "tok/s"):
        assert header in text
    assert "12.3k" in text  # tokens/s, compact
    assert "1.5e-05" in text  # mismatch KL, compact
    assert "t1/t2/t3" in text  # caption explains the per-turn cells


def test_turns_are_numbered_from_one_even_when_turn_one_is_missing():
    text = render(step_table([{"step": 0, "reward": 1.0}, {"step": 1, "turn2/correct": 0.5}]))
    assert "–/0.50" in text
    assert "t1/t2" in text
    assert "correct –/0.50" in step_line({"step": 1, "turn2/correct": 0.5})


def test_single_turn_is_a_plain_rate_and_last_limits_rows():
    rows = [full_row(step, turns=1) for step in range(5)]
    text = render(step_table(rows, last=2))
    body = [line.split()[0] for line in text.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert body == ["3", "4"]
    assert "0.25" in text and "/" not in text.replace("tok/s", "").replace("evals/s", "")


def test_resumed_run_keeps_last_line_per_step():
    rows = [{"step": 0, "reward": 1.0}, {"step": 1, "reward": 2.0}, {"step": 1, "reward": 3.0}]
    body = [line.split()[:2] for line in render(step_table(rows)).splitlines() if line.strip()[:1].isdigit()]
    assert body == [["0", "1"], ["1", "3"]]  # step 1 once, with the reward of its later line


def test_step_line():
    line = step_line(full_row(7, turns=2))
    assert line.startswith("step 7 | reward 0.7 |")
    assert "correct 0.25/0.50" in line
    assert "mrs rej 0.05" in line and "prs rej 0.03" in line
    assert "12.3k tok/s" in line and "45.2s" in line
    assert "\n" not in line
    short = step_line({"step": 3, "loss": 0.5})
    assert short == "step 3 | loss 0.5"


# --- plot ---------------------------------------------------------------------------------------------------


def assert_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 5 * 1024


def test_plot_one_step(tmp_path):
    out = plot_metrics([full_row(0)], tmp_path / "plots" / "one.png", title="one step")
    assert out == tmp_path / "plots" / "one.png"
    assert_png(out)


def test_plot_ten_steps_with_missing_keys(tmp_path):
    rows = []
    for step in range(10):
        row = full_row(step, turns=2)
        if step % 3 == 0:
            for key in ("pr", "mismatch_kl", "turn2/correct", "prs/rejected"):
                row.pop(key)
        if step == 5:
            row = {"step": 5, "reward": 0.3}
        rows.append(row)
    path = tmp_path / "metrics.jsonl"
    write_jsonl(path, rows)
    out = plot_metrics(read_metrics(path), tmp_path / "ten.png")
    assert_png(out)


def test_plot_with_nan_and_only_some_panels(tmp_path):
    rows = [{"step": s, "loss": math.nan if s == 1 else 0.1 * s} for s in range(3)]
    assert_png(plot_metrics(rows, tmp_path / "loss.png"))


def test_plot_without_data_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="no metrics to plot"):
        plot_metrics([], tmp_path / "empty.png")
    with pytest.raises(ConfigError, match="no step has a known metric"):
        plot_metrics([{"step": 0, "note": "x"}], tmp_path / "empty.png")


def test_import_does_not_load_matplotlib_or_rich_tables():
    code = (
        "import sys, tritongym.core.reports.metrics_report\n"
        "print(sorted(m for m in ('matplotlib', 'rich.table', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
