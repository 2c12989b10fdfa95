"""`tensor_subclass`: no tensor subclasses and no torch function/dispatch overrides.

A tensor subclass (or a `__torch_function__` / `__torch_dispatch__` hook, or a torch function mode)
intercepts every operation the judge performs on the output: comparisons can be made to succeed, the
work can be deferred until the judge looks (a lazy tensor that computes in `__eq__`), timing can be
fooled.  The output must be the plain `torch.Tensor` a kernel wrote, so the candidate may not define a
class derived from `torch.Tensor` (or `Parameter`, `*Tensor`; also through its own classes or a base
taken from an object: `type(x)`, `x.__class__`, a name bound to one), define or assign those hooks,
call `_make_subclass`, `_make_wrapper_subclass` or `as_subclass`, or use `torch.overrides` /
`torch.utils._python_dispatch` / `torch._subclasses`.
"""

from __future__ import annotations

import ast

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import Finding, SourceScan, finding, scan, verdict

_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})
_MAKERS = frozenset(
    {
        "_make_subclass",
        "_make_wrapper_subclass",
        "as_subclass",
        "_disabled_torch_function_impl",
        "_disabled_torch_dispatch_impl",
        "TorchFunctionMode",
        "TorchDispatchMode",
    }
)
_MODULES = ("torch.overrides", "torch.utils._python_dispatch", "torch._subclasses", "torch._tensor")
_TENSOR_CLASSES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "TensorBase"})
_FIX = "return the plain torch.Tensor your kernel wrote (allocate it with torch.empty and fill it in the kernel)"


def _is_tensor_class(path: str | None) -> bool:
    if path is None or not path.startswith("torch."):
        return False
    last = path.split(".")[-1]
    return last.endswith("Tensor") or last.lstrip("_") in _TENSOR_CLASSES


class TensorSubclassCheck(StaticCheck):
    """No torch.Tensor subclasses, __torch_function__/__torch_dispatch__ hooks or torch modes."""

    name = "tensor_subclass"
    priority = 30

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        found: list[Finding] = []
        for node in facts.nodes:
            if isinstance(node, ast.ClassDef):
                found.extend(_subclass(node, facts))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in _HOOKS:
                found.append(_hook(node, node.name, code=f"def {node.name}"))
            name = _identifier(node)
            if name in _HOOKS:
                found.append(_hook(node, name))
            elif name in _MAKERS:
                found.append(
                    finding(
                        node, f"`{name}` makes or dispatches through a tensor subclass, which the judge forbids", _FIX
                    )
                )
            if isinstance(node, ast.Name | ast.Attribute | ast.alias):
                path = _alias_path(node, facts) if isinstance(node, ast.alias) else facts.resolve(node)
                if path is not None and path.startswith(_MODULES) and not _inner(node, facts):
                    found.append(finding(node, f"`{path}` overrides how torch functions run on tensors", _FIX))
        return verdict(self.name, found)


def _identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.alias):
        return node.name.split(".")[-1]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value  # getattr(t, "as_subclass")
    return None


def _alias_path(node: ast.alias, facts: SourceScan) -> str:
    parent = facts.parents.get(node)
    if isinstance(parent, ast.ImportFrom) and parent.module:
        return f"{parent.module}.{node.name}"
    return node.name


def _inner(node: ast.AST, facts: SourceScan) -> bool:
    """Part of a longer attribute chain (the outer chain is reported instead)."""
    parent = facts.parents.get(node)
    return isinstance(parent, ast.Attribute) and parent.value is node


def _type_of_object(node: ast.AST, facts: SourceScan) -> bool:
    """`type(x)` or `x.__class__`: a class taken from an object (a tensor's class, as likely as not)."""
    return (isinstance(node, ast.Call) and facts.resolve(node.func) == "builtins.type" and len(node.args) == 1) or (
        isinstance(node, ast.Attribute) and node.attr == "__class__"
    )


def _names_of_object_types(facts: SourceScan) -> set[str]:
    """Names assigned `type(x)` or `x.__class__` anywhere (`Base = type(x)`; `class Lazy(Base)`)."""
    names = set()
    for node in facts.nodes:
        if isinstance(node, ast.Assign) and _type_of_object(node.value, facts):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _subclass(cls: ast.ClassDef, facts: SourceScan) -> list[Finding]:
    found = []
    object_types = _names_of_object_types(facts)
    for current in facts.class_chain(cls):
        for base in current.bases:
            path = facts.resolve(base)
            dynamic = _type_of_object(base, facts) or (isinstance(base, ast.Name) and base.id in object_types)
            if _is_tensor_class(path) or dynamic:
                what = path or ast.unparse(base)
                via = "" if current is cls else f" through `{current.name}`"
                found.append(
                    finding(
                        cls,
                        f"class `{cls.name}` derives from `{what}`{via}: a tensor subclass can intercept the "
                        "judge's comparisons and timing",
                        _FIX,
                        code=f"class {cls.name}({', '.join(ast.unparse(b) for b in cls.bases)})",
                    )
                )
    return found


def _hook(node: ast.AST, name: str, code: str | None = None) -> Finding:
    return finding(
        node,
        f"`{name}` intercepts every torch operation on the object, including the judge's comparisons",
        _FIX,
        code=code,
    )


@hookimpl
def register_checks(register):
    register(TensorSubclassCheck)
