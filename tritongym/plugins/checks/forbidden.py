"""`forbidden`: no process, file, network, thread, native-code or interpreter-internals access.

A kernel needs torch for tensors and triton for kernels, nothing else that can reach outside the
computation.  Everything here is a way to escape or fool the judge rather than to compute: spawning
processes, reading files (the reference, the registry), unpickling (runs code), loading native code,
threads that outlive the timed call, walking frames to find the worker's result channel, and `eval`-style
dynamic code that hides all of the above from the other static checks.  The worker's sandbox is the
second line of defence; this check gives the model the reason while it can still fix its answer.

The rules look at what a name *resolves to*, so `p.exists` after `from os import path as p`, `x = os;
x.system(...)`, `getattr(torch, "_C")` and `__builtins__.open` are caught like `os.system` and `open`.  A path is
matched as written and as every module it reaches under another name: a package's namespace holds the modules its
code imported, so `torch.os.system` is `os.system` and `torch.utils._osp` is `posixpath` (`forbidden_reach`: the
modules' own namespaces, read as dicts in the judge's process).

It is the *use* of a forbidden module that is refused, not its import: public files keep headers such as tutorial
06's `import os`, never used, and a name bound and never read gives nothing.  Every read of a name that an import of
a forbidden module binds is a use, wherever it is and whatever else binds the name (an attribute read, a call, the
module passed along, kept under another name or written into).  An import is refused itself only where its name
cannot be followed (`from os import *`; an import in a class body, read through instances) or where importing runs
code (the judge's own modules, a third-party package's `__init__`).

Read-only uses allowed (`_call_policy`):
* `importlib.import_module("name")` of a module that is itself allowed, its name a literal (or passed as one by every
  caller: `ast_scan.literal_strings`), and `importlib.metadata.version`: Liger-Kernel's `compare_version`;
* `os.environ.get("NAME")` and `os.getenv("NAME")` with a literal name that is not the judge's own
  (`JUDGE_ENVIRONMENT`): tutorial files choose a block size under `TRITON_INTERPRET`.
"""

from __future__ import annotations

import ast
import re
import sys
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import (
    IMPORT_MODULE,
    Finding,
    SourceScan,
    finding,
    import_bindings,
    literal_getattr,
    raw_dotted,
    scan,
    verdict,
)
from tritongym.plugins.checks import forbidden_reach

