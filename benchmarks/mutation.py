"""The judge measured like a test suite (issue 41 item 7): mutants of correct kernels, each labelled truly wrong
or equivalent by an independent witness, then judged by tritongym; the kill rate on the witnessed-wrong ones,
overall and per fault class, and the false-rejection rate on the kernels as written.

    python benchmarks/mutation.py --backend triton-cpu --size cpu --limit 40
    python benchmarks/mutation.py --backend triton-cuda --size gpu --corpus benchmarks/field_corpus --batch \
        --witness-jobs 8 --witness-cache .witness

**Subjects** (correct kernels): the suite's solutions, the honest idioms of `tests/hacks/honest/` (paired with
their problems as `tests/hacks/test_honest.py` lists them, read with `ast`), and with `--corpus DIR` a field
corpus: `DIR/manifest.json`'s `kernels` (each `DIR/candidates/<name>.py` against `DIR/problems/<name>.py`; on the
CPU those marked `gpu_only` are left out), or without a manifest every `candidates/*.py` with a problem of its name.

**Mutants**: each operator (`OPERATORS`: a name, a fault class, a small function) rewrites one site of a
kernel's syntax tree (`ast`): inside `@triton.jit` functions for masks, reduction identities, dropped terms
and precision; in host code for the grid, strides and buffers.  One mutant per site, at most `--sites` per
operator and kernel; identical sources are kept once.  `store_fp8` runs on `triton-cuda` only (the interpreter
has no float8 conversions).

**Witness** (`--witness-seeds` seeds x `WITNESS_SCALES`, and the problem's declared extra shape sets): a fresh
subprocess per kernel that imports no tritongym judging code: it builds `Model` and `ModelNew` under one seed,
moves every floating parameter of `Model` away from its initial value (a dropped bias of a module at zero
must show) and copies them into `ModelNew` by name and shape, then by equality with `Model`'s entry as built;
`torch.empty` and its kin return NaN there (so a kernel that relies on what a fresh buffer holds shows); the
reference runs in float64 where it can.  A mutant is *wrong* when on any input it raises, returns another
shape or dtype, puts NaN or inf where the reference has a number, or its error against the reference
(max |out - ref| / max |ref|) exceeds `max(WRONG_FACTOR x the unmutated kernel's on that input, floor)`
(floor by the output's dtype, `FLOOR`); otherwise *equivalent*, and left out of the kill rate.  An unmutated
kernel the witness itself finds wrong is reported and its mutants left out.

**Judge**: every witnessed-wrong mutant and every unmutated kernel through `Evaluator.evaluate_many` under the
default configuration (`--backend`, `--size`), kernel by kernel; killed = any status but `ok`.  Table on stdout,
JSON in `benchmarks/results/mutation-<backend>.json` (`--out`), rewritten after each kernel (`complete` says
whether the run finished).  `--witness-cache DIR` keeps the witness's labels (by kernel, problem, mutant
source and witness settings): a second run after a change to the judge only judges.

**On GPUs** subject by subject is slow (a minute or two per kernel on an H100: one witness subprocess, then a
batch of two or three kernels that leaves the pool's other workers idle).  `--witness-jobs J` runs J witness
subprocesses at once, each pinned (`CUDA_VISIBLE_DEVICES`) to one of the parent's GPUs in turn; `--batch`
witnesses every subject first (the report is written then, mutants labelled and `status` ""), then judges every
kernel in one `evaluate_many` per precision policy, which the pool spreads over all its GPUs.  On a 2-GPU or
4-GPU machine, 300 mutants:

    python benchmarks/mutation.py --backend triton-cuda --size gpu --corpus benchmarks/field_corpus --limit 300 \
        --batch --witness-jobs 8 --witness-seeds 5 --witness-cache .witness

Where one device call cannot hold both phases, the first call adds `--witness-only` (it stops once the cache
holds every label) and the second, the same command without it, witnesses nothing and only judges.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HONEST_DIR = ROOT / "tests" / "hacks" / "honest"
HONEST_LIST = ROOT / "tests" / "hacks" / "test_honest.py"
HACK_PROBLEMS = ROOT / "tests" / "hacks" / "problems"

WITNESS_SCALES = {"as_is": 1.0, "scaled_down": 1e-3, "negated": -1.0, "scaled_up": 4.0, "scaled_up_16": 16.0}
"""The witness's input distributions: the judge's four and one larger scale the judge never uses."""
WRONG_FACTOR = 4.0
FLOOR = {"torch.float64": 1e-9, "torch.float32": 1e-5, "torch.float16": 2e-3, "torch.bfloat16": 1.6e-2}


# --- subjects ----------------------------------------------------------------------------------------------


@dataclass
class Subject:
    """A correct kernel and the problem it solves (a suite name or a .py path)."""

    name: str
    origin: str  # suite, honest, corpus
    problem: str
    source: str
    precision: str = "tf32"


def suite_subjects(size: str) -> list[Subject]:
    from tritongym.core.problems import suite_problems

    return [
        Subject(f"suite:{p.name}", "suite", p.name, p.solution) for p in suite_problems(size) if p.solution is not None
    ]


def honest_subjects() -> list[Subject]:
    """The honest idioms as `test_honest.py` pairs them (`Case("file.py", "problem", ..., precision=...)`)."""
    tree = ast.parse(HONEST_LIST.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Case" and len(node.args) >= 2:
            file_node, problem_node = node.args[0], node.args[1]
            if not isinstance(file_node, ast.Constant):
                continue
            if isinstance(problem_node, ast.Constant):
                problem = str(problem_node.value)
            else:  # str(PROBLEMS / "x.py")
                names = [n.value for n in ast.walk(problem_node) if isinstance(n, ast.Constant)]
                problem = str(HACK_PROBLEMS / names[0]) if names else ""
            precision = next((k.value.value for k in node.keywords if k.arg == "precision"), "tf32")
            path = HONEST_DIR / str(file_node.value)
            if problem and path.exists():
                found.append(Subject(f"honest:{path.stem}", "honest", problem, path.read_text(), str(precision)))
    return found


def corpus_subjects(corpus: Path, backend: str) -> list[Subject]:
    """A field corpus: its manifest's kernels, or every candidate with a problem of its name."""
    manifest = corpus / "manifest.json"
    entries = (
        json.loads(manifest.read_text()).get("kernels", [])
        if manifest.exists()
        else [{"name": p.stem} for p in sorted((corpus / "candidates").glob("*.py"))]
    )
    found = []
    for entry in entries:
        if backend == "triton-cpu" and entry.get("gpu_only"):
            continue
        candidate, problem = corpus / "candidates" / f"{entry['name']}.py", corpus / "problems" / f"{entry['name']}.py"
        if candidate.exists() and problem.exists():
            found.append(Subject(f"corpus:{entry['name']}", "corpus", str(problem), candidate.read_text()))
    return found


