"""`monkeypatch`: the candidate must not change any attribute of a module it imported.

The candidate runs in the same process as the reference and the judge's own torch calls.  Replacing
`torch.cuda.synchronize`, `torch.allclose`, `time.perf_counter`, `triton.testing.do_bench` or
`torch.Tensor.__eq__`, or flipping `torch.backends.cuda.matmul.allow_tf32`, changes what the judge
measures or compares, or how the reference computes.  Any store into an object reached from an import is
refused: assignment, augmented assignment, `del`, `setattr`/`__setattr__`/`object.__setattr__`, item
assignment into a module `__dict__`, and stores through aliases (`T = torch; T.x = ...`, `self.m = torch;
self.m.x = ...`, `from torch import cuda; cuda.x = ...`).  Stores into `self`, locals and the candidate's
own classes are ordinary code and pass.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import Finding, SourceScan, finding, scan, verdict

_FIX = "leave library attributes alone: do the work in your own kernels and functions"
_DICT_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def imported_owner(node: ast.AST, facts: SourceScan) -> str | None:
    """The imported object (as a dotted path) that a store into `node` would modify, else None.

    `torch.cuda` for `torch.cuda`, `torch.cuda.__dict__` or `vars(torch.cuda)`; the type of an object
    (`type(x)`, `x.__class__`) counts as imported too, being torch's class, except the candidate's own
    (`type(self)`)."""
    while True:
        path = facts.resolve(node)
        if path is not None:
            return path
        if isinstance(node, ast.Attribute) and node.attr == "__class__":
            return _type_of(node.value)
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and node.args and facts.resolve(node.func) == "builtins.vars":
            node = node.args[0]
        elif isinstance(node, ast.Call) and node.args and facts.resolve(node.func) == "builtins.type":
            return _type_of(node.args[0])
        else:
            return None


def _type_of(obj: ast.AST) -> str | None:
    own = isinstance(obj, ast.Name) and obj.id in ("self", "cls")
    return None if own else f"type({ast.unparse(obj)})"


def _store_targets(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Assign | ast.Delete):
        yield from node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension):
        yield node.target
    elif isinstance(node, ast.With | ast.AsyncWith):
        yield from (item.optional_vars for item in node.items if item.optional_vars is not None)


def _flatten(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _flatten(element)
    elif isinstance(target, ast.Starred):
        yield from _flatten(target.value)
    else:
        yield target


class MonkeypatchCheck(StaticCheck):
    """No assignment, deletion or setattr on anything reached from an imported module."""

    name = "monkeypatch"
    priority = 30

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        found: list[Finding] = []
        for node in facts.nodes:
            for target in (t for top in _store_targets(node) for t in _flatten(top)):
                found.extend(self._store(node, target, facts))
            if isinstance(node, ast.Call):
                found.extend(self._setattr_call(node, facts))
        return verdict(self.name, found)

    def _store(self, statement: ast.AST, target: ast.AST, facts: SourceScan) -> list[Finding]:
        if isinstance(target, ast.Name) and target.id == "__builtins__":
            return [_patched(statement, "builtins")]
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return []
        owner = imported_owner(target.value, facts)
        if owner is None:
            return []
        what = f"{owner}.{target.attr}" if isinstance(target, ast.Attribute) else f"an item of {owner}"
        return [_patched(statement, what)]

    def _setattr_call(self, node: ast.Call, facts: SourceScan) -> list[Finding]:
        func = node.func
        path = facts.resolve(func) or ""
        if path in ("builtins.setattr", "builtins.delattr"):
            target = node.args[0] if node.args else None
        elif isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__"):
            unbound = len(node.args) == (3 if func.attr == "__setattr__" else 2)
            # object.__setattr__(obj, "x", f) changes obj; torch.cuda.__setattr__("x", f) changes torch.cuda
            target = node.args[0] if unbound else func.value
        elif isinstance(func, ast.Attribute) and func.attr in _DICT_MUTATORS and _is_namespace(func.value, facts):
            target = func.value  # torch.__dict__.update(...), vars(torch).update(...)
        else:
            return []
        owner = imported_owner(target, facts) if target is not None else None
        return [_patched(node, owner)] if owner else []


def _is_namespace(node: ast.AST, facts: SourceScan) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__"
    return isinstance(node, ast.Call) and facts.resolve(node.func) == "builtins.vars"


def _patched(node: ast.AST, what: str) -> Finding:
    return finding(
        node,
        f"this changes `{what}`, which belongs to an imported module shared with the reference and the judge "
        "(monkey-patching changes what is measured, compared or computed by the reference)",
        _FIX,
    )


@hookimpl
def register_checks(register):
    register(MonkeypatchCheck)
