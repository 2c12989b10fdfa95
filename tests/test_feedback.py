"""Feedback text for the next turn, from real evaluations."""

from __future__ import annotations

from conftest import RELU_KERNEL

from tritongym.core.feedback import render_feedback, trim_traceback

RAISES = RELU_KERNEL.replace(
    "        x = x.contiguous()\n", "        x = x.contiguous()\n        raise ValueError('bad block size')\n"
)
WRONG = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "x")
DECOY = RELU_KERNEL.replace("        relu_kernel[", "        return torch.relu(x)\n        relu_kernel[")


def test_feedback_for_every_kind_of_outcome(evaluator, relu_problem):
    ok, raises, wrong, decoy, syntax = evaluator.evaluate_many(
        [(s, relu_problem) for s in (RELU_KERNEL, RAISES, WRONG, DECOY, "def broken(:\n")]
    )
    text = render_feedback(ok)
    assert "ok. Your kernel is correct." in text and "relu_kernel x3" in text
    assert "only correctness was checked" in text and "Reward: 1" in text

    text = render_feedback(raises)
    assert "runtime_error" in text and "bad block size" in text
    assert 'File "candidate.py"' in text and "/tmp/" not in text and "tritongym-" not in text

    text = render_feedback(wrong)
    assert "output is wrong" in text and "max abs error" in text and "mean abs error" in text

    text = render_feedback(decoy)
    assert "hacked" in text and "Check `launches` failed" in text and "Reward: 0" in text

    text = render_feedback(syntax)
    assert "compile_error" in text and "line 1" in text and "Traceback:" in text


def test_long_tracebacks_keep_their_start_and_end():
    lines = [f'  File "/tmp/x/tritongym-abc123/candidate.py", line {i}, in f' for i in range(100)] + ["ValueError: end"]
    trimmed = trim_traceback("\n".join(lines), max_lines=12).splitlines()
    assert len(trimmed) == 12
    assert trimmed[0] == '  File "candidate.py", line 0, in f'
    assert trimmed[-1] == "ValueError: end" and "lines omitted" in trimmed[4]