# --- mutation operators ------------------------------------------------------------------------------------


@dataclass
class Operator:
    """One kind of fault: `sites(tree)` lists the nodes it can rewrite (in a fixed order), `rewrite(node)` gives
    the node that replaces one (or None to leave it)."""

    name: str
    fault_class: str
    scope: str  # "jit": inside @triton.jit functions; "host": everywhere else
    match: Callable[[ast.AST], bool]
    rewrite: Callable[[ast.AST], ast.AST]
    says: str
    backends: tuple[str, ...] = ()  # the backends it runs on (empty: every one)


def _is_jit(fn: ast.AST) -> bool:
    if not isinstance(fn, ast.FunctionDef):
        return False
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _scoped(tree: ast.Module, scope: str) -> list[ast.AST]:
    jit = [n for n in ast.walk(tree) if _is_jit(n)]
    if scope == "jit":
        return [n for fn in jit for n in ast.walk(fn)]
    inside = {id(n) for fn in jit for n in ast.walk(fn)}
    return [n for n in ast.walk(tree) if id(n) not in inside]


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _is_neg_inf(node: ast.AST) -> bool:
    text = ast.unparse(node).replace(" ", "").replace("'", '"')
    return text in ('float("-inf")', '-float("inf")', "-math.inf", "-np.inf", "-torch.inf") or (
        isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant) and node.operand.value == 1e30
    )


def _is_pos_inf(node: ast.AST) -> bool:
    text = ast.unparse(node).replace(" ", "").replace("'", '"')
    return text in ('float("inf")', "math.inf", 'float("+inf")')


def _drop_side(pattern: str, op: type) -> tuple[Callable, Callable]:
    rx = re.compile(pattern, re.IGNORECASE)

    def match(n: ast.AST) -> bool:
        return isinstance(n, ast.BinOp) and isinstance(n.op, op) and any(rx.search(_name(s)) for s in (n.left, n.right))

    def rewrite(n: ast.BinOp) -> ast.AST:
        return n.left if rx.search(_name(n.right)) else n.right

    return match, rewrite


def _is_call(n: ast.AST, *names: str) -> bool:
    return isinstance(n, ast.Call) and ast.unparse(n.func) in names


def _cast_store(dtype: str) -> Callable:
    def rewrite(n: ast.Call) -> ast.Call:
        n = copy.deepcopy(n)
        if len(n.args) >= 2:
            n.args[1] = _expr(f"({ast.unparse(n.args[1])}).to({dtype})")
        return n

    return rewrite


def _cast_dot(dtype: str) -> Callable:
    def rewrite(n: ast.Call) -> ast.Call:
        n = copy.deepcopy(n)
        n.args[:2] = [_expr(f"({ast.unparse(a)}).to({dtype})") for a in n.args[:2]]
        return n

    return rewrite


def _rounded_up(n: ast.AST) -> bool:
    """`(a + b - 1) // b`: a grid rounded up by hand."""
    return (
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.FloorDiv)
        and isinstance(n.left, ast.BinOp)
        and isinstance(n.left.op, ast.Sub)
        and isinstance(n.left.right, ast.Constant)
        and n.left.right.value == 1
    )


def _round_down(n: ast.AST) -> ast.AST:
    if isinstance(n, ast.Call):  # triton.cdiv(a, b)
        return ast.BinOp(left=n.args[0], op=ast.FloorDiv(), right=n.args[1])
    total = n.left.left  # (a + b - 1) // b -> a // b
    return ast.BinOp(left=total.left if isinstance(total, ast.BinOp) else total, op=ast.FloorDiv(), right=n.right)


def _stride_call(n: ast.AST) -> bool:
    return (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "stride"
        and len(n.args) == 1
        and isinstance(n.args[0], ast.Constant)
        and n.args[0].value in (0, 1, -1, -2)
    )


def _swap_stride(n: ast.Call) -> ast.Call:
    n = copy.deepcopy(n)
    n.args[0] = ast.Constant({0: 1, 1: 0, -1: -2, -2: -1}[n.args[0].value])
    return n


_ZEROS = ("torch.zeros", "torch.zeros_like")


def _zeros_call(n: ast.AST) -> bool:
    """`torch.zeros(...)`, `torch.zeros_like(...)` or `x.new_zeros(...)`."""
    return _is_call(n, *_ZEROS) or (
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "new_zeros"
    )


def _to_empty(n: ast.Call) -> ast.Call:
    n = copy.deepcopy(n)
    n.func = _expr(ast.unparse(n.func).replace("zeros", "empty"))
    return n


def _zeroing(n: ast.AST) -> bool:
    """`buf.zero_()` or `buf.fill_(0)` as a statement of its own (host code)."""
    if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)):
        return False
    call = n.value
    return call.func.attr == "zero_" or (call.func.attr == "fill_" and len(call.args) == 1 and _zero(call.args[0]))


def _unzeroed(n: ast.Expr) -> ast.Expr:
    """The zeroing call's receiver alone: the buffer keeps what it held."""
    return ast.Expr(value=n.value.func.value)


