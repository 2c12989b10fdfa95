"""`tritongym tune`: launch configurations of a stored kernel swept through the judged pipeline.

Owns: finding a source's tunable parameters with `ast` (`space`), baking one configuration into the
source (`variant`), choosing the kernel to tune (`sources`), the tuning loop that judges every variant
with the `Evaluator` and records it in `tuning_records` (`tuner`), and what a tuning reports (`summary`).
Search strategies are plugins (`SearchStrategy`, `register_search_strategies`); the data they see is in
the kernel (`tritongym.core.tuning`).

May import: the kernel, `eval` (the pipeline every variant goes through, and `ast_scan`) and `registry`.
Candidate code never runs here: variants are text, judged in the sandbox like any candidate.
"""

from tritongym.core.tune.summary import ProblemTuning, TuneSummary
from tritongym.core.tune.tuner import Tuner

__all__ = ["ProblemTuning", "TuneSummary", "Tuner"]
