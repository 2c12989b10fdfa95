"""Torch compute in a candidate's host code, read from the source: advice beside the runtime measure.

`torch_compute` weighs, at run time, the work torch did in the forward against the reference's; this scan
says *where* in the source that work is written, so a verdict can point at a line.  It reads every function
`ModelNew` may run (its methods and, transitively, the functions and classes of the file they refer to,
hooks registered in `__init__` included) except `__init__` itself, where weights are made, and except
autograd `backward`s, which forward never runs.  Compute is recognised by its canonical op
(`tritongym.core.op_families`) whatever the spelling: `torch.X(...)`, `F.X(...)` through any alias,
`torch.ops.aten.X`, tensor methods (`x.sum()`, `x.__mul__`), `nn` layers called (`self.fc(x)` where
`__init__` built `self.fc = nn.Linear(...)`, `nn.ReLU()(x)`, layers of an `nn.Sequential`), a function passed
as a value (`map(torch.relu, ...)`) and arithmetic operators on tensors (`@` always; `+ - * / ** < >`... when
an operand is known to be a tensor: a forward argument, a torch result, a weight).

A pattern is never a verdict on its own (folding BatchNorm statistics into a bias is torch compute in host
code, and honest): this module only finds; the measure decides.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from tritongym.core.op_families import canonical_op, method_op, nn_class_op
from tritongym.core.scan.ast_scan import CallableNode, SourceScan, is_main_guard

_BINARY = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
}
_COMPARE = {ast.Gt: "gt", ast.Lt: "lt", ast.GtE: "ge", ast.LtE: "le"}
_TENSOR_ATTRIBUTES = frozenset({"weight", "bias", "T", "mT", "H", "mH", "data", "grad", "real", "imag"})
_RESULT_ATTRIBUTES = frozenset({"values", "indices"})
_TENSOR_METHODS = frozenset(
    """
    view view_as reshape reshape_as contiguous permute transpose t flatten unflatten unsqueeze squeeze expand
    expand_as clone to cuda cpu float double half bfloat16 detach narrow select type_as repeat flip roll
    """.split()
)
_NOT_FORWARD = frozenset({"backward", "setup_context", "jvp", "vjp"})
_PLAIN_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "tuple", "list", "dict"})


@dataclass(frozen=True)
class OpUse:
    """One torch compute in host code."""

    op: str
    node: ast.AST
    function: str


def host_compute(facts: SourceScan, class_name: str) -> list[OpUse]:
    """Torch compute in every host function an instance of `class_name` may run (see module docstring)."""
    cls = facts.classes.get(class_name)
    if cls is None:
        return []
    layers = _stored_ops(facts)
    uses: dict[tuple[int, str], OpUse] = {}
    for fn in sorted(_forward_functions(facts, cls), key=lambda f: f.lineno):
        tensors = _tensor_names(fn, facts, layers)
        label = getattr(fn, "name", "lambda")
        for node in facts.walk_host([fn]):
            for op in _ops_of(node, facts, layers, tensors):
                uses.setdefault((id(node), op), OpUse(op=op, node=node, function=label))
    return sorted(uses.values(), key=lambda u: (u.node.lineno, u.node.col_offset))


def _forward_functions(facts: SourceScan, cls: ast.ClassDef) -> set[CallableNode]:
    chain = facts.class_chain(cls)
    roots: set[CallableNode] = set()
    for current in chain:
        for method in facts.methods(current):
            if method.name == "__init__":
                # called here: construction; passed on (a hook, a stored callable, a lambda): may run in forward
                roots |= facts.functions_referenced(method.body, calls=False)
                roots |= {n for n in ast.walk(method) if isinstance(n, ast.Lambda)}
                used = {
                    facts.classes[n.id] for n in ast.walk(method) if isinstance(n, ast.Name) and n.id in facts.classes
                }
                roots |= {m for c in used for m in facts.methods(c) if m.name != "__init__"}
            else:
                roots.add(method)
        others = [s for s in current.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
        roots |= _callables_in(others, facts)
    # functions handed to something at module level (a global module hook) may run in any forward
    module_level = [
        s
        for s in facts.tree.body
        if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not is_main_guard(s)
    ]
    roots |= {f for f in facts.functions_referenced(module_level, calls=False) if not facts.is_method(f)}
    names = {c.name for c in chain}
    for node in facts.nodes:  # ModelNew.forward = f, setattr(ModelNew, "forward", f)
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in names for t in node.targets
        ):
            roots |= _callables_in([node.value], facts)
        elif isinstance(node, ast.Call) and facts.resolve(node.func) == "builtins.setattr" and len(node.args) == 3:
            if isinstance(node.args[0], ast.Name) and node.args[0].id in names:
                roots |= _callables_in([node.args[2]], facts)
    return facts.reachable(roots, skip=lambda fn: _autograd_backward(fn, facts))


def _callables_in(nodes: list[ast.AST], facts: SourceScan) -> set[CallableNode]:
    """Functions referenced by, and lambdas written in, `nodes`."""
    lambdas = {n for node in nodes for n in ast.walk(node) if isinstance(n, ast.Lambda)}
    return facts.functions_referenced(nodes) | lambdas


def _autograd_backward(fn: CallableNode, facts: SourceScan) -> bool:
    owner = facts.parents.get(fn)
    if not (isinstance(owner, ast.ClassDef) and getattr(fn, "name", "") in _NOT_FORWARD):
        return False
    return any((facts.resolve(b) or "").startswith("torch.autograd") for c in facts.class_chain(owner) for b in c.bases)


def _stored_ops(facts: SourceScan) -> dict[str, frozenset[str]]:
    """Names bound to torch compute -> the ops using them computes: layers (`self.fc = nn.Linear(...)`,
    `nn.Sequential(...)`), functions kept in containers (`OPS = {"act": torch.relu}`), loop variables
    over either (`for layer in self.layers`)."""
    stored: dict[str, frozenset[str]] = {}
    for node in facts.nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            ops = frozenset(_ops_stored_in(node.value, facts))
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in filter(None, map(_callee_name, targets)) if ops else ():
                stored[name] = stored.get(name, frozenset()) | ops
    for node in facts.nodes:
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and _callee_name(node.iter) in stored:
            stored[node.target.id] = stored.get(node.target.id, frozenset()) | stored[_callee_name(node.iter)]
    return stored


def _ops_stored_in(value: ast.AST, facts: SourceScan) -> Iterator[str]:
    called = {id(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)}
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and (op := _built_layer(node, facts)):
            yield op
        elif isinstance(node, ast.Name | ast.Attribute) and id(node) not in called:
            parent = facts.parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                op = _op_of_path(facts.resolve(node))
                if op:
                    yield op


def _op_of_path(path: str | None) -> str | None:
    """The compute op a module path names: torch's (`canonical_op`) or Python's operator module's."""
    if path is None:
        return None
    if path.startswith("operator."):
        name = path.split(".")[-1].strip("_")
        return method_op(f"__{name}__")
    return canonical_op(path)