REUSE_HELPER = '''
_MUTANT_BUFFERS = {}


def _mutant_reused(key, make):
    """The buffer made on the first call, handed back on every later one (its last call's values in it)."""
    if key not in _MUTANT_BUFFERS:
        _MUTANT_BUFFERS[key] = make()
    return _MUTANT_BUFFERS[key]
'''


def _reused(n: ast.Call) -> ast.Call:
    return _expr(f"_mutant_reused({n.lineno * 1000 + n.col_offset}, lambda: {ast.unparse(n)})")


def _lt(n: ast.AST) -> bool:
    return isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Lt)


def _le(n: ast.Compare) -> ast.Compare:
    return ast.Compare(left=n.left, ops=[ast.LtE()], comparators=n.comparators)


def _short(n: ast.Compare) -> ast.Compare:
    bound = ast.BinOp(left=n.comparators[0], op=ast.Sub(), right=ast.Constant(1))
    return ast.Compare(left=n.left, ops=n.ops, comparators=[bound])


def _other(value: Callable[[ast.AST], bool]) -> Callable:
    def match(n: ast.AST) -> bool:
        return isinstance(n, ast.keyword) and n.arg == "other" and value(n.value)

    return match


def _other_to(text: str) -> Callable:
    return lambda n: ast.keyword(arg="other", value=_expr(text))


def _zero(n: ast.AST) -> bool:
    return isinstance(n, ast.Constant) and n.value == 0 and not isinstance(n.value, bool)


_eps = _drop_side(r"eps", ast.Add)
_bias = _drop_side(r"(^|_)(b|bias|beta|shift)($|_)|bias", ast.Add)
_scale = _drop_side(r"scale|^w$|weight|gamma|alpha|^s$|rstd|inv|factor", ast.Mult)


def _div(n: ast.AST) -> bool:
    return isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and not isinstance(n.left, ast.Constant)


def _f32(n: ast.AST) -> bool:
    return isinstance(n, ast.Attribute) and n.attr == "float32" and ast.unparse(n.value) in ("tl", "triton.language")


OPERATORS: list[Operator] = [
    Operator("mask_le", "mask_bounds", "jit", _lt, _le, "`a < n` -> `a <= n` (one element past the end)"),
    Operator("bound_short", "mask_bounds", "jit", _lt, _short, "`a < n` -> `a < n - 1` (the last element dropped)"),
    Operator(
        "identity_neg_inf_to_zero",
        "reduction_identity",
        "jit",
        _is_neg_inf,
        lambda n: ast.Constant(0.0),
        "-inf (max's identity) -> 0.0",
    ),
    Operator(
        "identity_inf_to_zero", "reduction_identity", "jit", _is_pos_inf, lambda n: ast.Constant(0.0), "+inf -> 0.0"
    ),
    Operator(
        "identity_other_zero_to_one",
        "reduction_identity",
        "jit",
        _other(_zero),
        _other_to("1.0"),
        "`other=0` (a sum's identity in masked lanes) -> `other=1.0`",
    ),
    Operator("drop_epsilon", "dropped_term", "jit", *_eps, "`v + eps` -> `v`"),
    Operator("drop_bias", "dropped_term", "jit", *_bias, "`v + bias` -> `v`"),
    Operator("drop_scale", "dropped_term", "jit", *_scale, "`v * scale` -> `v`"),
    Operator("drop_divisor", "dropped_term", "jit", _div, lambda n: n.left, "`a / b` -> `a`"),
    Operator(
        "store_fp16",
        "precision",
        "jit",
        lambda n: _is_call(n, "tl.store"),
        _cast_store("tl.float16"),
        "the stored value rounded to float16",
    ),
    Operator(
        "store_bf16",
        "precision",
        "jit",
        lambda n: _is_call(n, "tl.store"),
        _cast_store("tl.bfloat16"),
        "the stored value rounded to bfloat16",
    ),
    Operator(
        "store_fp8",
        "precision",
        "jit",
        lambda n: _is_call(n, "tl.store"),
        _cast_store("tl.float8e4nv"),
        "the stored value rounded to float8 (e4m3)",
        backends=("triton-cuda",),  # the interpreter has no float8 conversions; Hopper has them
    ),
    Operator(
        "dot_bf16",
        "precision",
        "jit",
        lambda n: _is_call(n, "tl.dot") and len(n.args) >= 2,
        _cast_dot("tl.bfloat16"),
        "tl.dot's operands cast to bfloat16",
    ),
    Operator(
        "compute_fp16",
        "precision",
        "jit",
        _f32,
        lambda n: _expr("tl.float16"),
        "a tl.float32 (cast or accumulator) -> tl.float16",
    ),
    Operator(
        "compute_bf16",
        "precision",
        "jit",
        _f32,
        lambda n: _expr("tl.bfloat16"),
        "a tl.float32 (cast or accumulator) -> tl.bfloat16",
    ),
    Operator(
        "grid_round_down",
        "tail_block",
        "host",
        lambda n: _is_call(n, "triton.cdiv", "cdiv") or _rounded_up(n),
        _round_down,
        "the grid rounded down (the tail block skipped)",
    ),
    Operator("swap_strides", "strides", "host", _stride_call, _swap_stride, "`x.stride(0)` <-> `x.stride(1)`"),
    Operator(
        "zeros_to_empty",
        "stale_buffer",
        "host",
        _zeros_call,
        _to_empty,
        "`torch.zeros` -> `torch.empty` (uninitialised)",
    ),
    Operator(
        "drop_zeroing",
        "stale_buffer",
        "host",
        _zeroing,
        _unzeroed,
        "`buf.zero_()` / `buf.fill_(0)` dropped (the buffer keeps what it held)",
    ),
    Operator(
        "zeros_reused",
        "stale_buffer",
        "host",
        _zeros_call,
        _reused,
        "a zeroed buffer made once and reused by every later call (stale)",
    ),
]


@dataclass
class Mutant:
    id: str
    subject: str
    operator: str
    fault_class: str
    site: int
    says: str
    line: int
    source: str
    witness: str = ""  # wrong, equivalent, excluded
    witness_why: str = ""
    status: str = ""
    message: str = ""


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return


