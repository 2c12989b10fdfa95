"""Test-time scaling (ARCHITECTURE.md §7): more samples, more turns and the registry's best, without training.

May import: the kernel, `eval`, `registry`, `learn`.
"""
