"""What judging and timing measure with, below the worker and the sandbox that use it: the trusted primitives
captured before any candidate runs (`trusted.py`), the timer (`timing.py`) and profiler (`gpu_profile.py`),
the output comparison (`compare.py`), the float64 gold (`gold.py`) and tensor helpers (`tensors.py`).

A subpackage of its own because the worker process, the reference keeper and the pool's side all measure the
same way, and none of this depends on which of them runs it.  Imports the kernel only.
"""