def mutants_of(subject: Subject, max_sites: int, backend: str = "triton-cuda") -> list[Mutant]:
    """Every operator that runs on `backend` at each of its sites (at most `max_sites` each), as sources;
    identical ones once."""
    try:
        tree = ast.parse(subject.source)
    except SyntaxError:
        return []
    found: list[Mutant] = []
    seen = {ast.unparse(tree)}
    for op in OPERATORS:
        if op.backends and backend not in op.backends:
            continue
        sites = [n for n in _scoped(tree, op.scope) if op.match(n)]
        for k in range(min(len(sites), max_sites)):
            copied = copy.deepcopy(tree)
            target = [n for n in _scoped(copied, op.scope) if op.match(n)][k]
            new = op.rewrite(target)
            if new is None:
                continue
            _replace(copied, target, new)
            text = ast.unparse(ast.fix_missing_locations(copied))
            if op.name == "zeros_reused":
                text = REUSE_HELPER + "\n" + text
            if text in seen:
                continue
            seen.add(text)
            found.append(
                Mutant(
                    id=f"{subject.name}/{op.name}@{k}",
                    subject=subject.name,
                    operator=op.name,
                    fault_class=op.fault_class,
                    site=k,
                    says=op.says,
                    line=getattr(target, "lineno", 0),
                    source=text,
                )
            )
    return found


# --- the witness -------------------------------------------------------------------------------------------


WITNESS_CONTEXT_LOST = 3  # `mutation_witness.CONTEXT_LOST`: a sticky CUDA error; the rest run in a fresh process


def _run_witness(
    subject: Subject, problem, mutants: list[Mutant], backend: str, seeds: int, timeout: float, gpu: str | None = None
) -> dict:
    """Label every mutant of one kernel in a fresh subprocess (`benchmarks/mutation_witness.py`), which runs the
    unmutated kernel first; a mutant that kills the process is wrong (it crashed) and the rest run in another, as
    they do after one that leaves a sticky CUDA error (the subprocess labels it and exits `WITNESS_CONTEXT_LOST`).
    `gpu` (a `CUDA_VISIBLE_DEVICES` entry) pins the subprocess to one GPU, so parallel witnesses share them out."""
    results: dict[str, dict] = {}
    pending = list(mutants)
    original = None
    with tempfile.TemporaryDirectory(prefix="mutation-witness-") as tmp:
        while True:
            job = {
                "problem_source": problem.source,
                "sizes": problem.sizes,
                "extra_sizes": problem.extra_sizes if problem.extra_sizes_origin == "declared" else [],
                "original": subject.source,
                "mutants": [{"id": m.id, "source": m.source} for m in pending],
                "seeds": seeds,
                "scales": WITNESS_SCALES,
                "wrong_factor": WRONG_FACTOR,
                "floor": FLOOR,
                "device": "cuda" if backend == "triton-cuda" else "cpu",
                "workdir": tmp,
                "original_result": original,
            }
            env = {**os.environ, "PYTHONPATH": str(ROOT / "benchmarks")}
            if backend == "triton-cpu":
                env["TRITON_INTERPRET"] = "1"
            if gpu is not None:
                env["CUDA_VISIBLE_DEVICES"] = gpu
            try:
                done = subprocess.run(
                    [sys.executable, str(ROOT / "benchmarks" / "mutation_witness.py")],
                    input=json.dumps(job),
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    env=env,
                )
                lines, crashed, code = done.stdout.splitlines(), done.returncode != 0, done.returncode
                tail = done.stderr[-300:]
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
                lines, crashed, code, tail = out.splitlines(), True, None, "timed out"
            current = None
            for line in lines:
                if not line.startswith("{"):
                    continue
                record = json.loads(line)
                if record.get("start"):
                    current = record["start"]
                    continue
                if record["id"] == "__original__":
                    original = record
                else:
                    results[record["id"]] = record
                current = None
            if original is None:
                return {"original": {"wrong": True, "why": f"the witness could not run the kernel: {tail}"}}
            if not crashed:
                break
            if code == WITNESS_CONTEXT_LOST and current is None:
                # the last mutant labelled left the context unusable: the rest in a fresh process, not wrong for it
                pending = [m for m in pending if m.id not in results]
                if not pending:
                    break
                continue
            if current is None or current == "__original__":
                break
            results[current] = {"id": current, "wrong": True, "why": f"crashed the process: {tail.strip()[-200:]}"}
            pending = [m for m in pending if m.id not in results]
            if not pending:
                break
    return {"original": original, "mutants": results}


def _digest(*parts) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def witness_key(subject: Subject, problem, seeds: int, backend: str) -> str:
    """What a witness label depends on: the problem, the unmutated kernel, the witness's settings and its own
    source.  Equal keys mean the same witness ran on the same kernel, so a label kept under the key stands."""
    return _digest(
        problem.source,
        problem.sizes,
        problem.extra_sizes,
        subject.source,
        seeds,
        WITNESS_SCALES,
        WRONG_FACTOR,
        FLOOR,
        backend,
        Path(__file__).with_name("mutation_witness.py").read_text(),
    )


def labels_kept(result: Path) -> dict[str, dict]:
    """`--labels-from`: an earlier result's witness labels, by subject: its `witness_key`, the unmutated kernel's
    label and each mutant's label by its source's digest.  Subjects written without a key (results older than
    the key) are left out: their labels cannot be shown to come from today's witness."""
    earlier = json.loads(result.read_text())
    kept: dict[str, dict] = {}
    for name, o in earlier.get("originals", {}).items():
        if o.get("witness_key") and o.get("witness") in ("right", "wrong"):
            kept[name] = {"key": o["witness_key"], "original": o, "mutants": {}}
    for m in earlier.get("mutants", []):
        if m["subject"] in kept and m.get("digest") and m.get("witness") in ("wrong", "equivalent", "excluded"):
            kept[m["subject"]]["mutants"][m["digest"]] = m
    return kept


