"""What the static hack checks need to know about a candidate's source, computed once per parsed tree.

A check that looks for the literal text `torch.cuda.Stream` is beaten by `from torch import cuda as c;
c.Stream()`.  So every check asks the same questions through `scan(tree)`, which answers them for any
spelling:

* `resolve(expr)`: the dotted path an expression refers to when it is rooted at an imported module (or a
  builtin): `T.cuda.Stream` after `import torch as T`, `Stream` after `from torch.cuda import Stream`,
  `s` after `s = torch.cuda`, `self.s` after `self.s = torch.cuda`, `getattr(torch, "cuda")` with a literal
  name and `__builtins__` all resolve, to `torch.cuda.Stream`, `torch.cuda` or `builtins...`.  A builtin
  name resolves only where no enclosing scope binds it, so `def forward(self, input)` is no `input()`.
  `importlib.import_module("triton")` resolves to `triton` (`imported_by`), its name a literal or a parameter
  that every call of its function passes as one (`literal_strings`: Liger-Kernel's `compare_version("triton",
  ...)`), so what the module imported that way is used for is followed like an `import`.
* `jit_functions` / `host_functions`: functions decorated with `triton.jit` (directly or under
  `triton.autotune` / `triton.heuristics`) and every other function (methods and lambdas bound to names
  included).  `jit_names` also holds names bound to wrapped or aliased kernels (`k = triton.jit(f)`).
* `launches`: every kernel launch site, `kernel[grid](...)` (or `kernel[grid]` kept for later) and
  `kernel.run(...)`.
* `launches_in(nodes)`: whether code launches a kernel, directly or by referring to a host function of the
  file that does, transitively (`helper(x)`, `self.method(x)`, a function passed along as a value, bound
  to another name, or to a parameter by a call or a decorator: `function_aliases`).
* `reachable(roots)`: every host function some code may run, by the same references.

Everything here is an over-approximation in the direction of suspicion (aliases ignore scopes, a method is
matched by its name), because a check that misses a spelling is worse than one that asks for a rewrite.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from tritongym.core.models import CheckVerdict

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
CallableNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_BUILTIN_NAMES = frozenset(dir(builtins)) | {"__builtins__"}
_KERNEL_WRAPPERS = ("jit", "autotune", "heuristics")
"""Last components of the triton decorators that turn a function into a launchable kernel."""
IMPORT_MODULE = "importlib.import_module"
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_LITERAL_DEPTH = 4
"""How many functions deep a parameter is followed to the literal its callers pass (`literal_strings`)."""


def decorator_name(node: ast.expr) -> str:
    """The dotted name a decorator is written as (`triton.jit` for `@triton.jit(...)`), or ''."""
    if isinstance(node, ast.Call):
        node = node.func
    return raw_dotted(node) or ""


def raw_dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name (`getattr(a, "b")` with a literal counts), else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = raw_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    if literal_getattr(node):
        base = raw_dotted(node.args[0])
        return f"{base}.{node.args[1].value}" if base else None
    return None


def literal_getattr(node: ast.AST) -> bool:
    """`getattr(obj, "name")` or `getattr(obj, "name", default)`: an attribute read spelled as a call."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _is_jit_decorator(node: ast.expr) -> bool:
    return decorator_name(node).split(".")[-1] == "jit"


def jit_functions(tree: ast.Module) -> list[FunctionNode]:
    """Functions decorated with `@triton.jit` (or any `@...jit`), also under autotune/heuristics, and functions
    passed to a jit call by name (`_rope_embedding = triton.jit(_rope_embedding)`, as unsloth writes them)."""
    wrapped = {
        node.args[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and _is_jit_decorator(node)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (any(_is_jit_decorator(d) for d in node.decorator_list) or node.name in wrapped)
    ]


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":`, a block that never runs when the judge imports the candidate."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
        return False
    parts = [node.test.left, *node.test.comparators]
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts
    )