_WHY = {
    "access to processes and the operating system": "subprocess os posix nt pty tty termios fcntl resource signal "
    "platform ptrace atexit faulthandler _posixsubprocess pipes torch.utils.collect_env",
    "file access": "io _io pathlib shutil tempfile glob fileinput mmap zipfile tarfile gzip bz2 lzma sqlite3 dbm "
    "torch.load torch.save torch.from_file torch.serialization numpy.load numpy.save numpy.savez numpy.fromfile "
    "numpy.memmap numpy.loadtxt numpy.genfromtxt numpy.lib.format "
    # `os.path` is one of these under its own name (`torch.utils._osp` is `posixpath`); the others read the source,
    # bytecode or data files whose names they are given (`linecache.getline("/x/reference.py", 1)`)
    "posixpath ntpath genericpath linecache tokenize py_compile compileall pyclbr modulefinder filecmp netrc mailbox "
    "pstats _pyio pkgutil.get_data importlib.resources triton.runtime.cache triton.runtime.RemoteCacheBackend "
    "triton.runtime.RedisRemoteCacheBackend",
    "network access": "socket socketserver ssl select selectors urllib http requests httpx aiohttp ftplib smtplib "
    "telnetlib xmlrpc webbrowser torch.hub",
    "threads, subprocesses and event loops": "threading _thread multiprocessing concurrent asyncio "
    "torch.multiprocessing torch.distributed torch.utils.throughput_benchmark torch.utils.ThroughputBenchmark",
    "native code or another kernel language": "ctypes _ctypes cffi numpy.ctypeslib cupy pycuda cuda numba "
    "torch.utils.cpp_extension torch.ops.load_library torch.classes.load_library torch.cuda.cudart "
    "torch.cuda.jiterator torch.cuda._compile_kernel _imp triton.runtime.build triton.backends.nvidia.driver "
    "triton.backends.amd.driver triton.experimental.gsan triton.runtime.driver.active.utils.load_binary",
    # each takes its code as a string (a statement to time, a docstring's examples, a dotted name to import), which
    # none of the static checks reads: `timeit.timeit("torch.relu(x)", globals=...)` is `exec`
    "a way to run code given as a string, which no check reads": "timeit cProfile profile _lsprof doctest pydoc "
    "_xxsubinterpreters torch.utils.benchmark",
    # `torch.library.impl("aten::matmul", ...)` replaces the op the reference calls: refused, but for the operator
    # wrappers of `TRITON_OPS`
    "access to torch's op registry, where the reference's own ops can be replaced; launch the @triton.jit kernel "
    "directly instead": "torch.library torch._library",
    "interpreter internals and introspection": "sys builtins __main__ importlib imp pkgutil zipimport runpy gc "
    "inspect dis traceback types code codeop pdb bdb trace tracemalloc sysconfig site pyximport unittest "
    "typing.get_type_hints typing.ForwardRef "
    # a log record names the file and line of the call `stacklevel` frames up, as a warning recorded does
    # (`_CALLER_RECORDS`): a handler of one's own, or the logger's own frame walk, reads the forward's callers
    "logging.Handler logging.handlers logging.LogRecord logging.setLogRecordFactory logging.makeLogRecord "
    "logging.currentframe logging.Logger.findCaller "
    "torch.jit.load torch._C torch._dynamo torch._inductor torch._ops torch._guards torch._functorch torch._prims "
    "torch._higher_order_ops torch.compile triton.knobs",
    "hooks on every module, the reference's included": " ".join(
        f"torch.nn.modules.module.register_module_{hook}"
        for hook in (
            "forward_hook forward_pre_hook backward_hook full_backward_hook full_backward_pre_hook "
            "buffer_registration_hook module_registration_hook parameter_registration_hook"
        ).split()
    ),
    "unpickling, which runs arbitrary code": "pickle _pickle cPickle copyreg marshal shelve dill "
    "cloudpickle joblib torch.package",
    # a tensor's memory seen by numpy or Python without a tensor method the `host_compute` check counts: a
    # zero-copy DLPack view (`np.from_dlpack`), or the tensor printed at full precision and parsed back
    "host reads of tensor memory that the host_compute check cannot count": "torch.utils.dlpack torch.from_dlpack "
    "numpy.from_dlpack torch.set_printoptions",
}
DEFAULT_MODULES: dict[str, str] = {module: why for why, names in _WHY.items() for module in names.split()}
"""Forbidden module (or dotted attribute) -> the kind of access it gives, shown in the message."""

INSPECTION_ONLY = frozenset(
    "torch.distributed.is_available torch.distributed.is_initialized torch.distributed.tensor.DTensor "
    "torch.distributed.tensor.distribute_tensor torch.distributed.tensor.DTensor.from_local".split()
)
"""Names under a forbidden module that start nothing, allowed as exactly these paths (not their attributes):
production kernels test `isinstance(x, torch.distributed.tensor.DTensor)` or `torch.distributed.is_initialized()`
to choose a path for sharded tensors, and re-shard their result in that path (`distribute_tensor`,
`DTensor.from_local`: Liger-Kernel's SwiGLU does both).  Without a process group (`init_process_group` and
everything else under `torch.distributed` stay forbidden) there is no sharded tensor and no device mesh, so that
path never runs."""