def reused_labels(subject: Subject, mutants: list[Mutant], key: str, kept: dict[str, dict]) -> dict | None:
    """The witness's result on `subject` rebuilt from `labels_kept`, when the earlier run's witness had the same
    key and labelled every one of these mutants (same source digest); None sends the subject to the witness."""
    earlier = kept.get(subject.name)
    if earlier is None or earlier["key"] != key:
        return None
    original = earlier["original"]
    found = {"original": {"wrong": original["witness"] == "wrong", "why": original.get("why", "")}, "mutants": {}}
    if original["witness"] == "wrong":
        return found  # its mutants are excluded whatever they are
    for m in mutants:
        label = earlier["mutants"].get(_digest(m.source))
        if label is None or label["witness"] == "excluded":
            return None
        found["mutants"][m.id] = {"wrong": label["witness"] == "wrong", "why": label.get("witness_why", "")}
    return found


def run_witness(
    subject: Subject,
    problem,
    mutants: list[Mutant],
    backend: str,
    seeds: int,
    timeout: float,
    cache: Path | None,
    gpu: str | None = None,
) -> dict:
    """`_run_witness`, with its labels kept in `cache` (a folder; None: none kept): one file per kernel, problem and
    witness setting, holding the unmutated kernel's result and each mutant's label by its source's digest.  A
    second run (after a change to the judge) then only judges; the witness is independent of the judge, so its
    labels stand.  Each subject has its own file, written whole (a temporary file renamed over it), so parallel
    witness jobs never share one and a run killed mid-write leaves the previous labels readable.  The result
    carries the subject's `witness_key` as `key`, which the report keeps for a later `--labels-from`."""
    key = witness_key(subject, problem, seeds, backend)
    if cache is None:
        return {**_run_witness(subject, problem, mutants, backend, seeds, timeout, gpu), "key": key}
    path = cache / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', subject.name)}-{key}.json"
    stored = json.loads(path.read_text()) if path.exists() else {"original": None, "mutants": {}}
    # An unmutated kernel the witness found wrong (or could not run) excludes its mutants: none needs a label, and
    # a later run (the judging call after --witness-only) does not witness it again.  Delete its file to retry.
    excluded = bool(stored["original"] and stored["original"].get("wrong"))
    todo = [] if excluded else [m for m in mutants if _digest(m.source) not in stored["mutants"]]
    if stored["original"] is None or todo:
        found = _run_witness(subject, problem, todo, backend, seeds, timeout, gpu)
        stored["original"] = found["original"]
        for m in todo:
            if m.id in found.get("mutants", {}):
                stored["mutants"][_digest(m.source)] = found["mutants"][m.id]
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(stored))
        os.replace(partial, path)
    labels = {m.id: stored["mutants"][_digest(m.source)] for m in mutants if _digest(m.source) in stored["mutants"]}
    return {"original": stored["original"], "mutants": labels, "key": key}


def witness_gpus(backend: str) -> list[str]:
    """The GPUs witness jobs are pinned to, in turn: the parent's `CUDA_VISIBLE_DEVICES` entries (indices or
    UUIDs, as given), else every GPU torch counts; none on `triton-cpu` (the witness runs on the CPU there)."""
    if backend == "triton-cpu":
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def witnessed(
    subjects: list[Subject], per_subject: dict[str, list[Mutant]], problems: dict, args: argparse.Namespace
) -> Iterator[tuple[Subject, dict, float]]:
    """Each subject's witness result and its seconds, as the witnesses finish.  One job (`--witness-jobs 1`) runs
    each witness when the caller asks for the next, as the benchmark always did; more run that many subprocesses
    at once from a thread pool (the witness is a subprocess, so threads only wait), each job holding a slot whose
    GPU is taken round-robin from `witness_gpus`: J jobs on G GPUs put at most ceil(J / G) witnesses on one GPU.
    Subjects whose labels an earlier result holds under the same witness key (`--labels-from`) come first, with
    no witness run: the witness is independent of the judge, so a judge change needs no new labels."""

    kept = getattr(args, "labels_kept", None)

    def reused(s: Subject) -> dict | None:
        key = witness_key(s, problems[s.name], args.witness_seeds, args.backend)
        found = reused_labels(s, per_subject.get(s.name, []), key, kept)
        return None if found is None else {**found, "key": key, "reused": True}

    if kept:  # labels kept from an earlier result (`--labels-from`) need no witness
        witness = []
        for s in subjects:
            if (found := reused(s)) is not None:
                yield s, found, 0.0
            else:
                witness.append(s)
        subjects = witness

    def one(s: Subject, gpu: str | None) -> tuple[Subject, dict, float]:
        began = time.perf_counter()
        found = run_witness(
            s,
            problems[s.name],
            per_subject.get(s.name, []),
            args.backend,
            args.witness_seeds,
            args.witness_timeout,
            args.witness_cache,
            gpu,
        )
        return s, found, time.perf_counter() - began

    if args.witness_jobs <= 1:
        for s in subjects:
            yield one(s, None)  # unpinned: the subprocess sees every GPU the parent does
        return
    gpus = witness_gpus(args.backend)
    slots: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    for k in range(args.witness_jobs):
        slots.put(gpus[k % len(gpus)] if gpus else None)

    def slotted(s: Subject) -> tuple[Subject, dict, float]:
        gpu = slots.get()  # never waits: the pool runs at most as many jobs as there are slots
        try:
            return one(s, gpu)
        finally:
            slots.put(gpu)

    pool = ThreadPoolExecutor(max_workers=args.witness_jobs, thread_name_prefix="witness")
    try:
        for future in as_completed([pool.submit(slotted, s) for s in subjects]):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a stopped run waits only for the witnesses under way


# --- judging -----------------------------------------------------------------------------------------------