def snippet(node: ast.AST, limit: int = 70) -> str:
    """Source text of a node, shortened for a one-line message."""
    try:
        text = " ".join(ast.unparse(node).split())
    except Exception:  # ast.unparse of a hand-made node can fail; the message still names the line
        text = type(node).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (they are prose, never code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@dataclass(frozen=True)
class Launch:
    """One kernel launch site: `kernel[grid](...)`, `kernel[grid]` kept for later, or `kernel.run(...)`."""

    node: ast.AST
    kernel: str
    call: ast.Call | None

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass
class SourceScan:
    """Facts about one candidate tree; build it with `scan(tree)`, never mutate it."""

    tree: ast.Module
    nodes: list[ast.AST] = field(default_factory=list)
    """Every node of the tree, in `ast.walk` order (walk once, iterate many times)."""
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    docstrings: set[int] = field(default_factory=set)
    """ids of the string constants that are docstrings: prose, never code."""
    aliases: dict[str, str] = field(default_factory=dict)
    jit_functions: list[FunctionNode] = field(default_factory=list)
    jit_names: set[str] = field(default_factory=set)
    host_functions: list[CallableNode] = field(default_factory=list)
    functions_by_name: dict[str, list[CallableNode]] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    launching: set[CallableNode] = field(default_factory=set)
    function_aliases: dict[str, set[str]] = field(default_factory=dict)
    _bound: dict[ast.AST, frozenset[str]] = field(default_factory=dict)
    _jit_set: frozenset[ast.AST] = frozenset()

    # --- names -----------------------------------------------------------------------------------------

    def resolve(self, node: ast.AST) -> str | None:
        """The module-rooted dotted path `node` refers to (see the module docstring), else None."""
        raw = raw_dotted(node)
        if raw is None:
            return self._resolve_imported(node)
        parts = raw.split(".")
        for cut in range(len(parts), 0, -1):
            target = self.aliases.get(".".join(parts[:cut]))
            if target is not None:
                return ".".join([target, *parts[cut:]])
        root = _root_name(node)
        if root is not None and root.id in _BUILTIN_NAMES and self.is_builtin(root):
            base = "builtins" if root.id == "__builtins__" else f"builtins.{root.id}"
            return ".".join([base, *parts[1:]])
        return None

    def _resolve_imported(self, node: ast.AST) -> str | None:
        """`importlib.import_module("triton").language` -> `triton.language`, for one module imported by name."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif literal_getattr(node):
                parts.append(node.args[1].value)
                node = node.args[0]
            else:
                break
        names = self.imported_by(node)
        if names is None or len(names) != 1:
            return None
        return ".".join([*names, *reversed(parts)])

    def imported_by(self, node: ast.AST) -> frozenset[str] | None:
        """The modules a call `importlib.import_module(name)` may import, when `name` is a literal or a parameter
        every caller passes one (`literal_strings`); None for any other node, or a name computed some other way,
        or a relative import (a `package` argument)."""
        if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
            return None
        if self.resolve(node.func) != IMPORT_MODULE:
            return None
        names = self.literal_strings(node.args[0])
        if names is None or not all(_MODULE_NAME.match(name) for name in names):
            return None
        return names

    def literal_strings(self, node: ast.AST, depth: int = 0) -> frozenset[str] | None:
        """Every string `node` can hold: a string literal's own; a parameter's, when its function is only ever
        called directly by name (never passed along, aliased or decorated with) and every call passes it a
        literal (or leaves its literal default), followed through callers' own parameters; else None.  A function
        never called yields the empty set: it never runs."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return frozenset({node.value})
        if depth > _LITERAL_DEPTH or not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            return None
        fn = self._function_reading(node)
        if fn is None or self.is_method(fn):
            return None
        positional = [*fn.args.posonlyargs, *fn.args.args]
        params = {a.arg: a for a in [*positional, *fn.args.kwonlyargs]}
        if node.id not in params or self._rebinds(fn, node.id):
            return None
        calls = self._direct_calls(fn)
        if calls is None:
            return None
        index = next((i for i, a in enumerate(positional) if a.arg == node.id), None)
        default = _default_of(fn, node.id)
        values: set[str] = set()
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return None
            passed = call.args[index] if index is not None and index < len(call.args) else None
            passed = passed or next((k.value for k in call.keywords if k.arg == node.id), None) or default
            found = None if passed is None else self.literal_strings(passed, depth + 1)
            if found is None:
                return None
            values |= found
        return frozenset(values)

    def _function_reading(self, node: ast.AST) -> FunctionNode | None:
        """The function whose own body `node` is in (not a default, a decorator, a lambda or a comprehension)."""
        child, parent = node, self.parents.get(node)
        while parent is not None:
            if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
                return parent if any(child is statement for statement in parent.body) else None
            if isinstance(parent, (ast.Lambda, ast.ClassDef, *_COMPREHENSIONS)):
                return None
            child, parent = parent, self.parents.get(parent)
        return None

    def _rebinds(self, fn: FunctionNode, name: str) -> bool:
        """Whether `fn`'s body (nested scopes included) stores into, deletes or re-declares `name`."""
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                return True
            if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
                return True
        return False

    def _direct_calls(self, fn: FunctionNode) -> list[ast.Call] | None:
        """The calls of `fn` by its name, when the file refers to it no other way (and defines it once)."""
        calls = []
        for node in self.nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == fn.name:
                if node is not fn:
                    return None
            elif isinstance(node, ast.Name) and node.id == fn.name:
                parent = self.parents.get(node)
                if not (isinstance(parent, ast.Call) and parent.func is node):
                    return None
                calls.append(parent)
            elif isinstance(node, ast.Import | ast.ImportFrom) and any(
                (alias.asname or alias.name).split(".")[0] == fn.name for alias in node.names
            ):
                return None
        return calls

    def is_builtin(self, name: ast.Name) -> bool:
        """True when `name` is a builtin here: no enclosing scope of this reference binds it."""
        if name.id not in _BUILTIN_NAMES:
            return False
        return not any(name.id in self._bound_in(scope) for scope in self._scope_chain(name))

    def _scope_chain(self, node: ast.AST) -> Iterator[ast.AST]:
        """The scopes whose names `node` sees, innermost first (class bodies only when innermost)."""
        child, parent = node, self.parents.get(node)
        innermost = True
        while parent is not None:
            if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
                inside = child in parent.body
            elif isinstance(parent, ast.Lambda):
                inside = child is parent.body
            elif isinstance(parent, ast.ClassDef):
                inside = child in parent.body and innermost
            else:
                inside = isinstance(parent, _COMPREHENSIONS)
            if inside:
                yield parent
                innermost = False
            child, parent = parent, self.parents.get(parent)
        yield self.tree

    def _bound_in(self, scope: ast.AST) -> frozenset[str]:
        if scope not in self._bound:
            self._bound[scope] = frozenset(_names_bound_by(scope))
        return self._bound[scope]

    # --- structure -------------------------------------------------------------------------------------

    def walk_host(self, nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
        """`ast.walk` over `nodes` that does not enter `@triton.jit` functions."""
        stack = [n for n in nodes if n not in self._jit_set]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(c for c in ast.iter_child_nodes(node) if c not in self._jit_set)

    def functions_referenced(self, nodes: Iterable[ast.AST], *, calls: bool = True) -> set[CallableNode]:
        """Host functions of the file that code refers to: by name, as `obj.method`, or through its class
        (a reference to a class of the file reaches all its methods).  `calls=False` ignores references
        that are simply called (what `__init__` calls runs at construction, not in forward)."""
        called = set()
        if not calls:
            called = {id(n.func) for n in self.walk_host(nodes) if isinstance(n, ast.Call)}
        found: set[CallableNode] = set()
        for node in self.walk_host(nodes):
            if id(node) in called:
                continue
            if not isinstance(node, ast.Name | ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            for name in self.function_aliases.get(raw_dotted(node) or "", ()):
                found.update(self.functions_by_name.get(name, ()))
            if isinstance(node, ast.Name):
                found.update(self.functions_by_name.get(node.id, ()))
                cls = self.classes.get(node.id)
                if cls is not None:
                    found.update(self.methods(cls))
            else:
                found.update(
                    f
                    for f in self.functions_by_name.get(node.attr, ())
                    if self.is_method(f) or isinstance(f, ast.Lambda)
                )
        return found

    def reachable(
        self, roots: Iterable[CallableNode], skip: Callable[[CallableNode], bool] | None = None
    ) -> set[CallableNode]:
        """Every host function `roots` may run, following `functions_referenced` transitively; functions
        for which `skip` is true are neither included nor followed."""
        seen: set[CallableNode] = set()
        todo = list(roots)
        while todo:
            fn = todo.pop()
            if fn in seen or (skip is not None and skip(fn)):
                continue
            seen.add(fn)
            todo.extend(self.functions_referenced([fn]) - seen)
        return seen

    def methods(self, cls: ast.ClassDef) -> list[FunctionNode]:
        return [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]

    def is_method(self, fn: CallableNode) -> bool:
        return isinstance(self.parents.get(fn), ast.ClassDef)

    def launches_in(self, nodes: Iterable[ast.AST]) -> Launch | CallableNode | None:
        """The first launch site in `nodes`, or the first host function they refer to that launches."""
        nodes = list(nodes)
        ids = {id(n) for n in self.walk_host(nodes)}
        for launch in self.launches:
            if id(launch.node) in ids:
                return launch
        for fn in sorted(self.functions_referenced(nodes), key=lambda f: f.lineno):
            if fn in self.launching:
                return fn
        return None

    def class_chain(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """`cls` and the classes of this file it derives from, transitively (cycle-safe)."""
        chain, todo = [], [cls]
        while todo:
            current = todo.pop()
            if current in chain:
                continue
            chain.append(current)
            for base in current.bases:
                if isinstance(base, ast.Name) and base.id in self.classes:
                    todo.append(self.classes[base.id])
        return chain


def _root_name(node: ast.AST) -> ast.Name | None:
    while True:
        if isinstance(node, ast.Name):
            return node
        if isinstance(node, ast.Attribute):
            node = node.value
        elif literal_getattr(node):
            node = node.args[0]
        else:
            return None


def _default_of(fn: FunctionNode, name: str) -> ast.expr | None:
    """The default value of parameter `name` of `fn`, if it has one."""
    positional = [*fn.args.posonlyargs, *fn.args.args]
    for arg, default in zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults):
        if arg.arg == name:
            return default
    for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
        if arg.arg == name:
            return default
    return None


def _names_bound_by(scope: ast.AST) -> Iterator[str]:
    """Names a scope binds itself (parameters, assignments, imports, defs), not those of nested scopes."""
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = scope.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                yield arg.arg
        body = scope.body if isinstance(scope.body, list) else [scope.body]
    elif isinstance(scope, _COMPREHENSIONS):
        body = [g.target for g in scope.generators]
    else:
        body = scope.body
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
            continue
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                yield (alias.asname or alias.name).split(".")[0]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name
        if isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(name, dotted path) for each name an import statement binds: `import a.b` binds `a` to `a`, `import a.b as
    c` binds `c` to `a.b`, `from a import b` binds `b` to `a.b` (a relative module keeps its leading dots)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                top = alias.name.split(".")[0]
                yield top, top
    else:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                yield alias.asname or alias.name, f"{module}.{alias.name}" if module else alias.name


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """Names bound by imports; one in a class body also as `self.name` and `Class.name`, as the class's methods
    read it."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            aliases.update(import_bindings(node))
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.Import | ast.ImportFrom):
                    for name, path in import_bindings(statement):
                        aliases.setdefault(f"self.{name}", path)
                        aliases.setdefault(f"{node.name}.{name}", path)
    aliases.setdefault("__builtins__", "builtins")
    return aliases


def _bindings(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs of simple bindings: assignments (tuples paired up, class attributes also as
    `self.name`), walrus, loops over a literal sequence, parameter defaults, the arguments a call passes to
    a function of the file (`patch(torch.cuda)` binds the parameter of `def patch(namespace)` to
    `torch.cuda`) and the function a decorator of the file receives."""
    functions: dict[str, list[FunctionNode]] = {}
    methods: dict[str, list[FunctionNode]] = {}
    for node in nodes:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                (methods if isinstance(node, ast.ClassDef) else functions).setdefault(child.name, []).append(child)
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _pair(target, node.value)
        elif isinstance(node, ast.ClassDef):  # `act = torch.relu` in a class body is `self.act` in its methods
            for statement in node.body:
                if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
                    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                    for target in (t for t in targets if isinstance(t, ast.Name)):
                        yield ast.Attribute(value=ast.Name(id="self"), attr=target.id), statement.value
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            if isinstance(node.iter, ast.Tuple | ast.List | ast.Set):  # for m in (torch.cuda, time): ...
                for element in node.iter.elts:
                    yield from _pair(node.target, element)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            yield from _pair(node.target, node.value)
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            for arg, default in zip(positional[len(positional) - len(node.defaults) :], node.defaults):
                yield _param(arg), default
            for arg, default in zip(node.kwonlyargs, node.kw_defaults):
                if default is not None:
                    yield _param(arg), default
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # @wrap def f: wrap's parameter is f
            for decorator in node.decorator_list:
                for fn in functions.get(decorator.id, ()) if isinstance(decorator, ast.Name) else ():
                    positional = [*fn.args.posonlyargs, *fn.args.args]
                    if positional:
                        yield _param(positional[0]), ast.Name(id=node.name, ctx=ast.Load())
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for fn in functions.get(node.func.id, ()):
                yield from _call_bindings(node, fn, skip=0)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # obj.method(...): skip self
            for fn in methods.get(node.func.attr, ()):
                static = any(decorator_name(d) == "staticmethod" for d in fn.decorator_list)
                yield from _call_bindings(node, fn, skip=0 if static else 1)


def _param(arg: ast.arg) -> ast.Name:
    return ast.Name(id=arg.arg, ctx=ast.Store())


def _call_bindings(call: ast.Call, fn: FunctionNode, skip: int) -> Iterator[tuple[ast.AST, ast.AST]]:
    """The parameters of `fn` paired with the arguments `call` passes them."""
    positional = [*fn.args.posonlyargs, *fn.args.args]
    for param, value in zip(positional[skip:], call.args):
        if isinstance(value, ast.Starred):
            break
        yield _param(param), value
    by_name = {a.arg: a for a in [*positional, *fn.args.kwonlyargs]}
    for keyword in call.keywords:
        if keyword.arg in by_name:
            yield _param(by_name[keyword.arg]), keyword.value


def _pair(target: ast.AST, value: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
        if len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                yield from _pair(t, v)
    else:
        yield target, value


def _wraps_kernel(scan: SourceScan, value: ast.AST) -> bool:
    """`triton.jit(f)`, `triton.autotune(...)(kernel)`, `kernel` itself: the value is a launchable kernel."""
    if raw_dotted(value) in scan.jit_names:
        return True
    if isinstance(value, ast.Call):
        func = value.func
        inner = func.func if isinstance(func, ast.Call) else func
        path = scan.resolve(inner) or raw_dotted(inner) or ""
        if path.split(".")[-1] in _KERNEL_WRAPPERS:
            return True
    return False


def _find_launches(scan: SourceScan) -> list[Launch]:
    calls = {id(n.func): n for n in ast.walk(scan.tree) if isinstance(n, ast.Call)}
    defined = {f.name for f in scan.jit_functions}

    def is_kernel(name: str | None) -> bool:  # `self.kernel` finds a jit staticmethod by its name
        return name is not None and (name in scan.jit_names or name.split(".")[-1] in defined)

    found = []
    for node in ast.walk(scan.tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            kernel = raw_dotted(node.value)
            if is_kernel(kernel):
                found.append(Launch(node=node, kernel=kernel, call=calls.get(id(node))))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run":
            kernel = raw_dotted(node.func.value)
            if is_kernel(kernel):
                found.append(Launch(node=node, kernel=kernel, call=node))
    return sorted(found, key=lambda launch: (launch.node.lineno, launch.node.col_offset))


@functools.lru_cache(maxsize=32)
def scan(tree: ast.Module) -> SourceScan:
    """The shared facts about `tree` (cached: every static check of one evaluation gets the same tree)."""
    result = SourceScan(tree=tree, nodes=list(ast.walk(tree)))
    for parent in result.nodes:
        for child in ast.iter_child_nodes(parent):
            result.parents[child] = parent
    result.docstrings = docstring_nodes(tree)
    result.aliases = _import_aliases(tree)
    result.jit_functions = jit_functions(tree)
    result._jit_set = frozenset(result.jit_functions)
    result.jit_names = {f.name for f in result.jit_functions}
    bindings = list(_bindings(result.nodes))
    _follow_module_aliases(result, bindings)
    for node in result.nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node not in result._jit_set:
            result.host_functions.append(node)
            result.functions_by_name.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            result.classes.setdefault(node.name, node)
    for target, value in bindings:
        if isinstance(value, ast.Lambda) and (name := raw_dotted(target)):
            result.host_functions.append(value)
            result.functions_by_name.setdefault(name.split(".")[-1], []).append(value)
    _follow_function_aliases(result, bindings)
    result.launches = _find_launches(result)
    _close_launching(result)
    return result


def _follow_module_aliases(result: SourceScan, bindings: list[tuple[ast.AST, ast.AST]]) -> None:
    """Names bound to modules (`c = torch.cuda`) or kernels (`k = triton.jit(f)`), aliases of aliases
    included, in any order: iterate to a fixed point."""
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            name = raw_dotted(target)
            if name is None or name in result.aliases or name in result.jit_names:
                continue
            if _wraps_kernel(result, value):
                result.jit_names.add(name)
                changed = True
                continue
            path = result.resolve(value)
            if path is not None and path != name:
                result.aliases[name] = path
                changed = True


def _follow_function_aliases(result: SourceScan, bindings: list[tuple[ast.AST, ast.AST]]) -> None:
    """Names bound to functions of the file: `run = helper`, `apply(helper)` (a parameter), `@wrap`."""
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            name, source = raw_dotted(target), raw_dotted(value)
            if name is None or not isinstance(value, ast.Name | ast.Attribute) or source == name:
                continue
            functions = set(result.function_aliases.get(source, ()))
            if isinstance(value, ast.Name) and value.id in result.functions_by_name:
                functions.add(value.id)
            if functions - result.function_aliases.get(name, set()):
                result.function_aliases.setdefault(name, set()).update(functions)
                changed = True


def _close_launching(result: SourceScan) -> None:
    """Host functions that launch a kernel themselves or refer to one that does, transitively."""
    launch_ids = {id(launch.node) for launch in result.launches}
    result.launching = {fn for fn in result.host_functions if any(id(n) in launch_ids for n in result.walk_host([fn]))}
    changed = True
    while changed:
        changed = False
        for fn in result.host_functions:
            if fn not in result.launching and result.functions_referenced([fn]) & result.launching:
                result.launching.add(fn)
                changed = True


# --- verdicts ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One thing a check objects to: where, what was written, the rule it breaks and what to do instead."""

    line: int
    code: str
    rule: str
    fix: str

    def text(self) -> str:
        return f"line {self.line}: `{self.code}` — {self.rule}; {self.fix}"


def finding(node: ast.AST, rule: str, fix: str, code: str | None = None) -> Finding:
    return Finding(line=getattr(node, "lineno", 0), code=code or snippet(node), rule=rule, fix=fix)


def verdict(name: str, findings: Iterable[Finding]) -> CheckVerdict:
    """Pass when nothing was found; else fail on the first finding, listing where the others are."""
    unique = {(f.line, f.code, f.rule): f for f in findings}
    ordered = sorted(unique.values(), key=lambda f: (f.line, f.code))
    if not ordered:
        return CheckVerdict(name=name, passed=True)
    first = ordered[0]
    reason = first.text()
    others = sorted({f.line for f in ordered[1:]} - {first.line})
    if len(ordered) > 1:
        where = f" (lines {', '.join(map(str, others[:8]))}{', …' if len(others) > 8 else ''})" if others else ""
        reason += f". {len(ordered) - 1} more finding(s) of this check{where}"
    return CheckVerdict(name=name, passed=False, reason=reason, line=first.line or None)
