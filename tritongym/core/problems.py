"""Find and read problems: our bundled suite, KernelBench files and directories, JSONL and parquet rows.

Problems are read, never executed, in the parent: the source is parsed for `Model`, `get_inputs`,
`get_init_inputs` and the literal `SIZES`/`CATEGORY` constants; the code itself runs only in the worker.
A size preset (`cpu` or `gpu`) picks one entry of `SIZES`, which the worker assigns to the module's
globals before calling `get_inputs`; KernelBench files without `SIZES` run at their own constants.

Correctness is also checked at more shape sets than that main one (`EvalConfig.shapes`), so a kernel that
hard-codes the problem's sizes fails.  A problem declares them as `EXTRA_SIZES`, per preset, each entry
overriding some constants of the preset:

    EXTRA_SIZES = {"cpu": [{"ROWS": 16, "COLS": 100}, {"ROWS": 7, "COLS": 45}], "gpu": [...]}

(a plain list applies to every preset).  A problem that declares none gets two derived sets, the shape
constants halved and made odd (`derive_extra_sizes`): the constants of `SIZES`, or in a KernelBench file
the integer constants that `get_inputs` / `get_init_inputs` read, from 16 up and not named like a kernel
size, stride, padding, group or head count.  A derived set the reference cannot run is skipped.

A problem spec is a suite name (`relu`), a `.py` file, or a directory / `.jsonl` / `.parquet` file,
optionally followed by `#NAME` to pick one problem from it.
"""

from __future__ import annotations

import ast
import difflib
import json
import operator
from collections.abc import Iterable
from pathlib import Path

from tritongym.core.errors import ProblemFormatError, ProblemNotFound
from tritongym.core.models import Problem
from tritongym.core.source import parse_source

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "problems"
SUITE_DIR = PACKAGE_DIR / "suite"
SOLUTIONS_DIR = PACKAGE_DIR / "solutions"
SIZE_PRESETS = ("cpu", "gpu")
_CODE_FIELDS = ("code", "reference", "ref_code", "pytorch_code", "reference_code", "source")
_NAME_FIELDS = ("name", "problem_name", "problem_id", "id", "task_id")


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}


