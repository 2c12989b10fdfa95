"""Build the field corpus from the libraries' sources: one problem and one candidate per kernel, and the manifest.

    python benchmarks/field_corpus/build.py --mirrors /work/.mirror  # rewrites problems/, candidates/, the manifest

Each library is read at the commit named in `LIBRARIES` from a bare git mirror (`<mirrors>/<owner>+<repo>/repo`,
as the `fetch` tool lays them out, or any `git clone --mirror`).  A candidate is the library's file as it is, but
for its imports of the library's own runtime, which the adapter in `_shims.py` replaces, and a `ModelNew` that calls
the library's entry point the way the library's users do.  The built files are committed; this script is how they
were made, and how to make them again at a newer commit.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import _shims
from _entries import ENTRIES, LIBRARIES, PROBLEM_HELPERS

HERE = Path(__file__).resolve().parent


def git_show(mirrors: Path, repo: str, commit: str, path: str) -> str:
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def top_level_sources(source: str, names: set[str]) -> dict[str, str]:
    """The source of each named top-level def/assignment, decorators included; a name bound more than once
    (`f = triton.jit(f)` after `def f`, as unsloth writes its kernels) gets every binding, in order."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in tree.body:
        name = getattr(node, "name", None)
        if name is None and isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            name = target.id if isinstance(target, ast.Name) else None
        if name in names:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = "\n".join(lines[start - 1 : node.end_lineno])
            found[name] = found[name] + "\n\n\n" + text if name in found else text
    return found


def strip_imports(source: str, prefixes: tuple[str, ...]) -> tuple[str, list[str]]:
    """The source without the import statements of the given modules (multi-line ones too), and those imports.
    The prefix "." stands for every relative import (`from .utils import ...`): a library whose files import each
    other so (attorch) is vendored as those files pasted in dependency order."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    removed = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            relative = isinstance(node, ast.ImportFrom) and node.level > 0 and "." in prefixes
            if relative or any(m == p or m.startswith(p + ".") for m in mods for p in prefixes):
                drop.update(range(node.lineno, node.end_lineno + 1))
                removed.append(ast.get_source_segment(source, node))
    kept = [line for i, line in enumerate(lines, 1) if i not in drop]
    return "\n".join(kept), removed


def drop_statements(source: str, needle: str) -> str:
    """The source without its top-level statements that mention `needle` (an import a candidate may not make)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        if needle in (ast.get_source_segment(source, node) or ""):
            drop.update(range(node.lineno, node.end_lineno + 1))
    return "\n".join(line for i, line in enumerate(lines, 1) if i not in drop)


