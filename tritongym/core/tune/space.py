"""A kernel source's tunable parameters, found with `ast` in the parent: the candidate never runs here.

Tunable, for each `kernel[grid](...)` launch of a `@triton.jit` function of the file:

* a `tl.constexpr` parameter whose argument is an integer literal (`BLOCK_K=32`), or a name bound exactly
  once to one, in the launching function (`block = 1024`, `bm, bn = 64, 64`) or at module level
  (`BLOCK = 256`).  Only powers of two from 2 up count: flags and shape constants are left alone;
* `num_warps` and `num_stages`, as literals or names the same way, and where the launch does not pass them
  at Triton's defaults on CUDA (4 and 3), to be added;
* the configs of an `@triton.autotune(configs=[triton.Config({...}, num_warps=..., num_stages=...)])` list:
  each listed config is a point to measure, and their integer keys are parameters of the grid.

What is found but cannot be tuned from the source (a block size computed from the shape, a name assigned
twice, configs built by a function) is listed in `SearchSpace.fixed` with the reason.  The values worth
trying are powers of two around the current one (two steps either way: a quarter to four times), within
16..1024 for block sizes (wider where the kernel already is) and 1..16 for num_warps, and 1..5 for
num_stages.  `variant.py` bakes a configuration back into the source.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from tritongym.core.scan.ast_scan import SourceScan, decorator_name, scan, snippet
from tritongym.core.source import parse_source
from tritongym.core.tuning import Config, ParamKind, SearchSpace, TuneParam

DEFAULTS = {"num_warps": 4, "num_stages": 3}
"""What Triton launches with on CUDA when neither the launch nor a `triton.Config` says otherwise."""
BOUNDS: dict[str, tuple[int, int]] = {"constexpr": (16, 1024), "num_warps": (1, 16), "num_stages": (1, 5)}
"""Sane ranges per kind of parameter; a current value outside widens its range to include it."""
RADIUS = 2
"""Steps tried either side of the current value: a quarter to four times a block size or num_warps, ±2 stages."""


def values_around(kind: ParamKind, current: int) -> list[int]:
    """The values to try for a parameter at `current`, ascending, `current` included."""
    low, high = BOUNDS[kind]
    low, high = min(low, current), max(high, current)
    if kind == "num_stages":
        candidates = range(current - RADIUS, current + RADIUS + 1)
    else:
        candidates = [current << k for k in range(RADIUS + 1)] + [
            current >> k for k in range(1, RADIUS + 1) if current % (1 << k) == 0
        ]
    return sorted({v for v in candidates if low <= v <= high} | {current})


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _int_literal(node: ast.AST | None) -> int | None:
    """The value of an integer literal (not a bool), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


class Offsets:
    """Byte offsets into the UTF-8 source for `ast` positions (whose columns count UTF-8 bytes)."""

    def __init__(self, source: str) -> None:
        self.starts = [0]
        for line in source.encode().splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.at(node.lineno, node.col_offset), self.at(node.end_lineno, node.end_col_offset)


@dataclass(frozen=True)
class Literal:
    """A parameter set by an integer literal: the variant replaces its text."""

    start: int
    end: int


@dataclass(frozen=True)
class Insert:
    """A launch keyword the source leaves out (num_warps, num_stages): the variant adds
    `{before}{keyword}={value}{after}` at byte offset `at`."""

    at: int
    keyword: str
    before: str
    after: str


@dataclass
class AutotuneConfig:
    """One `triton.Config(...)` of an autotune list: its span and where each of its integer values is."""

    start: int
    end: int
    values: dict[str, int]  # config key (or num_warps / num_stages) -> value; defaults filled in
    literals: dict[str, tuple[int, int]]  # the keys written as integer literals -> their span
    dict_open: int  # just after the kwargs dict's `{`: where a missing key is added
    tail: int  # after the call's last argument: where a missing num_warps / num_stages is added


@dataclass
class Autotune:
    """An `@triton.autotune` configs list whose configs are literal: the variant replaces it with one config."""

    kernel: str
    start: int
    end: int
    configs: list[AutotuneConfig]
    names: dict[str, str] = field(default_factory=dict)  # config key -> parameter name in the space


@dataclass
class _Found:
    base: str
    kind: ParamKind
    kernel: str
    current: int
    where: str
    line: int
    site: Literal | Insert | None  # None: set by an autotune config
    autotune_key: str | None = None


