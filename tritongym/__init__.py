"""tritongym: a gym for LLMs that write Triton kernels.

The Python API mirrors the CLI: `evaluate` is `tritongym eval`, `Registry.best` is `tritongym best`,
`load_problem`/`suite_problems` back `tritongym problems`, and `get_host().all()` is `tritongym plugins`.
"""

from tritongym.core.hookspecs import hookimpl

__all__ = ["hookimpl"]