# --------------------------------------------------------------------------------------------- FlagGems adapter
class FlagGemsRuntime:
    def __init__(self, mirrors: Path, repo: str, commit: str):
        read = lambda p: git_show(mirrors, repo, commit, "src/flag_gems/" + p)  # noqa: E731
        self.yaml = yaml.safe_load(read("runtime/backend/_nvidia/tune_configs.yaml"))
        self.heur_src = read("runtime/backend/_nvidia/heuristics_config_utils.py")
        self.tle_src = read("utils/triton_lang_extension.py")
        self.utils = {
            "dim_compress": read("utils/shape_utils.py"),
            "volume": read("utils/shape_utils.py"),
            "broadcastable_to": read("utils/shape_utils.py"),
            "get_dtype_min": read("utils/limits.py"),
            "get_dtype_max": read("utils/limits.py"),
        }

    def tuned(self, name: str) -> list:
        """runtime.get_tuned_config(name) as ConfigLoader builds it (its defaults carried from one entry on)."""
        default = {"num_stages": 2, "num_warps": 4, "num_ctas": 1}
        entries = self.yaml[name]
        out = []
        if len(entries) == 1 and "gen" in entries[0]:
            gen = entries[0]
            params = gen["param_map"]
            keys = list(params["META"]) + [k for k in params if k != "META"]
            configs = [{"META": {}, **default}]
            for key in keys:
                var = params["META"][key] if key in params["META"] else params[key]
                values = [var] if isinstance(var, int) else gen[var]
                nxt = []
                for c in configs:
                    for v in values:
                        c2 = {"META": dict(c["META"]), **{k: c[k] for k in default}}
                        (c2["META"] if key in params["META"] else c2)[key] = v
                        nxt.append(c2)
                configs = nxt
            return [(c["META"], c["num_warps"], c["num_stages"], c["num_ctas"]) for c in configs]
        for entry in entries:
            for k in default:
                if k in entry:
                    default[k] = entry[k]
            out.append((entry["META"], default["num_warps"], default["num_stages"], default["num_ctas"]))
        return out

    def heuristics(self, name: str) -> tuple[str, str]:
        """The functions of heuristics_config_utils.py an op's heuristics use, and the dict entry."""
        tree = ast.parse(self.heur_src)
        table = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "HEURISTICS_CONFIGS")
        entry = next(v for k, v in zip(table.value.keys, table.value.values) if k.value == name)
        fns = {n.id for n in ast.walk(entry) if isinstance(n, ast.Name)}
        return "\n\n\n".join(top_level_sources(self.heur_src, fns).values()), ast.get_source_segment(
            self.heur_src, entry
        )

    def adapter(self, body: str, removed: list[str]) -> str:
        """The adapter a FlagGems op file needs in front of it."""
        parts = [_shims.FLAGGEMS_BASE]
        tuned = sorted(set(re.findall(r'get_tuned_config\("(\w+)"\)', body)))
        heur = sorted(set(re.findall(r'get_heuristic_config\("(\w+)"\)', body)))
        parts.append("_TUNED_CONFIGS = {\n" + "".join(f"    {n!r}: {self.tuned(n)!r},\n" for n in tuned) + "}\n")
        entries = []
        for n in heur:
            fns, entry = self.heuristics(n)
            if fns:
                parts.append(fns + "\n")
            entries.append(f"    {n!r}: {entry},\n")
        parts.append("_HEURISTIC_CONFIGS = {\n" + "".join(entries) + "}\n")
        imported = " ".join(removed)
        if "pointwise_dynamic" in imported:
            parts.append(_shims.FLAGGEMS_POINTWISE)
        if "tl_extra_shim" in imported:
            parts.append("from triton.language.extra.cuda import libdevice as tl_extra_shim  # flag_gems on NVIDIA\n")
        helpers = [n for n in self.utils if re.search(rf"\b{n}\b", imported)]
        if "broadcastable_to" in helpers:
            parts.append("from typing import Tuple\n\nShape = Tuple[int]  # flag_gems.utils.shape_utils\n")
        for n in helpers:
            parts.append("# flag_gems.utils\n" + top_level_sources(self.utils[n], {n})[n] + "\n")
        tle_names = sorted(set(re.findall(r"\btle\.(\w+)", body)))
        if tle_names:
            srcs = top_level_sources(self.tle_src, set(tle_names) | {"promote_to_tensor", "is_floating"})
            needed = [n for n in srcs if n in tle_names or any(n + "(" in srcs[m] for m in tle_names if m in srcs)]
            parts.append("from collections import namedtuple\n\n" + "\n\n\n".join(srcs[n] for n in needed) + "\n")
            members = "\n".join(f"    {n} = {n}" for n in tle_names)
            parts.append(
                "class tle(namedtuple('tle', ())):\n"
                "    # flag_gems.utils.triton_lang_extension (a namedtuple class: a global Triton lets a kernel read)\n"
                + members
                + "\n"
            )
        return "\n".join(parts)


@dataclass
class Built:
    name: str
    problem: str
    candidate: str
    meta: dict = field(default_factory=dict)


def header(lib: dict, path: str, op: str) -> str:
    return (
        f'"""Field corpus: {lib["name"]}\'s `{path}` ({lib["licence"]}, {lib["url"]} at {lib["commit"][:12]}),\n'
        f"judged against `{op}`.\n\n"
        "The library's code below the adapter is as the library writes it; the adapter replaces only its imports of\n"
        "the library's own runtime, and `ModelNew` calls the library's entry point\n"
        '(see benchmarks/field_corpus/SOURCES.md)."""\n'
    )


def build_entry(entry, mirrors: Path, runtimes: dict) -> Built:
    lib = LIBRARIES[entry.lib]
    gpu_only, why = entry.gpu_only, entry.why_gpu_only
    sources = [git_show(mirrors, lib["repo"], lib["commit"], p) for p in entry.paths]
    parts = [
        header(lib, ", ".join(entry.paths), entry.op),
        "import torch\nimport triton\nimport triton.language as tl\n",
    ]
    if entry.lib == "flaggems":
        rt = runtimes.setdefault("flaggems", FlagGemsRuntime(mirrors, lib["repo"], lib["commit"]))
        bodies, removed = [], []
        for src in sources:
            body, rem = strip_imports(src, ("flag_gems",))
            bodies.append(body)
            removed += rem
        parts.append(rt.adapter("\n".join(bodies), removed))
        parts.append("# ---- end of adapter; " + ", ".join(entry.paths) + " as the library writes it ----\n")
        parts += bodies
    else:
        for path, src in zip(entry.paths, sources):
            body, removed = strip_imports(src, lib["strip"])
            body = drop_statements(body, "torch.distributed")
            if entry.select:
                picked = top_level_sources(body, set(entry.select))
                missing = set(entry.select) - set(picked)
                if missing:
                    raise SystemExit(f"{entry.name}: {sorted(missing)} not in {path}")
                body = "\n\n\n".join(picked[n] for n in entry.select if n in picked)
            shim = getattr(_shims, lib["shim"]) if lib.get("shim") else ""
            if shim and path == entry.paths[0]:
                parts.append(shim)
            parts.append(f"# ---- end of adapter; {path} as the library writes it ----\n")
            parts.append(body)
    parts.append("\n# ---- the wrapper: the torch operation's signature onto the library's entry point ----\n")
    parts.append(textwrap.dedent(entry.model_new).strip() + "\n")
    candidate = "\n\n".join(p.rstrip() + "\n" for p in parts)
    problem = make_problem(entry, lib)
    meta = {
        "name": entry.name,
        "library": lib["name"],
        "repository": lib["url"],
        "commit": lib["commit"],
        "paths": list(entry.paths),
        "licence": lib["licence"],
        "torch_op": entry.op,
        "gpu_only": gpu_only,
        "why_gpu_only": why,
    }
    return Built(entry.name, problem, candidate, meta)