class Judge:
    """tritongym under the default configuration (`--backend`, `--size`), one `Evaluator` per precision policy
    (the policy a subject's test names, else the default), kept open across subjects."""

    def __init__(self, backend: str, size: str):
        import contextlib

        self.backend, self.size = backend, size
        self.stack = contextlib.ExitStack()
        self.evaluators: dict = {}

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc) -> None:
        self.stack.close()

    def __call__(
        self, pairs: list[tuple[str, object, str]], precision_of: dict, on_verdict: Callable | None = None
    ) -> dict[str, tuple]:
        """Each (id, problem, source) judged; id -> (status, message, generality or "").  `on_verdict(id, verdict)`
        is called as each kernel's verdict comes (a batch run writes its JSON as it goes: a call cut by its limit
        keeps what was judged, and `--resume` judges only the rest)."""
        from tritongym.core.config import EvalConfig
        from tritongym.core.eval.evaluate import Evaluator
        from tritongym.core.models import Candidate

        verdicts: dict[str, tuple] = {}
        by_precision: dict[str, list] = {}
        for ident, problem, source in pairs:
            by_precision.setdefault(precision_of.get(ident, "tf32"), []).append((ident, problem, source))
        for precision, group in by_precision.items():
            if precision not in self.evaluators:
                config = EvalConfig(backend=self.backend, size=self.size, precision=precision)
                self.evaluators[precision] = self.stack.enter_context(Evaluator(config, registry=None))
            candidates = [(Candidate(source=s, origin=i), p) for i, p, s in group]
            idents: dict[tuple[str, str], list[str]] = {}  # one kernel for one problem runs once in a batch
            for (candidate, problem), (ident, _, _) in zip(candidates, group):
                idents.setdefault((problem.key, candidate.kernel_id), []).append(ident)

            def came(result, _idents=idents) -> None:
                verdict = (str(result.status.value), result.message, result.generality or "")
                for ident in _idents.get((result.problem_key, result.kernel_id), []):
                    if ident not in verdicts:
                        verdicts[ident] = verdict
                        if on_verdict is not None:
                            on_verdict(ident, verdict)

            results = self.evaluators[precision].evaluate_many(candidates, on_result=came)
            for (ident, _, _), result in zip(group, results):
                verdicts[ident] = (str(result.status.value), result.message, result.generality or "")
        return verdicts


# --- the run -----------------------------------------------------------------------------------------------


@dataclass
class Report:
    backend: str
    size: str
    subjects: int = 0
    witness_seeds: int = 0
    originals: dict = field(default_factory=dict)
    mutants: list = field(default_factory=list)
    summary: dict = field(default_factory=dict)


def label(s: Subject, ms: list[Mutant], found: dict, report: Report) -> list[Mutant]:
    """The witness's result on one subject written into its mutants (wrong, equivalent, or excluded when the
    unmutated kernel is itself wrong) and into `report.originals`; `ms` returned."""
    original = found["original"]
    report.originals[s.name] = {
        "witness": "wrong" if original.get("wrong") else "right",
        "why": original.get("why", ""),
        "witness_key": found.get("key", ""),
        "status": "",  # the judge's, once judged
        "message": "",
    }
    for m in ms:
        if original.get("wrong"):
            m.witness, m.witness_why = "excluded", "the unmutated kernel is wrong by the witness"
            continue
        result = found["mutants"].get(m.id, {"wrong": False, "why": "no result"})
        m.witness = "wrong" if result["wrong"] else "equivalent"
        m.witness_why = result.get("why", "")
    return ms


def to_judge(s: Subject, ms: list[Mutant], problems: dict, report: Report) -> list[tuple[str, object, str]]:
    """What the judge sees of one labelled subject: its unmutated kernel (unless the witness found it wrong) and
    its witnessed-wrong mutants, as (id, problem, source)."""
    pairs = (
        [] if report.originals[s.name]["witness"] == "wrong" else [(f"original:{s.name}", problems[s.name], s.source)]
    )
    return pairs + [(m.id, problems[m.subject], m.source) for m in ms if m.witness == "wrong"]


def spread(mutants: list[Mutant], limit: int | None) -> list[Mutant]:
    """At most `limit` mutants, taken round-robin over fault classes, then operators, kernels in a fixed shuffle (a
    small run sees every class and many kernels)."""
    if limit is None or limit >= len(mutants):
        return mutants
    import random

    mutants = list(mutants)
    random.Random(0).shuffle(mutants)  # every kernel has its turn, not the first ones only
    queues: dict[str, list[Mutant]] = {}
    for m in mutants:
        queues.setdefault(m.fault_class, []).append(m)
    for cls, ms in queues.items():  # within a class, alternate operators and subjects
        by_op: dict[str, list[Mutant]] = {}
        for m in ms:
            by_op.setdefault(m.operator, []).append(m)
        interleaved = []
        while any(by_op.values()):
            for op in list(by_op):
                if by_op[op]:
                    interleaved.append(by_op[op].pop(0))
        queues[cls] = interleaved
    chosen: list[Mutant] = []
    while len(chosen) < limit and any(queues.values()):
        for cls in list(queues):
            if queues[cls] and len(chosen) < limit:
                chosen.append(queues[cls].pop(0))
    return chosen


def summarise(report: Report) -> dict:
    wrong = [m for m in report.mutants if m["witness"] == "wrong" and m["status"]]
    classes = sorted({m["fault_class"] for m in report.mutants})

    def rate(ms: list) -> dict:
        killed = sum(m["status"] != "ok" for m in ms)
        return {"wrong": len(ms), "killed": killed, "kill_rate": round(killed / len(ms), 4) if ms else None}

    originals = [o for o in report.originals.values() if o.get("status")]
    # the witness runs a kernel at the problem's own shapes only: a refusal that the verdict puts at another shape
    # set (`generality`, `require_generality`) is outside what it labelled, so listed apart, never counted as right
    # or wrong here (attorch's NLL loss, wrong where the batch is not a multiple of its block: field_corpus's test)
    elsewhere = {n for n, o in report.originals.items() if o.get("generality") == "problem_shapes_only"}
    refused = [n for n, o in report.originals.items() if o.get("status") and o["status"] != "ok" and n not in elsewhere]
    refused_elsewhere = [n for n in elsewhere if report.originals[n]["status"] != "ok"]
    return {
        "mutants": len(report.mutants),
        "equivalent": sum(m["witness"] == "equivalent" for m in report.mutants),
        "overall": rate(wrong),
        "per_class": {
            c: {
                **rate([m for m in wrong if m["fault_class"] == c]),
                "equivalent": sum(m["witness"] == "equivalent" and m["fault_class"] == c for m in report.mutants),
            }
            for c in classes
        },
        "false_rejections": {
            "kernels": len(originals),
            "refused": refused,
            "rate": round(len(refused) / len(originals), 4) if originals else None,
            "refused_at_other_shapes_only": sorted(refused_elsewhere),
        },
        "survivors": [
            {"id": m["id"], "says": m["says"], "witness": m["witness_why"], "message": m["message"][:300]}
            for m in wrong
            if m["status"] == "ok"
        ],
    }


