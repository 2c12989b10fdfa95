"""`precision`: no arithmetic below the evaluation's precision policy or the reference's dtypes.

Lower precision is the cheapest speed-up there is, and the correctness tolerance cannot always tell a
TF32 or float16 answer from a float32 one.  So the policy is checked in the source, for host and kernel
code alike:

* under the `ieee` policy (`self.policy.precision`): no TF32 anywhere.  Refused are `allow_tf32=True`, a
  `tl.dot` input precision other than "ieee" (`"tf32"`, `"tf32x3"`, `"bf16x3"`, `"bf16x6"`, also as a
  string passed in from the host), a `tl.dot` that leaves `input_precision` out when the reference computes
  in float32 (Triton's default for float32 operands is TF32 on the GPU), any mention of torch's TF32 and
  reduced-precision switches (`allow_tf32`, `allow_fp16_reduced_precision_reduction`, `fp32_precision`…)
  and `torch.set_float32_matmul_precision` with anything but "highest".  Under `tf32` all of that is
  allowed.
* under both policies: no float16, bfloat16, float8 or float4 (a dtype, a cast such as `.half()`,
  `.to(torch.bfloat16)`, `x.to(tl.float16)`, `dtype=torch.float16`, `torch.autocast`) unless the
  reference's source uses that type itself.  Comparing against a low dtype (`x.dtype == torch.float16`)
  and a dtype table that maps a type to itself (`{torch.float16: tl.float16}`) are not casts and pass.
"""

from __future__ import annotations

import ast
import functools

from tritongym import hookimpl
from tritongym.core.eval.ast_scan import Finding, SourceScan, docstring_nodes, finding, scan, verdict
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem

_IEEE = "ieee"
_REDUCED_DOT = frozenset({"tf32", "tf32x3", "bf16x3", "bf16x6"})
_SWITCHES = frozenset(
    {
        "allow_tf32",
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
        "fp32_precision",
    }
)
_CAST_METHODS = {"half": "float16", "bfloat16": "bfloat16"}
_AUTOCAST = "autocast"
"""The family of `torch.autocast` & co.: allowed when the reference uses float16 or bfloat16 itself."""
_DTYPE_FIX = "compute in the reference's dtype (accumulate in float32) and return that dtype"
_TF32_FIX = 'keep float32 arithmetic exact: use tl.dot(..., input_precision="ieee") and leave TF32 off'


def low_precision_family(token: str) -> str | None:
    """'float16' for float16/half/fp16/HalfTensor, 'bfloat16', 'float8' (any variant), 'float4', else None."""
    word = token.lower().split(".")[-1]
    if word in ("float16", "half", "fp16", "f16", "halftensor"):
        return "float16"
    if word in ("bfloat16", "bf16", "bfloat16tensor"):
        return "bfloat16"
    if word.startswith(("float8", "fp8")) or "e4m3" in word or "e5m2" in word:
        return "float8"
    if word.startswith(("float4", "fp4")) or "e2m1" in word:
        return "float4"
    return None


