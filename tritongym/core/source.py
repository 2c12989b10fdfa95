"""Source normalisation, kernel ids and code extraction from model text.

The kernel id is a hash of the *normalised* source: the AST without docstrings, unparsed back to
text, so formatting, comments and docstrings do not change it (the registry answers a reformatted
kernel from cache), while any change to what the code does does.  Unparseable source falls back to
stripped lines, so a syntax error still gets a stable id and its `compile_error` verdict is cached.
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading

_FENCE = re.compile(r"```(?:python|py|triton)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


_AST_LOCK = threading.Lock()


def parse_source(source: str, mode: str = "exec") -> ast.AST:
    """`ast.parse`, one thread at a time.  CPython 3.11 (3.11.7 here) keeps the AST constructor's recursion depth
    per interpreter, not per thread, and two threads building ASTs at once can fail with `SystemError: AST
    constructor recursion depth mismatch` (CPython gh-106905), as the registry's concurrent-writers test once did in
    `normalise_source`, called from its writer threads.  Every parse in tritongym goes through here: the evaluator
    judges, the registry stores and tuning rewrites sources from many threads."""
    with _AST_LOCK:
        return ast.parse(source, mode=mode)


def _strip_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def normalise_source(source: str) -> str:
    try:
        return ast.unparse(_strip_docstrings(parse_source(source)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        lines = (line.split("#", 1)[0].rstrip() for line in source.splitlines())
        return "\n".join(line for line in lines if line.strip())


def kernel_id_of(source: str) -> str:
    return hashlib.sha256(normalise_source(source).encode()).hexdigest()[:16]


def extract_code(text: str) -> str | None:
    """The last fenced code block that defines `ModelNew` (else the last block); None if there is none.

    Models often sketch code before the final answer, so the last complete block wins.
    """
    blocks = _FENCE.findall(text)
    if not blocks:
        return None
    for block in reversed(blocks):
        if "ModelNew" in block:
            return block
    return blocks[-1]
