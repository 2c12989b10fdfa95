"""`inheritance`: `ModelNew` is a `torch.nn.Module` of the candidate's own, never the reference's `Model`.

A candidate that subclasses `Model`, calls `Model.forward`, binds `ModelNew = Model` or instantiates
`Model` inherits the reference's forward: the output is right because the reference computed it.  The
reference's class is called `Model` (KernelBench), so the name `Model` is reserved: any use of it (also
through `Base = Model`, `super(Model, self)`) is refused, except inside a copy of the reference class the
candidate kept for itself and under `if __name__ == "__main__":`, which never runs in the judge.
`ModelNew` must be a class statement whose bases lead, through classes of the file, to `torch.nn.Module`
(any spelling: `nn.Module`, `from torch.nn import Module`, an alias).  Other torch layers as bases are
refused too: `class ModelNew(nn.Linear)` inherits torch's forward.
"""

from __future__ import annotations

import ast

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import Finding, SourceScan, finding, is_main_guard, scan, verdict

REFERENCE_CLASS = "Model"
CANDIDATE_CLASS = "ModelNew"
NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.Module", "torch.nn.modules.module.Module"})
NEUTRAL_BASES = frozenset({"builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol"})
"""Bases that add no behaviour a forward could inherit."""
_FIX = "write `class ModelNew(torch.nn.Module)` with your own forward that launches your kernels"


class InheritanceCheck(StaticCheck):
    """ModelNew subclasses torch.nn.Module and never uses the reference's Model."""

    name = "inheritance"
    priority = 30

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        found = _uses_of_model(facts)
        for node in facts.nodes:
            found.extend(_rebinding(node, facts))
            if isinstance(node, ast.ClassDef) and node.name == CANDIDATE_CLASS:
                found.extend(_bases(node, facts))
        return verdict(self.name, found)


def _uses_of_model(facts: SourceScan) -> list[Finding]:
    exempt: set[ast.AST] = set()
    for node in facts.tree.body:
        if is_main_guard(node) or (isinstance(node, ast.ClassDef) and node.name == REFERENCE_CLASS):
            exempt.update(ast.walk(node))
    return [
        finding(
            node,
            "`Model` is the reference's class: using it (subclassing, `Model.forward`, `super(Model, ...)`, "
            "an instance) makes the reference compute the answer",
            _FIX,
        )
        for node in facts.nodes
        if isinstance(node, ast.Name)
        and node.id == REFERENCE_CLASS
        and isinstance(node.ctx, ast.Load)
        and node not in exempt
    ]


def _rebinding(node: ast.AST, facts: SourceScan) -> list[Finding]:
    """`ModelNew = X`, `def ModelNew`, `import ... as ModelNew`: ModelNew must be a class statement.
    `ModelNew = MyModel` with `MyModel` a class of the file is a class statement once removed: `MyModel`
    is judged instead."""
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Name) and t.id == CANDIDATE_CLASS for t in targets):
            rebound = any(
                isinstance(e, ast.Name) and e.id == CANDIDATE_CLASS
                for t in targets
                if isinstance(t, ast.Tuple | ast.List)
                for e in t.elts
            )
            return [_not_a_class(node)] if rebound else []
        value = getattr(node, "value", None)
        if isinstance(value, ast.Name) and value.id in facts.classes and value.id != REFERENCE_CLASS:
            return _bases(facts.classes[value.id], facts)
        return [_not_a_class(node)]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == CANDIDATE_CLASS:
        return [_not_a_class(node, code=f"def {node.name}")]
    if isinstance(node, ast.Import | ast.ImportFrom) and any(
        (a.asname or a.name) == CANDIDATE_CLASS for a in node.names
    ):
        return [_not_a_class(node)]
    return []


def _not_a_class(node: ast.AST, code: str | None = None) -> Finding:
    rule = "`ModelNew` must be defined by a class statement of the candidate, not bound to another object"
    return finding(node, rule, _FIX, code=code)


def _bases(cls: ast.ClassDef, facts: SourceScan) -> list[Finding]:
    found: list[Finding] = []
    reaches_module = False
    for current in facts.class_chain(cls):
        for keyword in current.keywords:
            if keyword.arg == "metaclass":
                found.append(finding(keyword.value, "a metaclass can change how ModelNew is built and called", _FIX))
        for base in current.bases:
            path = facts.resolve(base)
            if isinstance(base, ast.Name) and base.id in facts.classes and base.id != REFERENCE_CLASS:
                continue  # a class of the file: class_chain walks it
            if path in NN_MODULE:
                reaches_module = True
            elif path in NEUTRAL_BASES:
                continue
            elif isinstance(base, ast.Name) and base.id == REFERENCE_CLASS:
                continue  # reported by _uses_of_model
            elif path is not None and path.startswith("torch.nn."):
                found.append(
                    finding(
                        base,
                        f"`{current.name}` inherits `{path}`, whose forward is torch's computation",
                        _FIX,
                    )
                )
            else:
                found.append(
                    finding(
                        base,
                        f"`{current.name}` has a base that is neither torch.nn.Module nor a class of this file",
                        _FIX,
                    )
                )
    if not reaches_module and not found:
        found.append(
            finding(
                cls,
                "`ModelNew` does not subclass torch.nn.Module (directly or through classes of this file)",
                _FIX,
                code=f"class {cls.name}",
            )
        )
    return found


@hookimpl
def register_checks(register):
    register(InheritanceCheck)