@functools.lru_cache(maxsize=64)
def reference_families(source: str) -> frozenset[str]:
    """The low-precision types the reference itself uses (its code, not its prose)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    prose = docstring_nodes(tree)
    tokens = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            tokens.append(node.id)
        elif isinstance(node, ast.Attribute):
            tokens.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            tokens.append(node.value)
    return frozenset(family for token in tokens if (family := low_precision_family(token)))


class PrecisionCheck(StaticCheck):
    """No TF32 under the ieee policy and no float16/bfloat16/float8 the reference does not use."""

    name = "precision"
    priority = 50

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        allowed = reference_families(problem.source)
        found = _downcasts(facts, allowed)
        if self.policy.precision == _IEEE:
            found += _tf32(facts, reference_is_fp32=not allowed)
        return verdict(self.name, found)


def _in_comparison(node: ast.AST, facts: SourceScan) -> bool:
    parent = facts.parents.get(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Compare):
            return True
        parent = facts.parents.get(parent)
    return False


def _same_type_table_entry(node: ast.AST, family: str, facts: SourceScan) -> bool:
    """A key of a dtype table, or a value whose key is the same type (`{torch.float16: tl.float16}`)."""
    parent = facts.parents.get(node)
    if not isinstance(parent, ast.Dict):
        return False
    if node in parent.keys:
        return True
    key = parent.keys[parent.values.index(node)]
    return key is not None and _family_of(key, facts) == family


def _family_of(node: ast.AST, facts: SourceScan) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # {"fp16": tl.float16}
        return low_precision_family(node.value)
    path = facts.resolve(node)
    if path is not None and path.startswith(("torch.", "triton.")):
        return low_precision_family(path)
    return None


def _downcasts(facts: SourceScan, allowed: frozenset[str]) -> list[Finding]:
    found = []
    for node in facts.nodes:
        mention = _low_precision_mention(node, facts)
        if mention is None:
            continue
        family, what = mention
        if family in allowed or (family == _AUTOCAST and allowed & {"float16", "bfloat16"}):
            continue
        if _in_comparison(node, facts) or _same_type_table_entry(node, family, facts):
            continue
        arithmetic = "float16 or bfloat16" if family == _AUTOCAST else family
        found.append(
            finding(
                node,
                f"{what} means {arithmetic} arithmetic, below the precision of the reference, which never uses "
                f"{arithmetic} (a precision downgrade)",
                _DTYPE_FIX,
            )
        )
    return found


def _low_precision_mention(node: ast.AST, facts: SourceScan) -> tuple[str, str] | None:
    """(family, how it was written) when `node` names a low-precision type or casts to one."""
    if isinstance(node, ast.Name | ast.Attribute):
        parent = facts.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return None  # the outer chain decides
        path = facts.resolve(node) or ""
        family = _family_of(node, facts)
        if family is not None:
            return family, f"`{path}`"
        if path.startswith("torch.") and {"autocast", "amp"} & set(path.split(".")):
            return _AUTOCAST, f"`{path}` (autocast)"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CAST_METHODS:
        if facts.resolve(node.func) is None:  # a method call on a value, not a module function
            return _CAST_METHODS[node.func.attr], f"`.{node.func.attr}()`"
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in facts.docstrings:
        family = low_precision_family(node.value.strip())
        if family is not None:
            return family, f'"{node.value}"'
    elif isinstance(node, ast.alias) and isinstance(facts.parents.get(node), ast.ImportFrom):
        module = facts.parents[node].module or ""
        family = low_precision_family(node.name) if module.startswith(("torch", "triton")) else None
        if family is not None:
            return family, f"`{module}.{node.name}`"
    return None


def _tf32(facts: SourceScan, reference_is_fp32: bool) -> list[Finding]:
    prose = facts.docstrings
    found = []
    rule = "the precision policy of this evaluation is 'ieee' (no TF32)"
    for node in facts.nodes:
        if isinstance(node, ast.keyword) and node.arg == "allow_tf32":
            if not (isinstance(node.value, ast.Constant) and node.value.value is False):
                found.append(finding(node.value, f"`allow_tf32=` enables TF32, but {rule}", _TF32_FIX))
        elif isinstance(node, ast.Attribute) and node.attr in _SWITCHES:
            found.append(finding(node, f"`{node.attr}` switches torch to reduced precision, but {rule}", _TF32_FIX))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            if node.value.lower() in _REDUCED_DOT:
                found.append(
                    finding(node, f'input precision "{node.value}" is not exact float32, but {rule}', _TF32_FIX)
                )
            elif node.value in _SWITCHES:  # setattr(torch.backends.cuda.matmul, "allow_tf32", True)
                found.append(
                    finding(node, f"`{node.value}` switches torch to reduced precision, but {rule}", _TF32_FIX)
                )
        elif isinstance(node, ast.Call):
            path = facts.resolve(node.func) or ""
            if path.endswith("set_float32_matmul_precision") and not _literal_is(node.args[:1], "highest"):
                found.append(finding(node, f"matmul precision below 'highest' allows TF32, but {rule}", _TF32_FIX))
            if path in ("triton.language.dot", "triton.language.core.dot") and reference_is_fp32:
                given = len(node.args) >= 4 or any(k.arg in ("input_precision", "allow_tf32") for k in node.keywords)
                if not given:
                    found.append(
                        finding(
                            node,
                            "without `input_precision`, tl.dot multiplies float32 operands in TF32 on the GPU, "
                            f"but {rule}",
                            'pass input_precision="ieee"',
                        )
                    )
    return found


def _literal_is(args: list[ast.expr], value: str) -> bool:
    return bool(args) and isinstance(args[0], ast.Constant) and args[0].value == value


@hookimpl
def register_checks(register):
    register(PrecisionCheck)
