"""The import graph points one way (CLI -> API -> subsystems -> kernel), as `tritongym/core/__init__.py` says.

Read from the source with `ast` (every import, at module level or inside a function), so a lazy import
that closes a circle or climbs a layer is caught as surely as a top-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tritongym"

# lowest first: a module may import its own layer and the ones before it, never one after it
LAYERS = [
    "kernel",
    "core.eval.worker",
    "core.registry",
    "core.distributed",
    "core.eval",
    "core.reports",
    "core.tune",
    "core.learn",
    "core.scaling",
    "core.api",
    "core.service",
    "adapters",  # tritongym.adapters: reward functions for other trainers (TRL, verl), over the API or the service
    "core.cli",
    "main",
]
# what plugins may import besides the kernel: the helper modules documented for plugin authors
PLUGIN_HELPERS = {
    "tritongym.core.eval.ast_scan",
    "tritongym.core.eval.host_compute",
    "tritongym.core.op_families",
    "tritongym.core.eval.sandbox",
    "tritongym.core.eval.gpu_pool",
    "tritongym.core.learn.model_loading",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """Every tritongym module `name` imports (a `from package import module` counts as the module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            submodules = {f"{node.module}.{a.name}" for a in node.names} & MODULES.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):  # names from the package itself, not only its modules
                found.add(node.module)
    return {m for m in found if m in MODULES and m != name}


def layer(name: str) -> str:
    if name == "tritongym.adapters" or name.startswith("tritongym.adapters."):
        return "adapters"
    if name in ("tritongym", "tritongym.__main__") or not name.startswith("tritongym.core"):
        return "main" if name in ("tritongym", "tritongym.__main__") else "plugin" if ".plugins" in name else "kernel"
    for candidate in sorted(LAYERS, key=len, reverse=True):
        if candidate != "kernel" and (name == f"tritongym.{candidate}" or name.startswith(f"tritongym.{candidate}.")):
            return candidate
    return "kernel"


def test_the_layers_cover_every_core_module():
    unplaced = [n for n in MODULES if n.startswith("tritongym.core.") and n.count(".") > 2 and layer(n) == "kernel"]
    assert not unplaced, f"modules in a subpackage no layer names: {unplaced}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer(n) != "plugin"))
def test_no_module_imports_a_layer_above_its_own(name):
    own = LAYERS.index(layer(name))
    above = sorted(m for m in imports_of(name) if layer(m) != "plugin" and LAYERS.index(layer(m)) > own)
    assert not above, f"{name} ({layer(name)}) imports a higher layer: {above}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer(n) == "plugin"))
def test_plugins_import_only_the_kernel_and_the_plugin_helpers(name):
    allowed = {m for m in MODULES if layer(m) == "kernel"} | PLUGIN_HELPERS | {"tritongym"}
    own_package = name.rsplit(".", 1)[0]
    wrong = sorted(m for m in imports_of(name) if m not in allowed and not m.startswith(own_package))
    assert not wrong, f"plugin {name} imports core internals {wrong}: use the kernel, or add a helper to PLUGIN_HELPERS"


def test_there_is_no_import_circle():
    graph = {name: imports_of(name) for name in MODULES}
    # packages re-export their modules: an edge into a package's own module from its __init__ is not a circle
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert not circles, f"import circles: {circles}"
