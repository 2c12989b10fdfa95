"""The import graph points one way, in the order `tritongym.core.LAYERS` lists (CLI -> API -> subsystems -> kernel).

`tritongym/core/__init__.py` holds the one list of layers and of the helper modules plugins may import; this
file enforces it and keeps no copy of its own.  Imports are read from the source with `ast` (every import, at
module level or inside a function), so a lazy import that closes a circle or climbs a layer is caught as
surely as a top-level one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tritongym.core
from tritongym.core import LAYERS, PLUGIN_HELPERS

PACKAGE = Path(__file__).resolve().parents[1] / "tritongym"
KERNEL = "tritongym.core"
PLUGINS = "tritongym.plugins"


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
    """The entry of LAYERS that `name` is or lies under (the longest), or "plugin" for a plugin module."""
    if name == PLUGINS or name.startswith(PLUGINS + "."):
        return "plugin"
    return max((e for e in LAYERS if name == e or name.startswith(e + ".")), key=len)


def test_every_module_has_a_layer_that_names_it():
    """A new subpackage of core/ (or module of tritongym/) must be given its place in LAYERS, not fall silently
    into the kernel or the package's top, where it could import what its real place forbids."""
    unplaced = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        if (layer(name) == KERNEL and package != KERNEL) or (layer(name) == "tritongym" and name != "tritongym"):
            unplaced.append(name)
    assert not unplaced, f"modules no entry of tritongym.core.LAYERS names: {unplaced}"


def test_the_plugin_helpers_are_modules_above_the_kernel():
    """A stale name (a helper renamed or moved) or a kernel module (allowed anyway) in PLUGIN_HELPERS says
    something untrue about what plugins may use."""
    wrong = sorted(h for h in PLUGIN_HELPERS if h not in MODULES or layer(h) in (KERNEL, "plugin"))
    assert not wrong, f"PLUGIN_HELPERS in tritongym/core/__init__.py names no helper module: {wrong}"


def test_the_core_docstring_lists_the_layers_in_their_order():
    """The prose in `tritongym/core/__init__.py` describes LAYERS entry by entry; an order that drifts from the
    list is the contradiction this list was made to end."""
    listed = [
        "the kernel" if line.startswith("- the kernel") else re.match(r"- `([\w.]+)`", line).group(1)
        for line in tritongym.core.__doc__.splitlines()
        if line.startswith("- ")
    ]
    expected = [
        "the kernel" if e == KERNEL else e.removeprefix(KERNEL + ".") if e.startswith(KERNEL + ".") else e
        for e in LAYERS
    ]
    assert listed == expected


LARGEST_ROOM = 0.15


def room(name: str) -> str:
    """The room a module lives in: its layer, or for a plugin its kind's subpackage (plugins/checks, ...)."""
    if layer(name) != "plugin":
        return layer(name)
    return ".".join(name.split(".")[:3]) if MODULES[name].parent != PACKAGE / "plugins" else PLUGINS


def test_no_room_holds_more_than_15_percent_of_the_package():
    """One room per subsystem, none of them the house: a layer (the kernel's own modules, a subsystem of core,
    a face) or a plugin kind that grows past 15% of the package's lines mixes things that want rooms of their
    own (core/eval/ held 22%: the pipeline, the sandbox and a source-scan library)."""
    lines: dict[str, int] = {}
    for name, path in MODULES.items():
        if name != "tritongym":
            lines[room(name)] = lines.get(room(name), 0) + len(path.read_text().splitlines())
    total = sum(lines.values())
    over = {r: f"{n / total:.0%}" for r, n in lines.items() if n > LARGEST_ROOM * total}
    assert not over, f"rooms over {LARGEST_ROOM:.0%} of the package's {total} lines: {over}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer(n) != "plugin"))
def test_no_module_imports_a_layer_above_its_own(name):
    own = LAYERS.index(layer(name))
    above = sorted(m for m in imports_of(name) if layer(m) != "plugin" and LAYERS.index(layer(m)) > own)
    assert not above, f"{name} ({layer(name)}) imports a higher layer: {above}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer(n) == "plugin"))
def test_plugins_import_only_the_kernel_and_the_plugin_helpers(name):
    allowed = {m for m in MODULES if layer(m) == KERNEL} | PLUGIN_HELPERS
    own_package = name.rsplit(".", 1)[0]
    wrong = sorted(m for m in imports_of(name) if m not in allowed and not m.startswith(own_package))
    where = "tritongym/core/__init__.py"
    assert not wrong, f"plugin {name} imports core internals {wrong}: use the kernel, or add a helper to {where}"


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


# --- sizes: a file one person can hold in their head -------------------------------------------------------------

LARGEST_MODULE = 800
LARGEST_CLASS = 400

LARGE_MODULES = {
    "tritongym.core.eval.evaluate": "the pipeline's one module, its `Evaluator` below; cut with it",
    "tritongym.core.keeper.keeper": "the keeper process: `Keeper` (below), `ReferenceRecord` and the request loop; "
    "its request handlers are the next seam (one module per request family), cut when the probes work on it ends",
}
"""Modules allowed past `LARGEST_MODULE` lines, each with why it is not cut yet."""

LARGE_CLASSES = {
    "tritongym.core.eval.evaluate.Evaluator": "the pipeline (registry lookup, static checks, screens, worker runs, "
    "verdict, timing reconciliation): its seams are marked but not yet cut into collaborators",
    "tritongym.core.registry.store.Registry": "one facade over registry.db's tables (sqlite-utils), used by every "
    "subsystem; to be split per table family (problems, kernels, evaluations, reference timings)",
    "tritongym.core.keeper.keeper.Keeper": "one method per keeper request (`HANDLERS`) over shared task state; "
    "the state wants its own class before the requests can move out",
}
"""Classes allowed past `LARGEST_CLASS` lines, each with why it is not cut yet."""