TRITON_OPS = frozenset("torch.library.triton_op torch.library.wrap_triton torch.library.custom_op".split())
"""Names under `torch.library` allowed as exactly these paths (not their attributes): the ways public code wraps a
Triton kernel as an operator (`@triton_op("mylib::add", mutates_args={})` around a function that launches
`wrap_triton(kernel)[grid](...)`, torch >= 2.6 and its tutorial "Using User-Defined Triton Kernels with
torch.compile"; `@custom_op(...)` around a plain launch, as vLLM, SGLang and FlashInfer register theirs).  Each
defines a new operator only: a name torch already has is refused by torch itself ("registered multiple times"), so
no op the reference calls can be replaced through them, and the worker's dispatch modes run the operator through its
Python body (`worker/custom_ops.py`).  Everything else of `torch.library` (`impl`, `Library`, `register_kernel`,
`define`, ...) stays refused."""

VERSION_LOOKUPS = frozenset("importlib.metadata.version importlib.metadata.PackageNotFoundError".split())
"""Names under `importlib` allowed as exactly these paths: an installed package's version string (and the error
when it is not installed), read by public code to choose an import path (Liger-Kernel's utils)."""

ENVIRONMENT_READS = frozenset("os.environ.get os.getenv".split())
"""Read-only lookups of one environment variable, allowed when called with a literal name (`_call_policy`)."""
JUDGE_ENVIRONMENT = "TRITONGYM"
"""The prefix of every variable the judge sets for itself (its lifeline, its timing flag): a candidate that read
one would learn what the judge is doing.  The rest of a worker's stripped environment is paths and library
settings, which give nothing without the file access that stays refused."""

IMPORT_RUNS_NOTHING = sys.stdlib_module_names | {"__main__", "torch", "numpy", "triton"}
"""Top-level packages whose import binds a name and runs nothing a candidate could not run anyway: the standard
library and the packages a candidate computes with.  Importing a forbidden third-party package (`pycuda.autoinit`
makes a CUDA context, any `__init__` may start threads) runs its code, so that import is refused itself."""

_BUILTIN_CALLS = {
    "open": "file access",
    "exec": "dynamic code execution",
    "eval": "dynamic code execution",
    "compile": "dynamic code execution",
    "__import__": "dynamic imports",
    "globals": "access to module namespaces",
    "locals": "access to frame namespaces",
    "vars": "access to object namespaces",
    "breakpoint": "the debugger",
    "input": "reading stdin",
    "help": "the interactive help system (it can start a pager process)",
    "exit": "exiting the interpreter",
    "quit": "exiting the interpreter",
}
_DYNAMIC_ATTRIBUTE_CALLS = {"getattr", "setattr", "delattr", "hasattr"}
_DYNAMIC_ATTRIBUTE_HELPERS = {"operator.attrgetter", "operator.methodcaller"}
INTROSPECTION_ATTRIBUTES = frozenset(
    "f_back f_globals f_locals f_code f_builtins f_trace gi_frame gi_code cr_frame cr_code ag_frame ag_code "
    "tb_frame tb_next __traceback__ co_code co_consts co_names __globals__ __code__ __closure__ __builtins__ "
    "__subclasses__ __bases__ __base__ __mro__ mro __dict__ __reduce__ __reduce_ex__ __getstate__ __setstate__ "
    "__getattribute__ __import__ __loader__ __spec__ __defaults__ __kwdefaults__ __self__ __func__ "
    "__wrapped__ get_capture_scope used_global_vals findCaller".split()
)
"""Attributes that reach frames, code objects, namespaces, the class hierarchy or pickling hooks
(`get_capture_scope` and `used_global_vals` are a Triton kernel's way to its module's globals; a logger's
`findCaller` names the file of the frame `stacklevel` up, any logger's, whatever the spelling)."""
_HOOK_METHODS = {"__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__del__"}
_EXPORT_METHODS = {
    "__dlpack__",
    "__dlpack_device__",
    "__array__",
    "__array_interface__",
    "__array_struct__",
    "__cuda_array_interface__",
}
"""Protocols through which numpy (or another library) maps memory an object hands it: a candidate's own class that
exports a tensor's memory so lets numpy compute on it with no tensor method called."""
_MODULE_HOOKS = {"__getattr__", "__dir__"}
_FORMAT_TRAVERSAL = re.compile(r"\{[^{}]*\.(__\w+__|f_\w+|gi_\w+|tb_\w+|co_\w+)")
"""`"{0.__globals__}".format(f)`: str.format walks attributes too."""
_ESCAPE = "a way out of the sandbox or around the judge"
_MODULE_FIX = "compute with torch tensors and triton kernels only"
_TYPE_FIX = "return the plain tensor your kernel wrote"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class ForbiddenOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow_modules: list[str] = Field(
        default_factory=list, description="modules to allow although forbidden by default (and their submodules)"
    )
    extra_modules: list[str] = Field(default_factory=list, description="further modules to forbid")

    @field_validator("allow_modules", "extra_modules")
    @classmethod
    def _dotted_names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not _NAME_RE.match(n)]
        if bad:
            raise ValueError(f"not dotted module names: {', '.join(map(repr, bad))}")
        return names


