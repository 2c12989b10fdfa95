"""`structure`: the candidate has the shape of an answer before any worker is spent on it.

It must define `class ModelNew` and at least one function decorated with `triton.jit` (directly or under
`triton.autotune` / `triton.heuristics`).  Text with no kernel at all is not worth a sandbox.
"""

from __future__ import annotations

import ast

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import jit_functions


class StructureCheck(StaticCheck):
    """Candidate defines class ModelNew and at least one @triton.jit kernel."""

    name = "structure"
    priority = 10

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
        if not classes:
            return CheckVerdict(
                name=self.name, passed=False, reason="no top-level `class ModelNew(torch.nn.Module)` is defined"
            )
        if not jit_functions(tree):
            return CheckVerdict(
                name=self.name,
                passed=False,
                line=classes[0].lineno,
                reason="no function decorated with @triton.jit: the work must be done in Triton",
            )
        return CheckVerdict(name=self.name, passed=True)


@hookimpl
def register_checks(register):
    register(StructureCheck)
