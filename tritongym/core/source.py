"""Source normalisation, kernel ids and code extraction from model text.

The kernel id is a hash of the *normalised* source: the AST unparsed back to text, so formatting and
comments do not change it (the registry answers a reformatted kernel from cache), while any change to
what the code does does.  Unparseable source falls back to stripped lines, so a syntax error still gets
a stable id and its `compile_error` verdict is cached like any other.
"""

from __future__ import annotations

import ast
import hashlib
import re

_FENCE = re.compile(r"```(?:python|py|triton)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def normalise_source(source: str) -> str:
    try:
        return ast.unparse(ast.parse(source))
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