class ForbiddenCheck(StaticCheck):
    """No OS, file, network, thread, native-code or introspection access; no eval/exec/open."""

    name = "forbidden"
    priority = 20
    Options: ClassVar[type[BaseModel]] = ForbiddenOptions

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        modules = dict(DEFAULT_MODULES)
        modules.update({m: "access this evaluation forbids (extra_modules)" for m in self.options.extra_modules})
        bound = self._forbidden_names(facts, modules)
        found: list[Finding] = []
        for node in facts.nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found += self._imports(node, facts, modules)
            elif isinstance(node, ast.Name | ast.Attribute) or literal_getattr(node):
                if _outermost_load(node, facts):
                    found += self._module_use(node, facts, modules) + _builtin_use(node, facts)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound:
                    found += self._name_use(node, bound[node.id], facts, modules)
                found += _introspection(node)
            if isinstance(node, ast.Call):
                found += _dynamic_call(node, facts)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found += _hook_definition(node, facts)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += _format_traversal(node)
        return verdict(self.name, found)

    def _blocked(self, path: str, modules: dict[str, str], follow: bool = True) -> str | None:
        """Why `path` is forbidden, or None; an allowed prefix at least as specific as the rule wins.  A path no rule
        matches as written is matched again as each module it reaches under another name (`torch.os.system` as
        `os.system`: `forbidden_reach`), unless `follow` is off."""
        parts = path.split(".")
        if parts[0].startswith("tritongym"):
            return "the judge's own code and the reference"
        if path in INSPECTION_ONLY or path in TRITON_OPS or path in VERSION_LOOKUPS:
            return None
        rule = next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in modules), None)
        if rule is None:
            return self._reached(path, modules) if follow else None
        specific = range(rule.count(".") + 1, len(parts) + 1)
        allowed = any(".".join(parts[:n]) in self.options.allow_modules for n in specific)
        return None if allowed else modules[rule]

    def _reached(self, path: str, modules: dict[str, str]) -> str | None:
        """Why `path` is forbidden as the module it reaches (`torch.os` is the module `os`), or None."""
        for written, module in forbidden_reach.reached(path):
            rest = path[len(written) :]
            why = self._blocked(module + rest, modules, follow=False)
            if why:
                return f"{why}, as `{written}` is the module `{module}`"
        return None

    def _forbidden_names(self, facts: SourceScan, modules: dict[str, str]) -> dict[str, set[str]]:
        """Each name an import of a forbidden module binds -> the paths it is bound to (in any scope)."""
        bound: dict[str, set[str]] = {}
        for node in facts.nodes:
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                for name, path in import_bindings(node):
                    if self._blocked(path, modules):
                        bound.setdefault(name, set()).add(path)
        return bound

    def _imports(self, node: ast.Import | ast.ImportFrom, facts: SourceScan, modules: dict[str, str]) -> list[Finding]:
        """The imports refused as such; any other import of a forbidden module is refused where its name is read."""
        if isinstance(node, ast.ImportFrom) and node.level:
            return []  # a candidate is one file: a relative import fails to import on its own
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            why = self._blocked(node.module or "", modules)
            rule = f"`from {node.module} import *` binds names of a forbidden module that no check can follow"
            return [finding(node, f"{rule} (it gives {why}: {_ESCAPE})", _MODULE_FIX)] if why else []
        paths = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        paths += [path for _, path in import_bindings(node)] if isinstance(node, ast.ImportFrom) else []
        found = []
        for path in paths:
            why = self._blocked(path, modules)
            if not why:
                continue
            if path.startswith("tritongym"):
                where = ""
            elif isinstance(_scope(node, facts), ast.ClassDef):
                where = ", imported in a class body, where its name is read through any instance"
            elif path.split(".")[0] not in IMPORT_RUNS_NOTHING:
                where = ", and importing it runs the package's own code"
            else:
                continue
            rule = f"module `{path}` is forbidden in a candidate (it gives {why}{where}: {_ESCAPE})"
            found.append(finding(node, rule, _MODULE_FIX))
        return found

    def _module_use(self, node: ast.AST, facts: SourceScan, modules: dict[str, str]) -> list[Finding]:
        """`os.system`, `x.system` after `x = os`, `torch.utils.cpp_extension.load_inline`, `torch._C...`."""
        path = facts.resolve(node)
        if path is None or path.startswith("builtins."):
            return []
        return self._path_use(node, path, facts, modules)

    def _name_use(self, name: ast.Name, paths: set[str], facts: SourceScan, modules: dict[str, str]) -> list[Finding]:
        """A read of a name a forbidden import binds, whatever else binds it: the whole chain it starts
        (`os.environ.get`) against each module the name is imported as."""
        outer = _outermost(name, facts)
        rest = (raw_dotted(outer) or name.id).split(".")[1:]
        store = isinstance(getattr(outer, "ctx", None), ast.Store | ast.Del)
        found = []
        for path in sorted(paths):
            full = ".".join([path, *rest])
            if store:
                why = self._blocked(path, modules)
                rule = f"`{full}` is written: module `{path}` is forbidden in a candidate (it gives {why}: {_ESCAPE})"
                found.append(finding(outer, rule, _MODULE_FIX))
            else:
                found += self._path_use(outer, full, facts, modules)
        return found

    def _path_use(self, node: ast.AST, path: str, facts: SourceScan, modules: dict[str, str]) -> list[Finding]:
        why = self._blocked(path, modules)
        if not why:
            return []
        policy = self._call_policy(node, path, facts, modules)
        if policy is not None:
            return policy
        return [finding(node, f"`{path}` is forbidden in a candidate (it gives {why}: {_ESCAPE})", _MODULE_FIX)]

    def _call_policy(
        self, node: ast.AST, path: str, facts: SourceScan, modules: dict[str, str]
    ) -> list[Finding] | None:
        """The read-only uses of a forbidden module that are allowed: [] where `node` is one, the finding where it
        is one spelled otherwise, None for every other path."""
        call = facts.parents.get(node)
        call = call if isinstance(call, ast.Call) and call.func is node else None
        if path == IMPORT_MODULE and call is not None:
            return self._import_by_name(call, path, facts, modules)
        if path in ENVIRONMENT_READS:
            return _environment_read(node, call, path)
        return None

    def _import_by_name(self, call: ast.Call, path: str, facts: SourceScan, modules: dict[str, str]) -> list[Finding]:
        """`importlib.import_module("triton")`: allowed when the module named literally is."""
        names = facts.imported_by(call)
        if names is None:
            rule = f"`{path}` with a name not written literally (nor passed literally by every caller) hides "
            rule += "which module is imported from every check"
            fix = "import the module by name (`import triton`) or pass its name as a string literal"
            return [finding(call, rule, fix)]
        if len(names) > 1:
            rule = f"`{path}` here imports one of {', '.join(sorted(names))}: what it returns cannot be followed"
            return [finding(call, rule, "import each module by name (`import triton`)")]
        blocked = [(n, why) for n in sorted(names) if (why := self._blocked(n, modules))]
        return [
            finding(call, f"module `{name}` is forbidden in a candidate (it gives {why}: {_ESCAPE})", _MODULE_FIX)
            for name, why in blocked
        ]


