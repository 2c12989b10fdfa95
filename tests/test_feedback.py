"""Feedback text for the next turn, from real evaluations."""

from __future__ import annotations

from conftest import RELU_KERNEL

from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.learn.feedback import render_feedback, trim_traceback
from tritongym.core.plugins import PluginHost

RAISES = RELU_KERNEL.replace(
    "        x = x.contiguous()\n", "        x = x.contiguous()\n        raise ValueError('bad block size')\n"
)
WRONG = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "x")
DECOY = RELU_KERNEL.replace("        relu_kernel[", "        return torch.relu(x)\n        relu_kernel[")


def test_feedback_for_every_kind_of_outcome(evaluator, relu_problem, fast_config, registry, sandbox_checks):
    ok, raises, wrong, rejected, syntax = evaluator.evaluate_many(
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

    text = render_feedback(rejected)  # torch does the work in forward and the kernel never launches
    assert "hacked" in text and "check 'launches'" in text and "Reward: 0" in text

    # with the source policy off, the same decoy runs and the launch check catches it
    runtime_only = Evaluator(
        fast_config.model_copy(update={"checks": sandbox_checks}),
        registry=registry,
        host=PluginHost(load_entry_points=False),
    )
    text = render_feedback(runtime_only.evaluate(DECOY, relu_problem))
    assert "hacked" in text and "Check `launches` failed" in text and "Reward: 0" in text

    text = render_feedback(syntax)
    assert "compile_error" in text and "line 1" in text and "Traceback:" in text


def test_long_tracebacks_keep_their_start_and_end():
    lines = [f'  File "/tmp/x/tritongym-abc123/candidate.py", line {i}, in f' for i in range(100)] + ["ValueError: end"]
    trimmed = trim_traceback("\n".join(lines), max_lines=12).splitlines()
    assert len(trimmed) == 12
    assert trimmed[0] == '  File "candidate.py", line 0, in f'
    assert trimmed[-1] == "ValueError: end" and "lines omitted" in trimmed[4]


def test_feedback_shows_timing_and_profile(evaluator, relu_problem):
    from tritongym.core.models import ProfileEntry, TimingReport, TimingStats

    ok = evaluator.evaluate(RELU_KERNEL, relu_problem)
    stats = TimingStats(median_ms=0.02, iqr_ms=0.001, samples=120, mode="graph-batched", calls_per_sample=25, l2="warm")
    timed = ok.model_copy(
        update={
            "runtime_ms": 0.02,
            "ref_runtime_ms": 0.03,
            "speedup": 1.5,
            "pr": 0.8,
            "timing": TimingReport(precision="tf32", candidate=stats),
            "profile": [
                ProfileEntry(kernel="relu_kernel", device_ms=0.016, calls=1, own=True, share=0.8),
                ProfileEntry(
                    kernel="at::vectorized_elementwise_kernel", device_ms=0.004, calls=1, own=False, share=0.2
                ),
            ],
        }
    )
    text = render_feedback(timed)
    assert "speedup 1.5x" in text and "PR 0.8" in text
    assert "median of 120 samples" in text and "graph-batched" in text and "precision tf32" in text
    assert "relu_kernel  (yours)" in text and "at::vectorized_elementwise_kernel" in text


def test_an_incorrect_candidate_hears_the_check_that_explains_it(fast_config, registry, sandbox_checks, relu_problem):
    """Wrong outputs from a candidate that also patched torch: the feedback names the patch as the likely
    cause (checks with `explains_incorrect`), while the status stays `incorrect`."""
    patched = WRONG.replace("class ModelNew", "torch.allclose = lambda *a, **k: True\n\n\nclass ModelNew")
    runtime_only = Evaluator(
        fast_config.model_copy(update={"checks": sandbox_checks}),
        registry=registry,
        host=PluginHost(load_entry_points=False),
    )
    patched_result, wrong_result = runtime_only.evaluate_many([(patched, relu_problem), (WRONG, relu_problem)])
    assert patched_result.status.value == "incorrect", patched_result.message
    assert "likely cause (check 'environment')" in patched_result.message and "allclose" in patched_result.message
    assert any(v.name == "environment" and not v.passed for v in patched_result.checks)
    assert wrong_result.status.value == "incorrect" and "likely cause" not in wrong_result.message
    assert "likely cause" in render_feedback(patched_result)
