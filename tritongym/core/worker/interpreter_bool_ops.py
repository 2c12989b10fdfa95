"""`and`/`or`/`not` inside a `@triton.jit` function, under Triton's interpreter, as Triton's compiler reads them.

The compiler turns `a and b` on tensors into `logical_and` (`CodeGenerator.visit_BoolOp`: constexpr operands
short-circuit, tensor operands are combined elementwise).  The interpreter runs the function as Python, where `a and
b` asks `bool(a)` (every element true) and hands back `a` or `b` whole: FlagGems's log_softmax masks its blocks with
`m_offset[:, None] < M and n_offset[None, :] < N`, so in a partial row block the interpreter kept the row mask alone,
stored past each row's end, and the honest kernel corrupted the heap (SIGABRT: a false `crashed` on triton-cpu).

`install` adds a `visit_BoolOp` to the interpreter's AST rewriter (trusted, before any candidate is loaded): each
`and`/`or` becomes `_tritongym_bool_values(method, lambda: a, lambda: b, ...)`, evaluated as the compiler does.
An operand with an assignment expression (`:=`) is left as Python reads it (a lambda would rebind its name).
`not x` on a tensor is its elementwise logical not (`tensor.__not__`, as `CodeGenerator.visit_UnaryOp` calls it),
where Python's `not` asked `bool(x)` and gave one bool for the block: FlagGems's logical_not was `incorrect` on half
of its elements; each `not` becomes `_tritongym_not(x)`.
"""

from __future__ import annotations

import ast

HELPER = "_tritongym_bool_values"


def bool_values(method: str, *operands):
    """The compiler's rule: operands taken in order; a non-tensor one that settles the answer (false for `and`, true
    for `or`) is returned at once; the tensor ones are combined with `method` (logical_and / logical_or)."""
    from triton.language import core

    dynamic, value = [], None
    for operand in operands:
        value = operand()
        if isinstance(value, core.tensor):
            dynamic.append(value)
        elif bool(value) is (method == "logical_or"):
            return value
    if not dynamic:
        return value
    while len(dynamic) >= 2:
        rhs, lhs = dynamic.pop(), dynamic.pop()
        dynamic.append(getattr(lhs, method)(rhs))
    return dynamic[0]


def _visit_bool_op(self, node: ast.BoolOp):
    node = self.generic_visit(node)
    if any(isinstance(inner, ast.NamedExpr) for inner in ast.walk(node)):
        return node
    method = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
    empty = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    thunks = [ast.Lambda(args=empty, body=value) for value in node.values]
    call = ast.Call(func=ast.Name(id=HELPER, ctx=ast.Load()), args=[ast.Constant(method), *thunks], keywords=[])
    return ast.copy_location(call, node)


NOT_HELPER = "_tritongym_not"


def not_value(operand):
    """The compiler's `not`: a tensor's elementwise logical not (`tensor.__not__`), Python's for anything else."""
    from triton.language import core

    return operand.__not__() if isinstance(operand, core.tensor) else not operand


def _visit_unary_op(self, node: ast.UnaryOp):
    node = self.generic_visit(node)
    if not isinstance(node.op, ast.Not):
        return node
    call = ast.Call(func=ast.Name(id=NOT_HELPER, ctx=ast.Load()), args=[node.operand], keywords=[])
    return ast.copy_location(call, node)


def install() -> str | None:
    """Teach the interpreter's rewriter `and`/`or`/`not`; None when installed, else why not (Triton is left alone)."""
    from triton.runtime import interpreter

    rewriter = getattr(interpreter, "ASTTransformer", None)
    if rewriter is None or not hasattr(interpreter, "FunctionRewriter"):
        return "this Triton's interpreter has no ASTTransformer/FunctionRewriter"
    if getattr(rewriter, "visit_BoolOp", None) is not _visit_bool_op:
        rewriter.visit_BoolOp = _visit_bool_op
    if getattr(rewriter, "visit_UnaryOp", None) is not _visit_unary_op:
        rewriter.visit_UnaryOp = _visit_unary_op
    # the rewritten function runs in its module's globals, to which the interpreter copies its own names
    setattr(interpreter, HELPER, bool_values)
    setattr(interpreter, NOT_HELPER, not_value)
    return None
