"""A fixed set of candidate kernels for the throughput benchmarks: right, slow, wrong, crashing and broken.

Every candidate is one of our shipped suite solutions edited as text, the way an RL policy's samples
differ from a good answer.  Per problem there are eight variants:

* `solution`: the shipped source as it is;
* `slow_x2`, `slow_loop3`, `slow_list4`: still correct, but `forward` launches the work 2, 3 or 4 times
  (the original `forward` is renamed `_forward_impl` and a new `forward` calls it);
* `wrong_scale`: the output multiplied by 1.5; `wrong_element`: one output element off by 1.0;
* `crash`: `raise RuntimeError("boom")` as the first statement of `forward` (a runtime error);
* `syntax_error`: an `if` without its colon inserted in `forward` (does not parse: a compile error).

Every source is checked (`ast.parse` succeeds for all but `syntax_error`, where it must fail) and all
candidates have distinct sources and distinct kernel ids, so no two of them share a registry entry.

    from candidate_set import build_candidate_set, duplicated
    cands = build_candidate_set("gpu", n_problems=8)   # 64 (problem, variant, source) tuples
    batch = duplicated(cands, times=4)                 # each candidate 4 times, shuffled
"""

from __future__ import annotations

import ast
import random

from tritongym.core.problems import load_problem
from tritongym.core.source import kernel_id_of

PROBLEMS = (
    "relu",
    "gelu",
    "silu",
    "fused_multiply_add",
    "softmax",
    "layer_norm",
    "rms_norm",
    "l2_normalize",
    "log_softmax",
    "sum_dim",
    "hardtanh",
    "matmul",
    "mean_dim",
    "max_dim",
    "linear_bias_relu",
    "batched_matmul",
)
"""Quick-to-compile problems, in the order they are taken (the first 12 simple, `matmul` and the last two
with heavier compute); `kernelgym_throughput.py`'s RL-like batch takes all 16."""

VARIANTS = (
    "solution",
    "slow_x2",
    "slow_loop3",
    "slow_list4",
    "wrong_scale",
    "wrong_element",
    "crash",
    "syntax_error",
)
CORRECT_VARIANTS = frozenset(VARIANTS[:4])
"""The variants whose verdict should be `ok`; every other one should fail."""

_IMPL = "_forward_impl"

# New `forward` methods that call the original (renamed `_forward_impl`); {i} is the method indentation.
_WRAPPERS = {
    "slow_x2": [
        "def forward(self, *args, **kwargs):",
        "    self._forward_impl(*args, **kwargs)",
        "    return self._forward_impl(*args, **kwargs)",
    ],
    "slow_loop3": [
        "def forward(self, *args, **kwargs):",
        "    for _ in range(3):",
        "        out = self._forward_impl(*args, **kwargs)",
        "    return out",
    ],
    "slow_list4": [
        "def forward(self, *args, **kwargs):",
        "    outs = [self._forward_impl(*args, **kwargs) for _ in range(4)]",
        "    return outs[-1]",
    ],
    "wrong_scale": [
        "def forward(self, *args, **kwargs):",
        "    return self._forward_impl(*args, **kwargs) * 1.5",
    ],
    "wrong_element": [
        "def forward(self, *args, **kwargs):",
        "    out = self._forward_impl(*args, **kwargs)",
        "    out[(-1,) * out.dim()] += 1.0",
        "    return out",
    ],
}

# Lines inserted before the first statement of the original `forward`, at its body's indentation.
_INSERTS = {
    "crash": ['raise RuntimeError("boom")'],
    "syntax_error": ["if torch.cuda.is_available()", "    pass"],  # the missing colon is the error
}


def _forward_of(source: str, problem: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    raise ValueError(f"the solution of '{problem}' has no ModelNew.forward")


def make_variant(source: str, variant: str, problem: str = "?") -> str:
    """`source` (a solution) turned into `variant` by inserting lines at `def forward(` in ModelNew."""
    if variant == "solution":
        return source
    if _IMPL in source:
        raise ValueError(f"the solution of '{problem}' already uses the name {_IMPL}")
    forward = _forward_of(source, problem)
    lines = source.splitlines()
    def_index = forward.lineno - 1  # 0-based index of the `def forward(` line
    if not lines[def_index].lstrip().startswith("def forward("):
        raise ValueError(f"'{problem}': expected `def forward(` on line {forward.lineno}")
    if variant in _WRAPPERS:
        indent = " " * forward.col_offset
        lines[def_index] = lines[def_index].replace("def forward(", f"def {_IMPL}(", 1)
        new = [indent + line for line in _WRAPPERS[variant]] + [""]
        lines[def_index:def_index] = new
    elif variant in _INSERTS:
        first = forward.body[0]
        indent = " " * first.col_offset
        lines[first.lineno - 1 : first.lineno - 1] = [indent + line for line in _INSERTS[variant]]
    else:
        raise ValueError(f"unknown variant '{variant}' (choose from {', '.join(VARIANTS)})")
    return "\n".join(lines) + "\n"


def _verify(source: str, variant: str, problem: str) -> None:
    try:
        ast.parse(source)
    except SyntaxError:
        if variant != "syntax_error":
            raise ValueError(f"variant '{variant}' of '{problem}' does not parse") from None
        return
    if variant == "syntax_error":
        raise ValueError(f"variant 'syntax_error' of '{problem}' parses")


def build_candidate_set(size: str = "gpu", n_problems: int = 8) -> list[tuple[str, str, str]]:
    """(problem_name, variant_label, candidate_source) for the first `n_problems` of PROBLEMS, 8 variants each."""
    if not 1 <= n_problems <= len(PROBLEMS):
        raise ValueError(f"n_problems must be between 1 and {len(PROBLEMS)}")
    candidates = []
    for name in PROBLEMS[:n_problems]:
        problem = load_problem(name, size)
        if problem.solution is None:
            raise ValueError(f"suite problem '{name}' ships no solution")
        for variant in VARIANTS:
            source = make_variant(problem.solution, variant, name)
            _verify(source, variant, name)
            candidates.append((name, variant, source))
    sources = [c[2] for c in candidates]
    if len(set(sources)) != len(sources):
        raise AssertionError("two candidates have the same source")
    if len({kernel_id_of(s) for s in sources}) != len(sources):
        raise AssertionError("two candidates have the same kernel id")
    return candidates


def interleaved(cands: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The same candidates reordered so that every prefix mixes problems and variants evenly.

    Round r takes, from the p-th problem, its variant number (p + r) mod V: the first rounds cover every
    variant (for as many problems as there are variants) rather than every variant of one problem.
    """
    by_problem: dict[str, list[tuple[str, str, str]]] = {}
    for cand in cands:
        by_problem.setdefault(cand[0], []).append(cand)
    groups = list(by_problem.values())
    longest = max((len(g) for g in groups), default=0)
    out = []
    for r in range(longest):
        for p, group in enumerate(groups):
            if r < len(group):
                out.append(group[(p + r) % len(group)])
    return out


def duplicated(cands: list, times: int = 4, seed: int = 0) -> list:
    """Every candidate `times` times, in a shuffled order (an RL batch samples the same answer again)."""
    out = [c for c in cands for _ in range(times)]
    random.Random(seed).shuffle(out)
    return out
