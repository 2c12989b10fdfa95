"""`precision`: every output reaches the precision class the policy allows, measured against a float64 gold.

The worker keeps, for every main trial and shape set, the reference's float64 gold on a sample of positions
(`core/measure/gold.py`); each output comparison carries the candidate's relative-norm error against it
and the reference's own error at its dtype.  The error names a class (`core/precision.py`: `ieee`, `tf32`,
`half`, below); the evaluation's policy (`precision`, default `tf32`) names the least exact class that
passes.  A float16-operand GEMM on a float32 problem reaches `tf32` and passes by default; bfloat16
operands reach `half` and fail unless `precision = "half"`; nothing is refused for how its source reads.

What the source says about precision (a `tl.dot` without `input_precision`, `allow_tf32`, a cast to a type
the reference never uses) and which compiled kernels multiply in TF32 (read from their PTX on a GPU) are
given as advice in the reason: they explain a class, they never decide it.
"""

from __future__ import annotations

import ast
import functools

from tritongym import hookimpl
from tritongym.core.interfaces import RuntimeCheck
from tritongym.core.models import Candidate, CheckVerdict, Evidence, Problem, describe_sizes
from tritongym.core.precision import CLASSES, bound, classify, narrow_dtype, passing, stored_short, worst
from tritongym.core.scan.ast_scan import Finding, SourceScan, docstring_nodes, finding, scan
from tritongym.core.source import parse_source

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
        tree = parse_source(source)
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


class PrecisionCheck(RuntimeCheck):
    """Every output reaches the policy's precision class, measured against a float64 gold of the reference."""

    name = "precision"
    priority = 50
    explains_incorrect = True  # a class far below the policy is often why outputs are outside tolerance
    fails_as = "incorrect"  # a measured shortfall: a slightly wrong kernel and a downcast one look alike

    def judge(self, evidence: Evidence, candidate: Candidate, problem: Problem) -> CheckVerdict:
        policy = self.policy.precision
        # the main trials and the shape sets (whose gold `trial_plan.shape_set_gold` keeps): a kernel exact at the
        # problem's shape and a float16's error away at another is measured there
        judged = [(trial, out) for trial in evidence.trials if not trial.late for out in trial.outputs]
        outputs = [out for _, out in judged]
        measured = [  # (the errors a class is named from, the shape set they were measured at: None = the main shape,
            # whether the output is 16 bits wide: its own rounding is then the reference's error, `bound`'s `narrow`)
            (
                (out.gold_err, out.ref_gold_err, out.ref_tf32_err, out.ref_half_err, out.ref_tf32_trunc_err),
                trial.sizes,
                narrow_dtype(out.ref_dtype),
            )
            for trial, out in judged
            if out.gold_err is not None
        ]
        advice = _advice(candidate, problem, evidence)
        short = [out for out in outputs if stored_short(out.short_significands, out.ref_short_significands)]
        if short and "half" not in passing(policy):
            out = max(short, key=lambda o: o.short_significands)
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                reason=f"precision class half at best: output {out.index} was stored at 16 bits or fewer "
                f"({100 * out.short_significands:.0f}% of its values fit float16's 11 significant bits, the "
                f"reference's {100 * out.ref_short_significands:.2g}%), below the policy '{policy}', which passes "
                f"{', '.join(passing(policy))}; store float32 outputs in float32 (compute in the reference's dtype) "
                f"or set precision = 'half' to accept it{advice}",
            )
        if not measured:
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason="precision not measured (no float64 gold: the reference has no floating output or cannot "
                f"run in float64){advice}",
            )
        at_own = [m for m in measured if m[1] is None]
        own_class = worst(classify(*errors, narrow=n) for errors, _, n in at_own)
        if own_class is not None and own_class not in passing(policy):
            # below the policy at the problem's own shape: judged there alone, so that a shape set whose error is
            # beyond every class (wrong there, for the correctness verdict) cannot hide a downgrade seen here
            measured = at_own
        classes = [classify(*errors, narrow=n) for errors, _, n in measured]
        reached = worst(classes)
        worst_at = max((k for k, c in enumerate(classes) if c == reached), key=lambda k: measured[k][0][0])
        (err, ref, ref_tf32, _, _), sizes, _ = measured[worst_at]
        with_tf32 = f", with TF32 {ref_tf32:.2g}" if ref_tf32 is not None and ref_tf32 != ref else ""
        at = f" at shape set {describe_sizes(sizes)}" if sizes is not None else ""
        said = (
            f"precision class {reached} (error {err:.2g}{at} against the float64 gold; the reference's own at its "
            f"dtype {ref:.2g}{with_tf32}); the policy '{policy}' passes {', '.join(passing(policy))}"
        )
        if reached in passing(policy):
            return CheckVerdict(name=self.name, passed=True, stage="runtime", reason=said + advice)
        looser = next((c for c in CLASSES if reached in passing(c)), None)
        if looser is None:  # wrong, not imprecise: the correctness verdict's to judge, not this check's
            return CheckVerdict(
                name=self.name,
                passed=True,
                stage="runtime",
                reason=f"error {err:.2g} against the float64 gold is beyond every precision class (the reference's own "
                f"at its dtype {ref:.2g}): wrong outputs, not low precision, for the correctness verdict{advice}",
            )
        if sizes is not None and own_class in passing(policy):
            return CheckVerdict(
                name=self.name,
                passed=False,
                stage="runtime",
                other_shapes_only=True,  # `require_generality` decides it (`Evaluator._shapes_only`)
                reason=f"{said}, while at the problem's own shape it reached {own_class}: an error that only another "
                "shape shows is not the arithmetic's precision but what the kernel computes at those sizes (a mask, "
                "the padding of a block, a tail); make it exact where the sizes are not multiples of its blocks"
                f"{advice}",
            )
        fix = f"set precision = '{looser}' to accept it"
        allowed = bound(policy, *measured[worst_at][0][1:], narrow=measured[worst_at][2])
        return CheckVerdict(
            name=self.name,
            passed=False,
            stage="runtime",
            reason=f"{said} (class {policy} allows an error of {allowed:.2g} on this problem): a precision downgrade "
            f"below the policy, or a term dropped; compute in the reference's dtype (accumulate in float32) or "
            f"{fix}{advice}",
        )


def _advice(candidate: Candidate, problem: Problem, evidence: Evidence) -> str:
    """What the source and the PTX say about precision: advice beside the measured class, never a verdict."""
    notes = []
    if evidence.tf32_kernels:
        notes.append(f"{', '.join(evidence.tf32_kernels)} multiply in TF32 on tensor cores (PTX)")
    for found in source_findings(candidate.source, problem.source):
        note = f"line {found.line}: {found.rule.split(', but')[0].split(' (a precision')[0]}"
        if note not in notes:  # one spelling found twice (a name and its attribute chain) is said once
            notes.append(note)
    return ("; advice: " + "; ".join(notes[:6])) if notes else ""


def source_findings(candidate_source: str, problem_source: str) -> list[Finding]:
    """What the candidate's source says about precision: casts to a low-precision type the reference never
    uses, then TF32 switches and reduced-precision `tl.dot`s (default precision on a float32 problem).

    Advice only (`_advice` quotes it beside the measured class); public so the scan can be tested on its own.
    A source that does not parse says nothing.
    """
    try:
        facts = scan(parse_source(candidate_source))
    except (SyntaxError, ValueError):
        return []
    allowed = reference_families(problem_source)
    return _downcasts(facts, allowed) + _tf32(facts, reference_is_fp32=not allowed)


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