def _environment_read(node: ast.AST, call: ast.Call | None, path: str) -> list[Finding]:
    """`os.environ.get("TRITON_INTERPRET")`: allowed called with a literal name that is not the judge's own."""
    args = call.args if call is not None else []
    literal = bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
    plain = len(args) <= 2 and not any(isinstance(a, ast.Starred) for a in args)
    if not (literal and plain and all(k.arg == "default" for k in call.keywords)):
        rule = f"`{path}` is allowed only as a read-only lookup of one variable named literally"
        return [finding(node, rule, f'call `{path}("TRITON_INTERPRET")` with the variable\'s name as a string literal')]
    if args[0].value.startswith(JUDGE_ENVIRONMENT):
        rule = f"`{args[0].value}` is the judge's own setting: reading it is watching the judge"
        return [finding(call, rule, "remove the lookup; your kernel needs none of the judge's settings")]
    return []


def _scope(node: ast.AST, facts: SourceScan) -> ast.AST | None:
    """The function, lambda, class or module whose names a statement binds."""
    parent = facts.parents.get(node)
    while parent is not None and not isinstance(
        parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef | ast.Module
    ):
        parent = facts.parents.get(parent)
    return parent


def _outermost(node: ast.AST, facts: SourceScan) -> ast.AST:
    """The whole attribute chain `node` starts (`os.environ.get` for `os`; `getattr(os, "x")` counts)."""
    while True:
        parent = facts.parents.get(node)
        if (isinstance(parent, ast.Attribute) and parent.value is node) or (
            literal_getattr(parent) and parent.args[0] is node
        ):
            node = parent
        else:
            return node