def kept_verdicts(out: Path, report: Report) -> dict[str, tuple]:
    """The verdicts an earlier run of the same backend and size wrote into `out` (`--resume`): id -> (status,
    message, generality), for unmutated kernels (`original:NAME`) and mutants judged there; none when it is missing
    or another run's."""
    if not out.exists():
        return {}
    earlier = json.loads(out.read_text())
    if (earlier.get("backend"), earlier.get("size")) != (report.backend, report.size):
        raise SystemExit(
            f"--resume: {out} holds a {earlier.get('backend')}/{earlier.get('size')} run, not "
            f"{report.backend}/{report.size}: name another --out"
        )
    kept = {
        f"original:{name}": (o["status"], o.get("message", ""), o.get("generality", ""))
        for name, o in earlier.get("originals", {}).items()
        if o.get("status")
    }
    kept.update({m["id"]: (m["status"], m.get("message", ""), "") for m in earlier.get("mutants", []) if m["status"]})
    return kept


def print_summary(summary: dict) -> None:
    from _common import print_table

    rows = [
        [c, s["wrong"], s["equivalent"], s["killed"], "-" if s["kill_rate"] is None else f"{100 * s['kill_rate']:.1f}%"]
        for c, s in summary["per_class"].items()
    ]
    o = summary["overall"]
    rows.append(
        [
            "all",
            o["wrong"],
            summary["equivalent"],
            o["killed"],
            "-" if o["kill_rate"] is None else f"{100 * o['kill_rate']:.1f}%",
        ]
    )
    print_table("mutation benchmark", ["fault class", "witnessed wrong", "equivalent", "killed", "kill rate"], rows)
    fr = summary["false_rejections"]
    print(f"false rejections: {len(fr['refused'])} of {fr['kernels']} unmutated kernels {fr['refused']}")
    if fr.get("refused_at_other_shapes_only"):
        print(
            f"refused only at another shape set, where the witness does not look (`require_generality`): "
            f"{fr['refused_at_other_shapes_only']}"
        )
    for s in summary["survivors"]:
        print(f"survived: {s['id']} ({s['says']}); witness: {s['witness']}")


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="triton-cpu")
    parser.add_argument("--size", default="cpu")
    parser.add_argument("--limit", type=int, default=None, help="at most this many mutants, spread over classes")
    parser.add_argument("--sites", type=int, default=3, help="at most this many sites per operator and kernel")
    parser.add_argument("--witness-seeds", type=int, default=20)
    parser.add_argument("--witness-timeout", type=float, default=900.0)
    parser.add_argument(
        "--witness-cache", type=Path, default=None, help="a folder keeping the witness's labels between runs"
    )
    parser.add_argument(
        "--corpus", type=Path, default=None, help="a field corpus (manifest.json, candidates/, problems/)"
    )
    parser.add_argument("--only", action="append", default=[], help="subjects whose name contains this (repeatable)")
    parser.add_argument("--operator", action="append", default=[], help="only these operators (repeatable)")
    parser.add_argument("--class", dest="classes", action="append", default=[], help="only these fault classes")
    parser.add_argument("--no-suite", action="store_true")
    parser.add_argument("--no-honest", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--labels-from",
        type=Path,
        default=None,
        help="an earlier result JSON: reuse its witness labels for every subject whose witness key (the witness's "
        "source and settings, the problem, the kernel) and mutant sources are unchanged; the rest are witnessed",
    )
    parser.add_argument(
        "--witness-jobs",
        type=int,
        default=1,
        help="witness subprocesses for this many subjects at once, each pinned to one GPU in turn (default 1: one "
        "at a time, unpinned)",
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="every witness first, then one judging pass over all kernels (one evaluate_many per precision policy)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --batch: keep the verdicts already in --out (a run cut while judging) and judge only the rest",
    )
    parser.add_argument(
        "--witness-only",
        action="store_true",
        help="stop after the witness phase (needs --witness-cache; a later run judges from the cache)",
    )
    args = parser.parse_args(argv)
    if args.witness_jobs < 1:
        raise SystemExit(f"--witness-jobs {args.witness_jobs}: give 1 or more witness subprocesses at once")
    if args.resume and not args.batch:
        raise SystemExit(
            "--resume keeps a --batch run's verdicts: add --batch (a subject-by-subject run judges as it goes)"
        )
    if args.witness_only and args.witness_cache is None:
        raise SystemExit(
            "--witness-only keeps its labels for a later run only in --witness-cache: name a folder, e.g. "
            "--witness-cache .witness"
        )

    args.labels_kept = labels_kept(args.labels_from) if args.labels_from else {}

    from tritongym.core.problems import load_problem

    subjects = [] if args.no_suite else suite_subjects(args.size)
    subjects += [] if args.no_honest else honest_subjects()
    subjects += corpus_subjects(args.corpus, args.backend) if args.corpus else []
    if args.only:
        subjects = [s for s in subjects if any(o in s.name for o in args.only)]
    by_name = {s.name: s for s in subjects}
    problems = {s.name: load_problem(s.problem, args.size) for s in subjects}
    mutants = [m for s in subjects for m in mutants_of(s, args.sites, args.backend)]
    if args.operator:
        mutants = [m for m in mutants if m.operator in args.operator]
    if args.classes:
        mutants = [m for m in mutants if m.fault_class in args.classes]
    mutants = spread(mutants, args.limit)
    report = Report(args.backend, args.size, subjects=len(subjects), witness_seeds=args.witness_seeds)
    out = args.out or ROOT / "benchmarks" / "results" / f"mutation-{args.backend}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()

    per_subject: dict[str, list[Mutant]] = {}
    for m in mutants:
        per_subject.setdefault(m.subject, []).append(m)
    judged_subjects = [s for s in subjects if s.name in per_subject] if args.limit is not None else subjects
    precision_of = {f"original:{s.name}": s.precision for s in subjects}
    precision_of.update({m.id: by_name[m.subject].precision for m in mutants})

    shown: dict[str, list[Mutant]] = {}  # subject -> its mutants, once labelled

    def write(final: bool) -> None:
        """The report so far (every labelled subject's mutants, in subject order), rewritten as it grows."""
        order = [s.name for s in judged_subjects]
        report.originals = {n: report.originals[n] for n in order if n in report.originals}
        report.mutants = [
            {**{k: v for k, v in asdict(m).items() if k != "source"}, "digest": _digest(m.source)}
            for n in order
            for m in shown.get(n, [])
        ]
        report.summary = summarise(report)
        report.summary["seconds"] = round(time.perf_counter() - began, 1)
        report.summary["complete"] = final
        out.write_text(json.dumps(asdict(report), indent=1) + "\n")

    def record(verdicts: dict[str, tuple], names: list[str]) -> None:
        """The judge's verdicts on these subjects' unmutated kernels and mutants (none: not judged, "")."""
        for name in names:
            status, message, generality = verdicts.get(f"original:{name}", ("", "", ""))
            report.originals[name].update(status=status, message=message[:300], generality=generality)
            for m in per_subject.get(name, []):
                m.status, m.message, _ = verdicts.get(m.id, ("", "", ""))

    # read before the first write below rewrites `out`
    kept = kept_verdicts(out, report) if args.resume else {}
    witnesses = witnessed(judged_subjects, per_subject, problems, args)
    if not (args.batch or args.witness_only):
        with Judge(args.backend, args.size) as judge:
            for s, found, _ in witnesses:
                ms = label(s, per_subject.get(s.name, []), found, report)
                pairs = to_judge(s, ms, problems, report)
                record(judge(pairs, precision_of) if pairs else {}, [s.name])
                shown[s.name] = ms
                write(final=False)
                wrong = [m for m in ms if m.witness == "wrong"]
                status = report.originals[s.name]["status"]
                print(
                    f"{s.name}: {len(wrong)} wrong of {len(ms)}, {sum(m.status != 'ok' for m in wrong)} killed; "
                    f"unmutated {status or 'not judged'} ({time.perf_counter() - began:.0f} s)",
                    flush=True,
                )
        write(final=True)
        print_summary(report.summary)
        print(f"wrote {out}")
        return report

    for s, found, seconds in witnesses:
        ms = label(s, per_subject.get(s.name, []), found, report)
        shown[s.name] = ms
        record(kept, [s.name])  # `--resume`: the verdicts kept stay in the JSON rewritten below
        wrong = sum(m.witness == "wrong" for m in ms)
        unmutated = report.originals[s.name]["witness"]
        parts = (found.get("original") or {}).get("seconds") or {}  # the witness's own parts, where it said them
        mutant_s = sum(r.get("seconds", 0) for r in (found.get("mutants") or {}).values())
        detail = ", ".join(f"{k} {v:.1f}" for k, v in {**parts, "mutants": mutant_s}.items()) if parts else ""
        print(
            f"{s.name}: witnessed {wrong} wrong of {len(ms)}, unmutated {unmutated} "
            + (
                f"(labels kept in {args.labels_from})"
                if found.get("reused")
                else f"({seconds:.0f} s" + (f": {detail} s" if detail else "") + ")"
            ),
            flush=True,
        )
        write(final=False)
    write(final=False)  # the labels, not yet judged (status ""): a run stopped while judging keeps them
    print(f"witnessed {len(shown)} subjects in {time.perf_counter() - began:.0f} s; wrote {out}", flush=True)
    if args.witness_only:
        print(f"--witness-only: labels kept in {args.witness_cache}; judge them by running again without it")
        return report
    pairs = [pair for s in judged_subjects for pair in to_judge(s, shown[s.name], problems, report)]
    originals = sum(ident.startswith("original:") for ident, _, _ in pairs)
    print(
        f"judging {len(pairs)} kernels ({originals} unmutated, {len(pairs) - originals} witnessed-wrong mutants), "
        f"one batch per precision policy",
        flush=True,
    )
    if kept:
        pairs = [pair for pair in pairs if pair[0] not in kept]
        print(f"--resume: {len(kept)} verdicts kept from {out}, {len(pairs)} kernels left to judge", flush=True)
    judging_began = time.perf_counter()
    verdicts = dict(kept)
    last_write = [time.monotonic()]

    def came(ident: str, verdict: tuple) -> None:
        verdicts[ident] = verdict
        if time.monotonic() - last_write[0] > 10:  # the JSON as it grows, every 10 s at most
            record(verdicts, [s.name for s in judged_subjects])
            write(final=False)
            last_write[0] = time.monotonic()

    with Judge(args.backend, args.size) as judge:
        verdicts.update(judge(pairs, precision_of, on_verdict=came) if pairs else {})
    record(verdicts, [s.name for s in judged_subjects])
    write(final=True)
    o = report.summary["overall"]
    refused = len(report.summary["false_rejections"]["refused"])
    print(
        f"judged {len(verdicts)} kernels in {time.perf_counter() - judging_began:.0f} s: {o['killed']} of "
        f"{o['wrong']} witnessed-wrong mutants killed, {refused} of {originals} unmutated refused",
        flush=True,
    )
    print_summary(report.summary)
    print(f"wrote {out}")
    return report


if __name__ == "__main__":
    main()
