"""The source handed to Triton's own autotuner: `@triton.autotune` over a list of configurations.

`tritongym tune` measures each configuration as a variant through the full pipeline.  The baseline it is
compared with (`benchmarks/tune.py`) is what an author would write instead: the same kernel under
`@triton.autotune(configs=[...], key=[...])` over the same configurations, the launch no longer passing
the tuned values, and a grid that reads them from `META` the way the Triton tutorials do.  This module
writes that source from a `Discovery`, so the comparison uses exactly the configurations tune measured.

What it rewrites, per kernel with tuned parameters: the launch keywords of those parameters go (the
autotuner passes them); a grid that uses a name bound to a tuned value (`bm` in `BLOCK_M=bm`) becomes
`lambda META: ...` with `META["BLOCK_M"]` in its place (a grid named once, `grid = (...)`, is moved into
the launch the same way); the decorator goes above `@triton.jit`, keyed on
the launch's integer arguments (sizes and strides), so each shape is tuned once and a new shape again.
A source this cannot rewrite faithfully (the tuned name used elsewhere in the host code, a parameter
passed by position, a kernel launched twice, an autotune list already there) raises `VariantError` naming
why: the benchmark reports the problem as not comparable rather than compare with another program.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tritongym.core.scan.ast_scan import scan
from tritongym.core.source import parse_source
from tritongym.core.tune.space import DEFAULTS, Discovery, Offsets, _bindings, _scope_of
from tritongym.core.tune.variant import Edit, VariantError, apply_edits
from tritongym.core.tuning import Config, TuneParam

SIZE_ATTRIBUTES = {"shape", "stride", "numel", "size", "ndim", "dim"}
"""A launch argument built from these is an integer (a size or a stride): it keys the autotuner's cache."""


def base_name(param: TuneParam) -> str:
    """The keyword a parameter is passed as: its name without the kernel or line qualification."""
    return param.name.split("@")[0].split(".")[-1]


def _is_size(expr: ast.expr, scope: ast.AST, depth: int = 0) -> bool:
    """Whether `expr` is an integer known without running: a literal, `x.shape[0]`, `x.stride(1)`,
    `x.numel()`, arithmetic on those, or a name bound once to one of them (`m, k = x.shape` too)."""
    if depth > 4:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.BinOp):
        return _is_size(expr.left, scope, depth + 1) and _is_size(expr.right, scope, depth + 1)
    if any(isinstance(n, ast.Attribute) and n.attr in SIZE_ATTRIBUTES for n in ast.walk(expr)):
        return not isinstance(expr, ast.Name)
    if isinstance(expr, ast.Name):
        body = scope.body if isinstance(getattr(scope, "body", None), list) else []
        bound = _bindings(body, expr.id)
        if len(bound) == 1 and isinstance(bound[0], ast.AST):
            return _is_size(bound[0], scope, depth + 1)
        if len(bound) == 1 and bound[0] is None:  # tuple unpacking: `m, k = x.shape` binds through _paired
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
                    names = [t.id for t in node.targets[0].elts if isinstance(t, ast.Name)]
                    if expr.id in names and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                        return True
    return False


class _GridRewrite(ast.NodeTransformer):
    """`bm` -> `META["BLOCK_M"]` for every name bound to a tuned value."""

    def __init__(self, names: dict[str, str], meta: str) -> None:
        self.names, self.meta = names, meta

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names and isinstance(node.ctx, ast.Load):
            return ast.Subscript(ast.Name(self.meta, ast.Load()), ast.Constant(self.names[node.id]), ast.Load())
        return node


def _config_text(kernel_params: list[TuneParam], config: Config) -> str:
    values = [(p, config.get(p.name, p.current)) for p in kernel_params]
    meta = ", ".join(f"{base_name(p)!r}: {v}" for p, v in values if p.kind == "constexpr")
    launch = "".join(f", {p.kind}={v}" for p, v in values if p.kind in DEFAULTS)
    return f"triton.Config({{{meta}}}{launch})"