def _built_layer(call: ast.Call, facts: SourceScan) -> str | None:
    path = facts.resolve(call.func) or ""
    if path.startswith("torch.nn.") and path.count(".") == 2:
        return nn_class_op(path.split(".")[-1])
    return None


def _callee_name(node: ast.AST) -> str | None:
    """`self.fc` for `self.fc`, `self.fc[0]`, `self.fc.forward`: the name a called layer is stored under."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in ("forward", "__call__"):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        elif isinstance(node, ast.Attribute):
            base = _callee_name(node.value)
            return f"{base}.{node.attr}" if base else None
        else:
            return None


def _ops_of(node: ast.AST, facts: SourceScan, layers: dict[str, frozenset[str]], tensors: set[str]) -> list[str]:
    if isinstance(node, ast.Call):
        return _call_ops(node, facts, layers)
    if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
        parent = facts.parents.get(node)
        if (isinstance(parent, ast.Attribute) and parent.value is node) or (
            isinstance(parent, ast.Call) and parent.func is node
        ):
            return []  # part of a longer chain, or called (counted with the call)
        op = _op_of_path(facts.resolve(node))
        return [op] if op else []
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        if (
            isinstance(node.op, ast.MatMult)
            or _is_tensor(node.left, facts, layers, tensors)
            or _is_tensor(node.right, facts, layers, tensors)
        ):
            return [_BINARY[type(node.op)]]
    if isinstance(node, ast.AugAssign) and type(node.op) in _BINARY:
        if isinstance(node.op, ast.MatMult) or _is_tensor(node.target, facts, layers, tensors):
            return [_BINARY[type(node.op)]]
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and _is_tensor(node.operand, facts, layers, tensors)
    ):
        return ["neg"]
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        if any(_is_tensor(o, facts, layers, tensors) for o in operands):
            return [_COMPARE[type(op)] for op in node.ops if type(op) in _COMPARE][:1]
    return []


def _call_ops(node: ast.Call, facts: SourceScan, layers: dict[str, frozenset[str]]) -> list[str]:
    func = node.func
    path = facts.resolve(func)
    if path == "operator.methodcaller" and node.args and isinstance(node.args[0], ast.Constant):
        op = method_op(str(node.args[0].value))
        return [op] if op else []
    if path is not None:
        op = _op_of_path(path)
        return [op] if op else []
    if isinstance(func, ast.Call):  # nn.ReLU()(x)
        op = _built_layer(func, facts)
        if op:
            return [op]
    name = _callee_name(func)
    if name in layers:
        return sorted(layers[name])
    if isinstance(func, ast.Attribute):
        op = method_op(func.attr)
        return [op] if op else []
    return []


def _tensor_names(fn: CallableNode, facts: SourceScan, layers: dict[str, frozenset[str]]) -> set[str]:
    """Names in `fn` that hold tensors: forward's tensor arguments, then whatever is computed from them."""
    tensors: set[str] = set()
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = {a.arg for a in positional[len(positional) - len(args.defaults) :]}
    is_forward = getattr(fn, "name", "") == "forward"
    for index, arg in enumerate([*positional, *args.kwonlyargs]):
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        if annotation.split(".")[-1] == "Tensor":
            tensors.add(arg.arg)
        elif is_forward and index > 0 and arg.arg not in defaults and annotation not in _PLAIN_ANNOTATIONS:
            tensors.add(arg.arg)
    assignments = [
        (target, node.value)
        for node in facts.walk_host([fn])
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    ]
    loops = [(n.target, n.iter) for n in facts.walk_host([fn]) if isinstance(n, ast.For | ast.comprehension)]
    changed = True
    while changed:
        changed = False
        for target, value in assignments + loops:
            if _is_tensor(value, facts, layers, tensors):
                for name in _target_names(target):
                    if name not in tensors:
                        tensors.add(name)
                        changed = True
    return tensors


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _is_tensor(node: ast.AST, facts: SourceScan, layers: dict[str, frozenset[str]], tensors: set[str]) -> bool:
    """Whether `node` certainly holds a tensor (never guessed for ints and shapes)."""
    if isinstance(node, ast.Name):
        return node.id in tensors
    if isinstance(node, ast.Attribute):
        if node.attr in _TENSOR_ATTRIBUTES:
            return True
        return node.attr in _RESULT_ATTRIBUTES and _is_tensor(node.value, facts, layers, tensors)
    if isinstance(node, ast.Subscript):
        return _is_tensor(node.value, facts, layers, tensors)
    if isinstance(node, ast.BinOp):
        return _is_tensor(node.left, facts, layers, tensors) or _is_tensor(node.right, facts, layers, tensors)
    if isinstance(node, ast.UnaryOp):
        return _is_tensor(node.operand, facts, layers, tensors)
    if isinstance(node, ast.IfExp):
        return _is_tensor(node.body, facts, layers, tensors) or _is_tensor(node.orelse, facts, layers, tensors)
    if isinstance(node, ast.Compare):
        return any(_is_tensor(o, facts, layers, tensors) for o in [node.left, *node.comparators])
    if isinstance(node, ast.Tuple | ast.List):
        return bool(node.elts) and all(_is_tensor(e, facts, layers, tensors) for e in node.elts)
    if isinstance(node, ast.Call):
        path = facts.resolve(node.func)
        if path is not None:
            return path.startswith("torch.") and (canonical_op(path) is not None or _allocates(path))
        if _call_ops(node, facts, layers):
            return True
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _TENSOR_METHODS:
            return _is_tensor(func.value, facts, layers, tensors)
        if isinstance(func, ast.Name):
            return any(f in facts.launching for f in facts.functions_by_name.get(func.id, ()))
    return False


def _allocates(path: str) -> bool:
    last = path.split(".")[-1]
    return path.count(".") == 1 and (
        last in ("empty", "zeros", "ones", "full", "tensor", "as_tensor", "arange")
        or last.endswith("_like")
        or last.startswith("rand")
    )