def _constant(node: ast.expr):
    """A literal, allowing integer arithmetic such as `1 << 24` or `64 * 1024`, without running code."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _constant(node.left), _constant(node.right)
        if not all(isinstance(v, (int, float)) for v in (left, right)):
            raise ValueError("arithmetic on non-numbers")
        if isinstance(node.op, (ast.Pow, ast.LShift)) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_constant(node.operand)
    if isinstance(node, ast.Dict):
        return {_constant(k): _constant(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_constant(e) for e in node.elts]
    return ast.literal_eval(node)


def _literal(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return _constant(node.value)
            except (ValueError, TypeError, SyntaxError):
                raise ProblemFormatError(f"{name} must be a literal (numbers, strings, integer arithmetic)") from None
    return None


_NOT_SHAPES = ("kernel", "stride", "pad", "dilation", "group", "head", "eps", "seed", "axis", "reduce")
_MIN_DERIVED = 16  # smaller integer constants are more often a kernel size, an axis or a count than a size


def _module_ints(tree: ast.Module) -> dict[str, int]:
    """Module-level `NAME = <integer literal or integer arithmetic>` (not bool), in source order."""
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = _constant(node.value)
            except (ValueError, TypeError, SyntaxError):
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                found[node.targets[0].id] = value
    return found


def main_sizes(problem: Problem, names: Iterable[str]) -> dict:
    """The problem's own values of these constants (its size preset, else the module's integer constants), in the
    order given: how a verdict names the shapes a shape set departs from.  Names it has no value for are left out."""
    try:
        constants = {**_module_ints(parse_source(problem.source)), **problem.sizes}
    except SyntaxError:
        constants = dict(problem.sizes)
    return {k: constants[k] for k in names if k in constants}


def _read_by(tree: ast.Module, functions: tuple[str, ...]) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return names


def derive_extra_sizes(constants: dict[str, int]) -> list[dict[str, int]]:
    """Two shape sets from a problem's shape constants: every one halved, and every one made odd (about
    three quarters, rounded to odd), so that a kernel assuming the sizes, or a power of two, is seen."""
    shapes = {
        k: v for k, v in constants.items() if v >= _MIN_DERIVED and not any(word in k.lower() for word in _NOT_SHAPES)
    }
    if not shapes:
        return []
    halved = {k: max(1, v // 2) for k, v in shapes.items()}
    odd = {k: max(1, (3 * v // 4) | 1) for k, v in shapes.items()}
    return [s for s in (halved, odd) if s != shapes]


def _declared_extra_sizes(declared, size: str, known: set[str]) -> list[dict]:
    """`EXTRA_SIZES` for one preset, validated: a list of dicts naming module constants."""
    entries = declared.get(size, []) if isinstance(declared, dict) else declared
    if not isinstance(entries, list) or not all(isinstance(e, dict) and e for e in entries):
        raise ProblemFormatError(
            "EXTRA_SIZES must be a list of shape sets ({'NAME': value, ...}), or a dict of such lists per preset"
        )
    for entry in entries:
        unknown = sorted(str(k) for k in entry if k not in known)
        if unknown:
            raise ProblemFormatError(f"EXTRA_SIZES names {', '.join(unknown)}, which the problem does not define")
    return entries


def parse_problem(source: str, name: str, origin: str, size: str = "cpu", solution: str | None = None) -> Problem:
    """Validate KernelBench format and pick the size preset, without running the code."""
    try:
        tree = parse_source(source)
    except SyntaxError as exc:
        raise ProblemFormatError(f"problem '{name}' ({origin}) does not parse: line {exc.lineno}: {exc.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in defined]
    if missing:
        raise ProblemFormatError(
            f"problem '{name}' ({origin}) is not in KernelBench format: it defines no {', '.join(missing)}"
        )
    try:
        presets = _literal(tree, "SIZES")
        category = _literal(tree, "CATEGORY")
        declared = _literal(tree, "EXTRA_SIZES")
    except ProblemFormatError as exc:
        raise ProblemFormatError(f"problem '{name}' ({origin}): {exc}") from None
    sizes: dict = {}
    if presets is not None:
        if not isinstance(presets, dict) or size not in presets or not isinstance(presets[size], dict):
            known = ", ".join(presets) if isinstance(presets, dict) else "none"
            raise ProblemFormatError(f"problem '{name}' has no size preset '{size}' (presets: {known})")
        sizes = presets[size]
    extra: list[dict] = []
    origin_of_extra = None
    if declared is not None:
        try:
            extra = _declared_extra_sizes(declared, size, defined)
        except ProblemFormatError as exc:
            raise ProblemFormatError(f"problem '{name}' ({origin}): {exc}") from None
        origin_of_extra = "declared"
    else:
        constants = _module_ints(tree)
        if sizes:
            shape_constants = {k: v for k, v in sizes.items() if isinstance(v, int) and not isinstance(v, bool)}
        else:
            read = _read_by(tree, ("get_inputs", "get_init_inputs"))
            shape_constants = {k: v for k, v in constants.items() if k in read}
        extra = derive_extra_sizes(shape_constants)
        origin_of_extra = "derived" if extra else None
    doc = ast.get_docstring(tree) or ""
    return Problem(
        name=name,
        source=source,
        size=size,
        sizes=sizes,
        category=category if isinstance(category, str) else None,
        description=doc.strip().splitlines()[0] if doc.strip() else "",
        origin=origin,
        solution=solution,
        extra_sizes=extra,
        extra_sizes_origin=origin_of_extra,
    )


def suite_names() -> list[str]:
    return sorted(p.stem for p in SUITE_DIR.glob("*.py") if not p.name.startswith("_"))


def suite_problem(name: str, size: str = "cpu") -> Problem:
    path = SUITE_DIR / f"{name}.py"
    solution = SOLUTIONS_DIR / f"{name}.py"
    return parse_problem(
        path.read_text(), name, f"suite:{name}", size, solution.read_text() if solution.exists() else None
    )


def suite_problems(size: str = "cpu") -> list[Problem]:
    return [suite_problem(name, size) for name in suite_names()]


def _rows(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        rows = []
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ProblemFormatError(f"{path}:{i}: not valid JSON ({exc.msg})") from None
        return rows
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ProblemFormatError(f"reading {path} needs pyarrow: pip install 'tritongym[parquet]'") from None
    return pq.read_table(path).to_pylist()


def _from_rows(path: Path, size: str) -> list[Problem]:
    problems = []
    for i, row in enumerate(_rows(path)):
        if not isinstance(row, dict):
            raise ProblemFormatError(f"{path} row {i}: expected an object with reference code")
        code = next((row[f] for f in _CODE_FIELDS if isinstance(row.get(f), str)), None)
        if code is None:
            raise ProblemFormatError(f"{path} row {i}: no reference code (looked for {', '.join(_CODE_FIELDS)})")
        name = next((str(row[f]) for f in _NAME_FIELDS if row.get(f) not in (None, "")), f"{path.stem}-{i}")
        if row.get("level") is not None and "/" not in name:
            name = f"level{row['level']}/{name}"
        problems.append(parse_problem(code, name, f"{path}#{i}", size))
    return problems


def load_problems(spec: str | None = None, size: str = "cpu") -> list[Problem]:
    """All problems a spec names: the suite (None or 'suite'), a directory, a JSONL/parquet file, a file."""
    if size not in SIZE_PRESETS:
        raise ProblemFormatError(f"unknown size preset '{size}' (choose from {', '.join(SIZE_PRESETS)})")
    if spec in (None, "", "suite"):
        return suite_problems(size)
    path = Path(spec)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        if not files:
            raise ProblemNotFound(f"no .py problem files under {path}")
        return [
            parse_problem(p.read_text(), p.relative_to(path).with_suffix("").as_posix(), str(p), size) for p in files
        ]
    if path.is_file() and path.suffix in (".jsonl", ".parquet"):
        return _from_rows(path, size)
    return [load_problem(spec, size)]


def load_problem(spec: str, size: str = "cpu") -> Problem:
    """One problem: a suite name, a .py file, or `SOURCE#NAME` for a directory/JSONL/parquet source."""
    if size not in SIZE_PRESETS:
        raise ProblemFormatError(f"unknown size preset '{size}' (choose from {', '.join(SIZE_PRESETS)})")
    if "#" in spec:
        source, _, wanted = spec.rpartition("#")
        found = load_problems(source, size)
        for problem in found:
            if problem.name == wanted or problem.name.rsplit("/", 1)[-1] == wanted:
                return problem
        raise ProblemNotFound(f"no problem named '{wanted}' in {source}{did_you_mean(wanted, [p.name for p in found])}")
    path = Path(spec)
    if path.is_file() and path.suffix == ".py":
        return parse_problem(path.read_text(), path.stem, str(path), size)
    if path.exists():
        raise ProblemNotFound(f"{spec} holds several problems: pick one with {spec}#NAME")
    if (SUITE_DIR / f"{spec}.py").is_file():
        return suite_problem(spec, size)
    raise ProblemNotFound(
        f"no problem '{spec}': not a suite problem (see `tritongym problems list`) and not a file"
        + did_you_mean(spec, suite_names())
    )


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'softmax'?` for the known names closest to a mistyped one (difflib's ratio, as
    `git` and `pip` suggest), or '' when none is close: appended to every unknown-problem message."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def names_a_file(spec: str) -> bool:
    """Whether a problem spec points at a file (`path/to/p.py`, `SOURCE#NAME`) rather than naming a problem."""
    return "#" in spec or spec.endswith(".py") or Path(spec).is_file()


def stored_name(spec: str) -> str:
    """The name `tritongym eval --problem SPEC` stores its verdicts under: a file's problem name (`p.py` is
    `p`; `SOURCE#NAME` the name it has in SOURCE), a suite or stored name as given.  So every command that
    looks a problem up in the registry takes what `eval --problem` takes."""
    return load_problem(spec).name if names_a_file(spec) else spec


def resolve_names(specs: Iterable[str], known: Iterable[str], where: str) -> list[str]:
    """Each spec as its stored name (`stored_name`), in order, without repeats; a bare name that is neither
    in `known` nor in the suite is bad input (`ProblemNotFound`, exit 2), with the nearest names offered.
    A file is never unknown: it is a problem, whatever the registry holds for it."""
    names, unknown = [], []
    every = set(known) | set(suite_names())
    for spec in specs:
        name = stored_name(spec)
        if not names_a_file(spec) and name not in every:
            unknown.append(name)
        names.append(name)
    if unknown:
        first = unknown[0]
        listed = ", ".join(f"'{n}'" for n in unknown)
        raise ProblemNotFound(
            f"no problem {listed} in {where} or the suite (`tritongym problems list`)" + did_you_mean(first, every)
        )
    return list(dict.fromkeys(names))


def select(problems: list[Problem], only: Iterable[str], source: str | None) -> list[Problem]:
    """The problems of a source that `--only` names (all of them when it names none); a name the source
    does not hold is bad input, with the nearest names offered."""
    wanted = list(dict.fromkeys(only))
    if not wanted:
        return problems
    held = {p.name for p in problems}
    unknown = [n for n in wanted if n not in held]
    if unknown:
        raise ProblemNotFound(
            f"no such problem {', '.join(repr(n) for n in unknown)} in {source or 'the suite'}"
            + did_you_mean(unknown[0], held)
        )
    return [p for p in problems if p.name in set(wanted)]