def _lines(name: str) -> int:
    return len(MODULES[name].read_text().splitlines())


def _classes() -> dict[str, int]:
    """Every class of the package, by its dotted name, with its length in lines (nested classes included)."""
    found = {}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found[f"{name}.{node.name}"] = node.end_lineno - node.lineno + 1
    return found


def test_no_module_passes_800_lines_unless_listed():
    """A module past ~800 lines holds several rooms (gpu_pool.py held options, the GPU lock, admission, three kinds
    of process, keeper calls, reference timing and evidence in 1,880 lines): cut it along its seams, or list it in
    `LARGE_MODULES` with the reason it is not cut yet."""
    over = {n: _lines(n) for n in MODULES if _lines(n) > LARGEST_MODULE and n not in LARGE_MODULES}
    assert not over, f"modules over {LARGEST_MODULE} lines: {over}"


def test_no_class_passes_400_lines_unless_listed():
    """`TaskDriver` was 745 lines; a class past ~400 does several jobs.  Cut it, or list it in `LARGE_CLASSES`."""
    over = {n: size for n, size in _classes().items() if size > LARGEST_CLASS and n not in LARGE_CLASSES}
    assert not over, f"classes over {LARGEST_CLASS} lines: {over}"


def test_the_size_exceptions_are_still_needed():
    """A listed module or class that was cut (or renamed) leaves an exception nobody needs: take it off the list."""
    classes = _classes()
    stale = [n for n in LARGE_MODULES if n not in MODULES or _lines(n) <= LARGEST_MODULE]
    stale += [n for n in LARGE_CLASSES if classes.get(n, 0) <= LARGEST_CLASS]
    assert not stale, f"size exceptions no longer needed: {stale}"


# --- the pool's wire protocol: one module, one message per tag, every received tag handled -----------------------


def test_every_protocol_tag_is_four_letters_and_names_one_message():
    """`HOUT`, `HDAT` and `RCHK` each named two messages (the worker's ask and the parent's relay to the keeper).
    An enum quietly makes a repeated value an alias of the first member, so the members are counted by name."""
    from tritongym.core.worker.protocol import CHANNELS

    tags = [
        (channel.__name__, name, member.value) for channel in CHANNELS for name, member in channel.__members__.items()
    ]
    bad = [t for t in tags if not re.fullmatch(r"[A-Z]{4}", t[2])]
    assert not bad, f"tags that are not four capital letters: {bad}"
    by_tag: dict[str, list[str]] = {}
    for channel, name, tag in tags:
        by_tag.setdefault(tag, []).append(f"{channel}.{name}")
    repeated = {tag: names for tag, names in by_tag.items() if len(names) > 1}
    assert not repeated, f"tags that name more than one message: {repeated}"


def test_every_tag_a_side_receives_has_its_handler():
    """The parent dispatches a worker's frames and the keeper the parent's requests through a handler table; a tag
    with no entry would be refused as a malformed frame (the candidate's crash) or an unknown request."""
    from tritongym.core.keeper.keeper import HANDLERS as KEEPER_HANDLERS
    from tritongym.core.sandbox.task_driver import TaskDriver
    from tritongym.core.worker.protocol import FromWorker, KeeperRequest

    assert set(TaskDriver.HANDLERS) == set(FromWorker)
    assert set(KEEPER_HANDLERS) == set(KeeperRequest)


def _protocol_names(module: str) -> set[str]:
    """`Channel.MEMBER` attributes a module names (`ToWorker.TIME`, ...), read from its source."""
    return {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(ast.parse(MODULES[module].read_text()))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }


def test_the_worker_expects_every_frame_the_parent_sends_it():
    """The worker's side is sequential (`Channel.expect`): each `ToWorker` tag must be one it waits for."""
    from tritongym.core.worker.protocol import ToWorker

    named = _protocol_names("tritongym.core.worker.gpu_worker")
    missing = sorted(f"ToWorker.{m.name}" for m in ToWorker if f"ToWorker.{m.name}" not in named)
    assert not missing, f"frames the parent sends that the worker never expects: {missing}"


POOL_PACKAGES = ("tritongym.core.sandbox", "tritongym.core.worker")


def test_protocol_tags_are_spelled_only_in_the_protocol_module():
    """27 tags once lived as string literals over three files; a literal elsewhere is a second spelling of the
    protocol that no test of it sees.  Docstrings and comments may name tags."""
    from tritongym.core.worker.protocol import CHANNELS

    tags = {member.value for channel in CHANNELS for member in channel}
    found = []
    for name, path in MODULES.items():
        if not name.startswith(POOL_PACKAGES) or name == "tritongym.core.worker.protocol":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            f"{name}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in tags and id(node) not in docstrings
        ]
    assert not found, f"protocol tags spelled outside tritongym/core/worker/protocol.py: {found}"


LAB_NOTES = re.compile(r"\b(stop|issue) \d+|DESIGN\.md")


def test_the_code_cites_no_lab_notes_and_no_file_outside_the_repository():
    """A comment says what was measured and why ("on an H100: ..."), not which working session or issue found it
    ("stop 36", "issue 27 item 1"): a reader of the code has neither.  And it points to ARCHITECTURE.md, never to
    `../shared/DESIGN.md`, a file outside the repository that no longer describes what the code does."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if LAB_NOTES.search(line)
    ]
    assert not found, "say the fact and its reason, or point to ARCHITECTURE.md:\n" + "\n".join(found)