def _outermost_load(node: ast.AST, facts: SourceScan) -> bool:
    """A read of a whole attribute chain (`a.b.c`, not its `a.b`), not a store into a name."""
    parent = facts.parents.get(node)
    inner = (isinstance(parent, ast.Attribute) and parent.value is node) or (
        literal_getattr(parent) and parent.args[0] is node
    )
    return not inner and not isinstance(getattr(node, "ctx", None), ast.Store | ast.Del)


def _builtin_use(node: ast.AST, facts: SourceScan) -> list[Finding]:
    """`open`, `eval`, `__builtins__`, a reference to `exec` kept under another name, `setattr` as a value."""
    path = facts.resolve(node) or ""
    if not (path == "builtins" or path.startswith("builtins.")):
        return []
    builtin = path.removeprefix("builtins.")
    found = []
    if builtin in _BUILTIN_CALLS:
        rule = f"`{builtin}` gives {_BUILTIN_CALLS[builtin]}, which a kernel never needs"
        found.append(finding(node, rule, "remove it and write the computation out"))
    parent = facts.parents.get(node)
    if builtin in _DYNAMIC_ATTRIBUTE_CALLS and not (isinstance(parent, ast.Call) and parent.func is node):
        rule = f"`{builtin}` passed around as a value reads or writes attributes by computed names"
        found.append(finding(node, rule, "write the attribute literally (`obj.name`)"))
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        found.append(finding(node, "`__builtins__` exposes every builtin by name", "use builtins directly by name"))
    return found


def _introspection(node: ast.AST) -> list[Finding]:
    """Frame, code-object, namespace and class-hierarchy attributes, read or written, and `__class__` stores."""
    if isinstance(node, ast.Attribute):
        attribute = node.attr
    elif literal_getattr(node):
        attribute = node.args[1].value
    else:
        return []
    if attribute in INTROSPECTION_ATTRIBUTES:
        rule = (
            f"`.{attribute}` reaches frames, code objects, namespaces or the class hierarchy "
            "(introspection can find and forge the judge's state)"
        )
        return [finding(node, rule, "remove it; nothing in a kernel needs it")]
    if attribute == "__class__" and isinstance(getattr(node, "ctx", None), ast.Store | ast.Del):
        return [finding(node, "assigning `__class__` swaps an object's type behind the judge's back", _TYPE_FIX)]
    return []


