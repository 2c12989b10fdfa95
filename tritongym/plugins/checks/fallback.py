"""`fallback`: a kernel launch may not sit in a `try` (or `with`) that carries on when it fails.

`try: kernel[grid](...) except Exception: return torch.relu(x)` passes every correctness trial with a
kernel that does not even compile: the torch fallback computes the answer.  So when a `try` body launches a
kernel, directly or through any host function of the file that does (transitively, by name, method or
reference), every `except` handler must end in `raise` and contain no `return` / `break` / `continue` /
`yield`, and its `finally` may not `return` / `break` / `continue` (which swallows the exception).  A `with`
around a launch may not use a context manager that can swallow exceptions: `contextlib.suppress` and the
rest of `contextlib` (but `nullcontext`), a class of the file defining `__exit__`, or a
`@contextmanager` generator of the file that catches around its `yield`.
"""

from __future__ import annotations

import ast

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import Finding, Launch, SourceScan, finding, scan, verdict

_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_ESCAPES = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)
_RULE = "a fallback hides a broken kernel (the fallback computes the answer the kernel should)"
_FIX = "let the exception propagate: remove the handler or end it in `raise`"


class FallbackCheck(StaticCheck):
    """No try/except or suppressing with-block around a kernel launch that carries on after a failure."""

    name = "fallback"
    priority = 40

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        found: list[Finding] = []
        for node in facts.walk_host([tree]):
            if isinstance(node, _TRY):
                found.extend(_guarded_try(node, facts))
            elif isinstance(node, ast.With | ast.AsyncWith):
                found.extend(_guarded_with(node, facts))
        return verdict(self.name, found)


def _launch_text(launch: Launch | ast.AST) -> str:
    if isinstance(launch, Launch):
        return f"kernel `{launch.kernel}` (launched on line {launch.line})"
    name = getattr(launch, "name", "lambda")
    return f"`{name}` (line {launch.lineno}, it launches a kernel)"


def _escapes(body: list[ast.stmt]) -> bool:
    """Control leaves the block some other way than by the exception (nested functions excluded)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _ESCAPES):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _swallows(handler: ast.ExceptHandler) -> bool:
    return not isinstance(handler.body[-1], ast.Raise) or _escapes(handler.body)


def _guarded_try(node: ast.Try, facts: SourceScan) -> list[Finding]:
    launch = facts.launches_in(node.body)
    if launch is None:
        return []
    found = []
    for handler in node.handlers:
        if _swallows(handler):
            caught = f"except {ast.unparse(handler.type)}" if handler.type is not None else "except"
            found.append(
                finding(
                    node,
                    f"the `{caught}:` handler (line {handler.lineno}) carries on when {_launch_text(launch)} "
                    f"fails: {_RULE}",
                    _FIX,
                    code=f"try: … {caught}: …",
                )
            )
    if node.finalbody and _escapes(node.finalbody):
        found.append(
            finding(
                node,
                f"the `finally:` block (line {node.finalbody[0].lineno}) returns or jumps, which swallows any "
                f"exception of {_launch_text(launch)}: {_RULE}",
                _FIX,
                code="try: … finally: …",
            )
        )
    return found


def _guarded_with(node: ast.With | ast.AsyncWith, facts: SourceScan) -> list[Finding]:
    reasons = [r for item in node.items if (r := _may_suppress(item.context_expr, facts))]
    if not reasons:
        return []
    launch = facts.launches_in(node.body)
    if launch is None:
        return []
    return [
        finding(
            node,
            f"{reasons[0]} around {_launch_text(launch)}: {_RULE}",
            "launch kernels outside exception-swallowing context managers",
            code=f"with {', '.join(ast.unparse(i.context_expr) for i in node.items)}: …",
        )
    ]


def _may_suppress(expr: ast.expr, facts: SourceScan) -> str | None:
    """Why this context manager can swallow an exception, or None for ordinary ones (torch.no_grad…)."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    path = facts.resolve(target)
    if path is not None and path.startswith("contextlib.") and path != "contextlib.nullcontext":
        return f"`{path}` can swallow exceptions"
    name = target.id if isinstance(target, ast.Name) else None
    if name in facts.classes:
        for cls in facts.class_chain(facts.classes[name]):
            if any(m.name in ("__exit__", "__aexit__") for m in facts.methods(cls)):
                return f"`{name}` defines `__exit__`, which can swallow exceptions,"
    for fn in facts.functions_by_name.get(name or "", ()):
        decorated = [facts.resolve(d) or "" for d in getattr(fn, "decorator_list", ())]
        if any(d.endswith("contextmanager") for d in decorated) and any(
            isinstance(n, _TRY) and n.handlers for n in ast.walk(fn)
        ):
            return f"`{name}` catches exceptions around its `yield`"
    return None


@hookimpl
def register_checks(register):
    register(FallbackCheck)