def autotuned_source(discovery: Discovery, configs: Sequence[Config]) -> str:
    """`discovery.source` with every tuned kernel under `@triton.autotune` over `configs` (see the module
    docstring).  Raises `VariantError` saying why when the source cannot be rewritten faithfully."""
    if not configs:
        raise VariantError("no configurations to autotune over")
    if discovery.autotunes:
        raise VariantError("the source already uses @triton.autotune")
    params = [p for p in discovery.space.params if not p.autotuned]
    if not params:
        raise VariantError("the source has no tunable launch parameters")
    source = discovery.source
    tree = parse_source(source)
    facts = scan(tree)
    if "triton" not in {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}:
        raise VariantError("the source does not `import triton` at module level (the decorator needs it)")
    offsets = Offsets(source)
    edits: list[Edit] = []
    kernels = {f.name: f for f in facts.jit_functions}
    for kernel_name in dict.fromkeys(p.kernel for p in params):
        fn = kernels[kernel_name]
        kernel_params = [p for p in params if p.kernel == kernel_name]
        launches = [
            launch
            for launch in facts.launches
            if launch.kernel.split(".")[-1] == kernel_name and isinstance(launch.node, ast.Subscript)
        ]
        if len(launches) != 1 or launches[0].call is None:
            raise VariantError(f"{kernel_name} is launched {len(launches)} times, not once as `kernel[grid](...)`")
        launch, call = launches[0], launches[0].call
        tuned = {base_name(p) for p in kernel_params}
        keywords = {k.arg: k for k in call.keywords if k.arg is not None}
        positional = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]][: len(call.args)]
        if tuned & set(positional):
            raise VariantError(f"{kernel_name}: {', '.join(sorted(tuned & set(positional)))} passed by position")
        # the names the tuned values are bound to: the grid may read them, nothing else may
        bound = {k.value.id: k.arg for k in keywords.values() if k.arg in tuned and isinstance(k.value, ast.Name)}
        scope = _scope_of(facts, call)
        grid = launch.node.slice
        allowed = {id(n) for k in keywords.values() if k.arg in tuned for n in ast.walk(k.value)}
        allowed |= {id(n) for n in ast.walk(grid)}
        if isinstance(grid, ast.Name):  # `grid = (cdiv(m, bm), ...)` then `kernel[grid]`: the expression moves in
            body = scope.body if isinstance(getattr(scope, "body", None), list) else []
            binding = _bindings(body, grid.id)
            if len(binding) == 1 and isinstance(binding[0], ast.AST):
                grid = binding[0]
                allowed |= {id(n) for n in ast.walk(grid)}
        for node in ast.walk(scope):
            if isinstance(node, ast.Name) and node.id in bound and isinstance(node.ctx, ast.Load):
                if id(node) not in allowed:
                    raise VariantError(
                        f"{kernel_name}: `{node.id}` (line {node.lineno}) is used outside the launch and its grid, "
                        "so the autotuner could not choose it"
                    )
        if isinstance(grid, ast.Lambda):
            meta = grid.args.args[0].arg if grid.args.args else "META"
            new_grid = ast.Lambda(grid.args, _GridRewrite(bound, meta).visit(grid.body))
        else:
            body = _GridRewrite(bound, "META").visit(parse_source(ast.unparse(grid), mode="eval").body)
            args = ast.arguments(
                posonlyargs=[],
                args=[ast.arg("META")],
                vararg=None,
                kwonlyargs=[],
                kw_defaults=[],
                kwarg=None,
                defaults=[],
            )
            new_grid = ast.Lambda(args, body)
        key = [
            a.arg
            for a, value in zip(fn.args.args, call.args)
            if not isinstance(value, ast.Starred) and _is_size(value, scope)
        ]
        key += [k.arg for k in call.keywords if k.arg not in tuned and k.arg and _is_size(k.value, scope)]
        call.keywords = [k for k in call.keywords if k.arg not in tuned]
        call.func = ast.Subscript(launch.node.value, new_grid, ast.Load())
        start, end = offsets.span(call)
        edits.append(Edit(start, end, ast.unparse(call)))
        unique = list(dict.fromkeys(_config_text(kernel_params, c) for c in configs))
        first = min(fn.decorator_list, key=lambda d: (d.lineno, d.col_offset))
        line_start = offsets.at(first.lineno, 0)
        indent = source.encode()[line_start : offsets.at(first.lineno, first.col_offset - 1)].decode()
        listed = f",\n{indent}        ".join(unique)
        decorator = f"{indent}@triton.autotune(\n{indent}    configs=[\n{indent}        {listed},\n{indent}    ],\n"
        decorator += f"{indent}    key={key!r},\n{indent})\n"
        edits.append(Edit(line_start, line_start, decorator))
    result = apply_edits(source.encode(), edits).decode()
    try:
        parse_source(result)
    except (SyntaxError, ValueError) as exc:
        raise VariantError(
            f"the autotuned rewrite is not valid Python ({exc}); a tritongym bug, please report it"
        ) from None
    return result