@dataclass
class Discovery:
    """The search space of one source and, per parameter, where the source sets it."""

    source: str
    space: SearchSpace
    sites: dict[str, Literal | Insert] = field(default_factory=dict)
    autotunes: list[Autotune] = field(default_factory=list)

    def as_written(self) -> Config:
        """The configuration of the source itself: every parameter at its current value, except those an
        autotune list sets (the autotuner picks among its configs at run time)."""
        return {p.name: p.current for p in self.space.params if not p.autotuned}

    def around(self, config: Config) -> SearchSpace:
        """The space with its autotuned parameters re-centred on `config` (the best listed config)."""
        params = []
        for p in self.space.params:
            if p.autotuned and p.name in config:
                value = config[p.name]
                p = p.model_copy(update={"current": value, "values": values_around(p.kind, value)})
            params.append(p)
        return self.space.model_copy(update={"params": params})


def _scope_of(facts: SourceScan, node: ast.AST) -> ast.AST:
    """The function whose local names `node` sees (the module when it is at top level)."""
    parent = facts.parents.get(node)
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        parent = facts.parents.get(parent)
    return parent if parent is not None else facts.tree


def _bindings(body: list[ast.stmt], name: str) -> list[ast.expr | None]:
    """What `name` is bound to by the statements of one scope (not nested functions or classes): the value
    expression of a plain assignment, None for any other binding (augmented, loop target, import, ...),
    and the string 'global' for a `global`/`nonlocal` declaration."""
    found: list = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            for target in node.targets:
                found.extend(_paired(target, node.value, name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            found.append(node.value)
        elif isinstance(node, ast.NamedExpr) and node.target.id == name:
            found.append(node.value)
        elif isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            found.append("global")
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store | ast.Del):
            found.append(None)  # a loop target, `with ... as`, augmented assignment, `del`
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.extend(None for a in node.names if (a.asname or a.name).split(".")[0] == name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                found.append(None)
            continue
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            found.append(None)
        if isinstance(node, ast.Assign | ast.AnnAssign):  # the targets are done; a walrus may hide in the value
            if node.value is not None:
                stack.append(node.value)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _paired(target: ast.AST, value: ast.AST | None, name: str) -> list[ast.expr | None]:
    if isinstance(target, ast.Name):
        return [value] if target.id == name else []
    if isinstance(target, ast.Tuple | ast.List):
        if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
            return [b for t, v in zip(target.elts, value.elts) for b in _paired(t, v, name)]
        return [None for node in ast.walk(target) if isinstance(node, ast.Name) and node.id == name]
    return [None for node in ast.walk(target) if isinstance(node, ast.Name) and node.id == name]


class _Finder:
    """Walks one parsed source and collects what is tunable (`found`) and what is not (`fixed`)."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.facts = scan(tree)
        self.offsets = Offsets(source)
        self.data = source.encode()
        self.kernels = {f.name: f for f in self.facts.jit_functions}
        self.found: list[_Found] = []
        self.fixed: list[str] = []
        self.autotunes: list[Autotune] = []
        self.autotuned: dict[str, set[str]] = {}
        self.points: list[tuple[str, dict[str, int]]] = []

    # --- names -> literals ------------------------------------------------------------------------------

    def literal_of(self, expr: ast.expr, launch: ast.AST) -> tuple[ast.Constant | None, str]:
        """The integer literal an argument is, or the one its name is bound to once; else None and why."""
        if _int_literal(expr) is not None:
            return expr, ""
        if not isinstance(expr, ast.Name):
            return None, f"computed at the launch (`{snippet(expr, 50)}`)"
        scope = _scope_of(self.facts, launch)
        name = expr.id
        if scope is not self.facts.tree:
            args = scope.args
            if name in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}:
                return None, f"`{name}` is a parameter of {getattr(scope, 'name', 'a lambda')}"
            body = scope.body if isinstance(scope.body, list) else []
            local = _bindings(body, name)
            if local and "global" not in local:
                return self._once(local, name, f"local `{name}` in {getattr(scope, 'name', 'a lambda')}")
        module = _bindings(self.facts.tree.body, name)
        for fn in self.facts.host_functions:  # `global name` in a function rebinds the module's name
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = _bindings(fn.body, name)
                if "global" in inner:
                    module.extend(b for b in inner if b != "global")
        if not module:
            return None, f"`{name}` is not bound in the file"
        return self._once(module, name, f"module constant `{name}`")

    @staticmethod
    def _once(bindings: list, name: str, what: str) -> tuple[ast.Constant | None, str]:
        if len(bindings) > 1:
            return None, f"`{name}` is assigned {len(bindings)} times"
        value = bindings[0]
        if _int_literal(value) is None:
            if not isinstance(value, ast.AST):
                return None, f"`{name}` is not bound by a plain assignment of a literal"
            return None, f"`{name}` is computed (`{snippet(value, 50)}`)"
        return value, f"{what} = {value.value} (line {value.lineno})"

    # --- launches ---------------------------------------------------------------------------------------

    def launches(self) -> None:
        for launch in self.facts.launches:
            if not isinstance(launch.node, ast.Subscript) or launch.call is None:
                continue
            fn = self.kernels.get(launch.kernel.split(".")[-1])
            if fn is not None:
                self.launch(fn, launch.call)

    def launch(self, fn: ast.FunctionDef, call: ast.Call) -> None:
        line = call.lineno
        positional = [*fn.args.posonlyargs, *fn.args.args]
        passed: dict[str, ast.expr] = {}
        for arg, value in zip(positional, call.args):
            if isinstance(value, ast.Starred):
                break
            passed[arg.arg] = value
        passed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
        unpacked = any(k.arg is None for k in call.keywords)  # `**options` might set num_warps already
        autotuned = self.autotuned.get(fn.name)
        for arg in [*positional, *fn.args.kwonlyargs]:
            if not _is_constexpr(arg.annotation) or (autotuned is not None and arg.arg in autotuned):
                continue
            value = passed.get(arg.arg)
            label = f"{fn.name}.{arg.arg}"
            if value is None:
                self.fixed.append(f"{label}: not passed at the launch on line {line}")
                continue
            self.add(arg.arg, "constexpr", fn.name, value, call, label)
        if autotuned is not None:
            return  # num_warps and num_stages come from the autotune configs
        for keyword, default in DEFAULTS.items():
            label = f"{fn.name}.{keyword}"
            if keyword in passed:
                self.add(keyword, keyword, fn.name, passed[keyword], call, label)
            elif unpacked:
                self.fixed.append(f"{label}: the launch on line {line} passes **keywords")
            else:
                where = f"absent at the launch of {fn.name} on line {line}: Triton's default {default}"
                site = self.insertion(call, keyword)
                self.found.append(_Found(keyword, keyword, fn.name, default, where, line, site))

    def insertion(self, call: ast.Call, keyword: str) -> Insert:
        """Where and how a keyword is added to a call: after its last argument, on a line of its own when
        the arguments are one per line with a trailing comma (the layout formatters leave)."""
        arguments = [*call.args, *call.keywords]
        if not arguments:
            return Insert(self.offsets.span(call)[1] - 1, keyword, "", "")
        last = max(arguments, key=lambda n: self.offsets.span(n)[1])
        end = self.offsets.span(last)[1]
        tail = self.data[end : self.offsets.span(call)[1] - 1]
        comma = tail.find(b",")
        if comma >= 0 and b"\n" in tail[comma:] and last.lineno != call.lineno:
            line = self.data[self.offsets.at(last.lineno, 0) : self.offsets.at(last.lineno, last.col_offset)]
            indent = line[: len(line) - len(line.lstrip())].decode()
            return Insert(end + comma + 1, keyword, "\n" + indent, ",")
        return Insert(end, keyword, ", ", "")

    def add(self, base: str, kind: ParamKind, kernel: str, value: ast.expr, call: ast.Call, label: str) -> None:
        literal, where = self.literal_of(value, call)
        if literal is None:
            self.fixed.append(f"{label}: {where}")
            return
        number = literal.value
        if kind == "constexpr" and (number < 2 or not _power_of_two(number)):
            self.fixed.append(f"{label}: {number} is not a power of two from 2 up, so not taken for a tile size")
            return
        if number < 1:
            self.fixed.append(f"{label}: {number} is not a positive count")
            return
        site = Literal(*self.offsets.span(literal))
        for other in self.found:
            if other.site == site:  # one binding feeding several launches or arguments is one parameter
                return
        if where:
            where = f"{where}, passed as {base} to {kernel}"
        else:
            where = f"`{base}={number}` at the launch of {kernel} (line {literal.lineno})"
        self.found.append(_Found(base, kind, kernel, number, where, literal.lineno, site))

    # --- autotune lists ---------------------------------------------------------------------------------

    def autotune_lists(self) -> None:
        for fn in self.facts.jit_functions:
            for decorator in fn.decorator_list:
                if isinstance(decorator, ast.Call) and decorator_name(decorator).split(".")[-1] == "autotune":
                    self.autotune(fn, decorator)

    def autotune(self, fn: ast.FunctionDef, decorator: ast.Call) -> None:
        configs = next((k.value for k in decorator.keywords if k.arg == "configs"), None)
        if configs is None and decorator.args:
            configs = decorator.args[0]
        line = decorator.lineno
        if not isinstance(configs, ast.List | ast.Tuple) or not configs.elts:
            self.fixed.append(f"{fn.name}: the @triton.autotune configs (line {line}) are not a literal list")
            return
        parsed = [self.autotune_config(c) for c in configs.elts]
        if any(p is None for p in parsed):
            self.fixed.append(f"{fn.name}: an @triton.autotune config (line {line}) is not `triton.Config({{...}})`")
            return
        keys: list[str] = []
        for config in parsed:
            keys += [k for k in config.values if k not in keys]
        tunable = []
        for key in keys:
            label = f"{fn.name}.{key}"
            values = [c.values.get(key) for c in parsed]
            kind: ParamKind = key if key in DEFAULTS else "constexpr"
            if any(key not in c.values for c in parsed):
                self.fixed.append(f"{label}: not set by every @triton.autotune config (line {line})")
            elif any(v is None for v in values):
                self.fixed.append(f"{label}: not an integer literal in every @triton.autotune config (line {line})")
            elif kind == "constexpr" and not all(v >= 2 and _power_of_two(v) for v in values):
                self.fixed.append(f"{label}: not a power of two in every @triton.autotune config, not a tile size")
            else:
                tunable.append(key)
                where = f"@triton.autotune config key {key} of {fn.name} (line {line}; {len(parsed)} configs listed)"
                self.found.append(_Found(key, kind, fn.name, values[0], where, line, None, autotune_key=key))
        start, end = self.offsets.span(configs)
        self.autotunes.append(Autotune(fn.name, start, end, [c for c in parsed if c is not None]))
        self.autotuned[fn.name] = set(keys)
        for config in parsed:
            self.points.append((fn.name, {k: config.values[k] for k in tunable}))

    def autotune_config(self, node: ast.expr) -> AutotuneConfig | None:
        if not isinstance(node, ast.Call) or decorator_name(node).split(".")[-1] != "Config":
            return None
        kwargs = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "kwargs"), None)
        if not isinstance(kwargs, ast.Dict):
            return None
        values: dict[str, int | None] = {}
        literals: dict[str, tuple[int, int]] = {}
        for key, value in zip(kwargs.keys, kwargs.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            values[key.value] = _int_literal(value)
            if values[key.value] is not None:
                literals[key.value] = self.offsets.span(value)
        for keyword, default in DEFAULTS.items():
            value = next((k.value for k in node.keywords if k.arg == keyword), None)
            values[keyword] = default if value is None else _int_literal(value)
            if values[keyword] is not None and value is not None:
                literals[keyword] = self.offsets.span(value)
        start, end = self.offsets.span(node)
        ends = [self.offsets.span(n)[1] for n in [*node.args, *node.keywords]]
        return AutotuneConfig(
            start=start,
            end=end,
            values=values,
            literals=literals,
            dict_open=self.offsets.span(kwargs)[0] + 1,
            tail=max(ends),
        )


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = snippet(annotation, 200) if not isinstance(annotation, ast.Constant) else str(annotation.value)
    return text.split(".")[-1] == "constexpr"


def _names(found: list[_Found]) -> list[str]:
    """The constexpr's own name where it is unique, else qualified by kernel, then by line."""
    names = [f.base for f in found]
    if len(set(names)) < len(names):
        names = [f.base if names.count(f.base) == 1 else f"{f.kernel}.{f.base}" for f in found]
    if len(set(names)) < len(names):
        names = [n if names.count(n) == 1 else f"{n}@{f.line}" for n, f in zip(names, found)]
    return names


def discover(source: str) -> Discovery:
    """The search space of `source` and where each of its parameters is set (see the module docstring)."""
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError) as exc:
        return Discovery(source, SearchSpace(fixed=[f"the source does not parse: {exc}"]))
    finder = _Finder(source, tree)
    finder.autotune_lists()
    finder.launches()
    names = _names(finder.found)
    params, sites = [], {}
    for name, found in zip(names, finder.found):
        params.append(
            TuneParam(
                name=name,
                kind=found.kind,
                kernel=found.kernel,
                current=found.current,
                values=values_around(found.kind, found.current),
                where=found.where,
                autotuned=found.site is None,
            )
        )
        if found.site is not None:
            sites[name] = found.site
        else:
            next(a for a in finder.autotunes if a.kernel == found.kernel).names[found.autotune_key] = name
    current = {p.name: p.current for p in params}
    points = []
    for kernel, values in finder.points:
        by_key = next(a for a in finder.autotunes if a.kernel == kernel).names
        points.append({**current, **{by_key[k]: v for k, v in values.items()}})
    space = SearchSpace(params=params, points=points, fixed=finder.fixed)
    return Discovery(source, space, sites, finder.autotunes)
