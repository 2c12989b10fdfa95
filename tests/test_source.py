"""Kernel ids from normalised source, and code extraction from model text."""

from __future__ import annotations

from conftest import RELU_KERNEL

from tritongym.core.source import extract_code, kernel_id_of


def test_kernel_id_ignores_formatting_and_comments():
    reformatted = (
        "# a header comment\n"
        + RELU_KERNEL.replace("    ", "        ").replace("mask = offs < n", "mask = (offs < n)   # tail")
        + "\n\n\n"
    )
    assert kernel_id_of(reformatted) == kernel_id_of(RELU_KERNEL)


def test_kernel_id_ignores_docstrings():
    documented = RELU_KERNEL.replace("def forward(self, x):", 'def forward(self, x):\n        """Explained."""')
    assert kernel_id_of(documented) == kernel_id_of(RELU_KERNEL)


def test_kernel_id_changes_with_the_code():
    assert kernel_id_of(RELU_KERNEL.replace("BLOCK=1024", "BLOCK=512")) != kernel_id_of(RELU_KERNEL)


def test_unparseable_source_still_gets_a_stable_id():
    broken = "def f(:\n    return 1  # comment\n"
    assert kernel_id_of(broken) == kernel_id_of(broken.replace("  # comment", ""))
    assert kernel_id_of(broken) != kernel_id_of("def g(:\n")


def test_extract_code_prefers_the_last_block_with_modelnew():
    text = "Plan first.\n```python\nsketch = 1\n```\nFinal:\n```python\nclass ModelNew: pass\n```\nDone."
    assert extract_code(text).strip() == "class ModelNew: pass"
    assert extract_code("```\nonly = 1\n```").strip() == "only = 1"
    assert extract_code("no code here") is None