def _format_traversal(node: ast.Constant) -> list[Finding]:
    if not _FORMAT_TRAVERSAL.search(node.value):
        return []
    rule = "a format string that walks into interpreter attributes (`{x.__globals__}`) is introspection"
    return [finding(node, rule, "remove it; nothing in a kernel needs it")]


_CALLER_RECORDS = frozenset({"warnings.catch_warnings"})
"""Calls that hand the candidate its callers' files when asked to record (red-teamed: a passthrough honest only under
the judge's probes).  Silencing warnings (`catch_warnings()`, `record=False`) is what production code does: it
stays."""


def _records(node: ast.Call) -> bool:
    """Whether a `catch_warnings(...)` call may record: `record` given and not a literal False."""
    record = [k.value for k in node.keywords if k.arg == "record"] + node.args[:1]
    return bool(record) and not (isinstance(record[0], ast.Constant) and record[0].value is False)


def _dynamic_call(node: ast.Call, facts: SourceScan) -> list[Finding]:
    """getattr & co. with a computed name, operator.attrgetter alike, and 3-argument `type()`."""
    path = facts.resolve(node.func) or ""
    helper = path.removeprefix("builtins.")
    literal = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if (path.startswith("builtins.") and helper in _DYNAMIC_ATTRIBUTE_CALLS) or path in _DYNAMIC_ATTRIBUTE_HELPERS:
        names = node.args[1:2] if helper in _DYNAMIC_ATTRIBUTE_CALLS else node.args
        if not names or any(not (isinstance(a, ast.Constant) and isinstance(a.value, str)) for a in names):
            return [
                finding(
                    node,
                    f"`{helper.split('.')[-1]}` with a computed attribute name hides which attribute is used "
                    "from every check",
                    "write the attribute literally (`obj.name`)",
                )
            ]
        if any(a.value == "__class__" for a in literal) and helper in ("setattr", "delattr"):
            return [finding(node, "setting `__class__` swaps an object's type behind the judge's back", _TYPE_FIX)]
        reached = sorted({part for a in names for part in a.value.split(".")} & INTROSPECTION_ATTRIBUTES)
        if reached and helper != "getattr":  # `operator.attrgetter("__globals__")(f)`; getattr is `_introspection`
            rule = f"`{helper.split('.')[-1]}` of `{reached[0]}` reaches frames, code objects, namespaces or the "
            rule += "class hierarchy (introspection can find and forge the judge's state)"
            return [finding(node, rule, "remove it; nothing in a kernel needs it")]
    if path in _CALLER_RECORDS and _records(node):
        return [
            finding(
                node,
                f"`{path}` with `record=True` keeps each warning's file and line: warned at increasing `stacklevel`s, "
                "it names every caller of the forward, which tells the judge's probes from its trials",
                "let warnings go to the log (`warnings.warn` alone), or silence them with `catch_warnings()`",
            )
        ]
    if path == "builtins.type" and len(node.args) == 3:
        return [
            finding(
                node,
                "`type(name, bases, namespace)` builds a class at run time, out of sight of the static checks",
                "write a `class` statement",
            )
        ]
    return []


def _hook_definition(node: ast.FunctionDef | ast.AsyncFunctionDef, facts: SourceScan) -> list[Finding]:
    parent = facts.parents.get(node)
    if node.name in _EXPORT_METHODS:
        return [
            finding(
                node,
                f"defining `{node.name}` hands a tensor's memory to numpy or another library without a tensor method "
                "the host_compute check counts",
                "compute in your Triton kernels",
                code=f"def {node.name}",
            )
        ]
    if node.name in _HOOK_METHODS or (node.name in _MODULE_HOOKS and isinstance(parent, ast.Module)):
        return [
            finding(
                node,
                f"defining `{node.name}` runs code at pickling, garbage-collection or attribute-lookup time, "
                "outside the call being judged",
                "remove it",
                code=f"def {node.name}",
            )
        ]
    return []


@hookimpl
def register_checks(register):
    register(ForbiddenCheck)