def make_problem(entry, lib) -> str:
    sizes = entry.sizes
    consts = "\n".join(f"{k} = {v!r}" for k, v in sizes["gpu"].items())
    return (
        f'"""{entry.op}: the operation {lib["name"]}\'s `{entry.paths[0]}` implements (field corpus)."""\n\n'
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F  # noqa: F401\n\n"
        'CATEGORY = "field_corpus"\n\n'
        f"{consts}\n\n"
        f"SIZES = {json.dumps(sizes)}\n\n"
        + PROBLEM_HELPERS.get(entry.name, "")
        + "\n\n"
        + textwrap.dedent(entry.problem).strip()
        + "\n"
    )


def sources_md(manifest: list[dict]) -> str:
    libs = {k["library"]: k for k in manifest}
    lines = [
        "# Where the field corpus comes from",
        "",
        "Generated by `build.py` with `manifest.json` (the same facts as JSON). Each candidate is the library's file",
        "at the commit below, its imports of the library's own runtime replaced by the adapter of `_shims.py`",
        "(launch plumbing only: FlagGems' `libentry` cache, its `pointwise_dynamic` code generator as one generic",
        "kernel, its YAML-tuned configs inlined; Liger's `calculate_settings` and device helpers without `importlib`;",
        "unsloth's `calculate_settings` and one-GPU device helpers without `ctypes` or bitsandbytes), and a `ModelNew`",
        "that calls the library's entry point. attorch's files import each other (`from .utils import ...`): a",
        "candidate is the files it needs pasted whole in dependency order, those imports removed. unsloth's files also",
        "patch transformers: a candidate holds the named definitions it runs (kernels, autograd function, entry",
        "point).",
        "The libraries' licences are in `LICENSES/` (unsloth's kernels are under its top-level Apache-2.0 licence;",
        "its `studio/` folder, AGPL-3.0, is not used).",
        "`gpu only` kernels need what Triton's interpreter lacks (the reason is given); they run on `triton-cuda`.",
        "",
        "| library | repository | commit | licence | kernels | on the interpreter |",
        "|---|---|---|---|---|---|",
    ]
    for name, k in libs.items():
        mine = [m for m in manifest if m["library"] == name]
        cpu = sum(not m["gpu_only"] for m in mine)
        lines.append(f"| {name} | {k['repository']} | `{k['commit'][:12]}` | {k['licence']} | {len(mine)} | {cpu} |")
    lines += ["", "| kernel | library | path | torch operation | gpu only |", "|---|---|---|---|---|"]
    for m in manifest:
        gpu = m["why_gpu_only"] or ""
        paths = ", ".join(f"`{p}`" for p in m["paths"])
        lines.append(f"| `{m['name']}` | {m['library']} | {paths} | `{m['torch_op']}` | {gpu} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    runtimes: dict = {}
    manifest = []
    for sub in ("problems", "candidates"):
        (HERE / sub).mkdir(exist_ok=True)
    for entry in ENTRIES:
        if args.only and entry.name not in args.only:
            continue
        built = build_entry(entry, args.mirrors, runtimes)
        (HERE / "problems" / f"{built.name}.py").write_text(built.problem)
        (HERE / "candidates" / f"{built.name}.py").write_text(built.candidate)
        manifest.append(built.meta)
    if not args.only:
        for lib in {e.lib for e in ENTRIES}:
            meta = LIBRARIES[lib]
            licence = git_show(args.mirrors, meta["repo"], meta["commit"], meta["licence_path"])
            (HERE / "LICENSES" / f"{meta['name']}.LICENSE").write_text(licence)
        (HERE / "manifest.json").write_text(json.dumps({"kernels": manifest}, indent=1) + "\n")
        (HERE / "SOURCES.md").write_text(sources_md(manifest))
    print(f"built {len(manifest)} kernels")


if __name__ == "__main__":
    main()
