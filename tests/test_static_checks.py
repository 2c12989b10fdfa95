"""The static hack checks: each refuses its hacks in every spelling, names the line, and passes honest code.

Hostile snippets mark the line the verdict must name with `# <-`.  Honest snippets, in varied styles,
and every bundled solution must pass every static check: a false positive costs an honest model its reward.

Torch compute in host code and low precision are judged at run time (`torch_compute` weighs torch's work,
`precision` measures against a float64 gold); their source scans (`core/scan/host_compute.py`,
`precision.source_findings`) only say *where*, as advice.  Their hostile snippets stay here as evidence that
every evasive spelling is still found on its line, and the honest ones that the advice never points at glue.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from conftest import RELU_KERNEL

from tritongym.core.config import EvalConfig
from tritongym.core.errors import ConfigError
from tritongym.core.eval.evaluate import Evaluator
from tritongym.core.models import Candidate, CheckVerdict, Status
from tritongym.core.plugins import PluginHost
from tritongym.core.problems import SOLUTIONS_DIR, load_problem
from tritongym.core.scan.ast_scan import scan
from tritongym.core.scan.host_compute import host_compute
from tritongym.plugins.checks.precision import source_findings

STATIC = (
    "structure",
    "forbidden",
    "monkeypatch",
    "inheritance",
    "tensor_subclass",
    "streams",
    "fallback",
)
MARK = "# <-"


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost(load_entry_points=False)


def verdicts(
    host: PluginHost, source: str, problem: str = "relu", options: dict | None = None
) -> dict[str, CheckVerdict]:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    loaded = load_problem(problem)
    found = {}
    for name in STATIC:
        check = host.create("check", name, (options or {}).get(name))
        found[name] = check.check_source(tree, Candidate(source=source), loaded)
    return found


def host_uses(source: str) -> set[tuple[int, str]]:
    """(line, op) of every torch compute the host-code scan finds in what ModelNew may run."""
    return {(u.node.lineno, u.op) for u in host_compute(scan(ast.parse(textwrap.dedent(source))), "ModelNew")}


def precision_lines(source: str, problem: str) -> set[int]:
    """The lines the precision scan's advice names for `source` as a candidate for `problem`."""
    return {f.line for f in source_findings(textwrap.dedent(source), load_problem(problem).source)}


def marked_line(source: str) -> int:
    hits = [i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if MARK in line]
    assert len(hits) == 1, f"mark the reported line with exactly one {MARK!r}"
    return hits[0]


def in_forward(code: str, before: str = "") -> str:
    """RELU_KERNEL with `before` after its imports and `code` at the start of ModelNew.forward."""
    body = textwrap.indent(textwrap.dedent(code).strip("\n"), " " * 8) + "\n"
    source = RELU_KERNEL.replace("    def forward(self, x):\n", "    def forward(self, x):\n" + body, 1)
    if before:
        imports = "import triton.language as tl\n"
        source = source.replace(imports, imports + textwrap.dedent(before).strip("\n") + "\n", 1)
    return source


def with_kernel_body(body: str, problem_forward: str = "") -> str:
    """A candidate whose jit kernel is `body` (for the precision scan inside kernels)."""
    kernel = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return f"""
import torch
import triton
import triton.language as tl


@triton.jit
def kern(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
{kernel}


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        kern[(1,)](a, c, BLOCK=16)
        return c
"""


LAUNCH = "out = torch.empty_like(x)\nrelu_kernel[(1,)](x, out, x.numel(), BLOCK=1024)\n"

# (check, id, source, problem): each must fail `check` on the marked line.
HOSTILE = [
    # --- forbidden ------------------------------------------------------------------------------------
    # the use of a forbidden module is refused where it is, not its import (`test_unused_forbidden_imports_pass`)
    ("forbidden", "import-os", in_forward("os.system('ls')  # <-", "import os"), "relu"),
    ("forbidden", "from-os-alias", in_forward("p.exists('/')  # <-", "from os import path as p"), "relu"),
    ("forbidden", "import-in-forward", in_forward("import subprocess\nsubprocess.run(['ls'])  # <-"), "relu"),
    ("forbidden", "os-getattr-alias", in_forward("getattr(o, 'system')('ls')  # <-", "import os as o"), "relu"),
    ("forbidden", "os-passed", in_forward("print(os)  # <-", "import os"), "relu"),
    ("forbidden", "os-aliased", in_forward("shell = os  # <-\nshell.system('ls')", "import os"), "relu"),
    ("forbidden", "os-in-fstring", in_forward("name = f'{os}'  # <-", "import os"), "relu"),
    ("forbidden", "os-attribute-written", in_forward("os.sep = '/'  # <-", "import os"), "relu"),
    ("forbidden", "from-os-used", in_forward("system('ls')  # <-", "from os import system"), "relu"),
    ("forbidden", "os-annotation", in_forward("def f(p: os.PathLike):  # <-\n    pass", "import os"), "relu"),
    (
        "forbidden",
        "os-name-rebound-elsewhere",
        in_forward("t.system('ls')  # <-", "import os as t\n\ndef helper():\n    import torch as t"),
        "relu",
    ),
    ("forbidden", "os-via-globals", in_forward("m = globals()['os']  # <-", "import os"), "relu"),
    ("forbidden", "os-via-sys-modules", in_forward("m = sys.modules['os']  # <-", "import sys"), "relu"),
    ("forbidden", "star-import", in_forward("", "from os import *  # <-"), "relu"),
    ("forbidden", "class-body-import", in_forward("", "class Holder:\n    import subprocess  # <-"), "relu"),
    ("forbidden", "third-party-import", in_forward("", "import numba  # <-"), "relu"),
    (
        "forbidden",
        "attrgetter-globals",
        in_forward("scope = operator.attrgetter('__globals__')(print)  # <-", "import operator"),
        "relu",
    ),
    ("forbidden", "type-hints", in_forward("hints = typing.get_type_hints(ModelNew)  # <-", "import typing"), "relu"),
    ("forbidden", "kernel-capture-scope", in_forward("scope = relu_kernel.get_capture_scope()  # <-"), "relu"),
    # importlib.import_module only of an allowed module named literally (`test_read_only_lookups_pass`)
    (
        "forbidden",
        "import-module-os",
        in_forward("m = importlib.import_module('os')  # <-", "import importlib"),
        "relu",
    ),
    (
        "forbidden",
        "import-module-computed",
        in_forward("m = importlib.import_module('o' + 's')  # <-", "import importlib"),
        "relu",
    ),
    (
        "forbidden",
        "import-module-judge",
        in_forward("m = importlib.import_module('tritongym_reference')  # <-", "import importlib"),
        "relu",
    ),
    (
        "forbidden",
        "import-module-result-used",
        in_forward("t = importlib.import_module('torch')\nt._C._set_grad_enabled(False)  # <-", "import importlib"),
        "relu",
    ),
    (
        "forbidden",
        "import-module-relative",
        in_forward("m = importlib.import_module('.language', 'triton')  # <-", "import importlib"),
        "relu",
    ),
    (
        "forbidden",
        "import-module-as-value",
        in_forward("load = importlib.import_module  # <-\nm = load('os')", "import importlib"),
        "relu",
    ),
    (
        "forbidden",
        "import-module-caller-passes-os",
        in_forward(
            "m = load('os')",
            "import importlib\n\ndef load(name):\n    return importlib.import_module(name)  # <-\n\nt = load('triton')",
        ),
        "relu",
    ),
    (
        "forbidden",
        "import-module-helper-passed-along",
        in_forward(
            "f = load",
            "import importlib\n\ndef load(name):\n    return importlib.import_module(name)  # <-\n\nt = load('triton')",
        ),
        "relu",
    ),
    (
        "forbidden",
        "importlib-util",
        in_forward("s = importlib.util.find_spec('os')  # <-", "import importlib.util"),
        "relu",
    ),
    (
        "forbidden",
        "importlib-metadata-files",
        in_forward("f = metadata.files('triton')  # <-", "from importlib import metadata"),
        "relu",
    ),
    # os.environ.get / os.getenv: a read-only lookup of one variable named literally (`test_read_only_lookups_pass`)
    ("forbidden", "environ-write", in_forward("os.environ['TRITON_INTERPRET'] = '0'  # <-", "import os"), "relu"),
    ("forbidden", "environ-setdefault", in_forward("os.environ.setdefault('A', '1')  # <-", "import os"), "relu"),
    ("forbidden", "environ-iterated", in_forward("names = [k for k in os.environ]  # <-", "import os"), "relu"),
    ("forbidden", "environ-passed", in_forward("env = dict(os.environ)  # <-", "import os"), "relu"),
    ("forbidden", "environ-subscript", in_forward("v = os.environ['HOME']  # <-", "import os"), "relu"),
    ("forbidden", "environ-computed-name", in_forward("v = os.getenv('TRITON_' + 'DEBUG')  # <-", "import os"), "relu"),
    ("forbidden", "environ-get-kept", in_forward("get = os.environ.get  # <-\nv = get('A')", "import os"), "relu"),
    (
        "forbidden",
        "environ-judge",
        in_forward("v = os.environ.get('TRITONGYM_TIMING_WAITS')  # <-", "import os"),
        "relu",
    ),
    ("forbidden", "putenv", in_forward("os.putenv('TRITON_INTERPRET', '0')  # <-", "import os"), "relu"),
    ("forbidden", "open", in_forward("data = open('/etc/passwd').read()  # <-"), "relu"),
    ("forbidden", "open-via-alias", in_forward("reader = open  # <-\nreader('/x')"), "relu"),
    ("forbidden", "dunder-import", in_forward("__import__('os').getcwd()  # <-"), "relu"),
    ("forbidden", "eval", in_forward("y = eval('x + 1')  # <-"), "relu"),
    ("forbidden", "exec-compile", in_forward("exec(compile('y = 1', 'f', 'exec'))  # <-"), "relu"),
    ("forbidden", "globals", in_forward("g = globals()  # <-"), "relu"),
    ("forbidden", "builtins-dict", in_forward("fn = __builtins__['open']  # <-"), "relu"),
    ("forbidden", "getattr-computed", in_forward("name = 'cu' + 'da'\nm = getattr(torch, name)  # <-"), "relu"),
    ("forbidden", "setattr-as-value", in_forward("f = setattr  # <-"), "relu"),
    ("forbidden", "sys-getframe", in_forward("frame = sys._getframe()  # <-", "import sys"), "relu"),
    ("forbidden", "frame-walk", in_forward("def probe():\n    pass\ncode = probe.__code__  # <-"), "relu"),
    (
        "forbidden",
        "traceback-frame",
        in_forward("try:\n    raise ValueError\nexcept ValueError as e:\n    f = e.__traceback__.tb_frame  # <-"),
        "relu",
    ),
    ("forbidden", "subclasses", in_forward("leak = object.__subclasses__()  # <-"), "relu"),
    ("forbidden", "torch-C", in_forward("torch._C._set_grad_enabled(False)  # <-"), "relu"),
    ("forbidden", "torch-load", in_forward("w = torch.load('/tmp/w.pt')  # <-"), "relu"),
    (
        "forbidden",
        "device-mesh",
        in_forward("mesh = torch.distributed.device_mesh.init_device_mesh('cuda', (2,))  # <-"),
        "relu",
    ),
    ("forbidden", "process-group", in_forward("torch.distributed.init_process_group('gloo')  # <-"), "relu"),
    (
        "forbidden",
        "cpp-extension-from",
        in_forward("mod = load_inline('m', 'src')  # <-", "from torch.utils.cpp_extension import load_inline"),
        "relu",
    ),
    (
        "forbidden",
        "cpp-extension-attr",
        in_forward("mod = torch.utils.cpp_extension.load_inline('m', 'src')  # <-"),
        "relu",
    ),
    ("forbidden", "reference-module", in_forward("", "from tritongym_reference import Model  # <-"), "relu"),
    (
        "forbidden",
        "op-registry",
        in_forward("impl('aten::relu', 'CPU')  # <-", "from torch.library import triton_op, impl"),
        "relu",
    ),
    (
        "forbidden",
        "dlpack-export",
        "class View:\n    def __dlpack__(self, stream=None):  # <-\n        return 0\n",
        "relu",
    ),
    (
        "forbidden",
        "array-export",
        "class View:\n    def __array__(self, dtype=None):  # <-\n        return 0\n",
        "relu",
    ),
    ("forbidden", "print-options", in_forward("torch.set_printoptions(precision=12)  # <-"), "relu"),
    ("forbidden", "numpy-dlpack", in_forward("h = numpy.from_dlpack(x)  # <-", "import numpy"), "relu"),
    ("forbidden", "op-registry-kernel", in_forward("torch.library.register_kernel('aten::relu', 'cpu')  # <-"), "relu"),
    (
        "forbidden",
        "op-registry-define",
        in_forward("torch.library.define('aten::relu2(Tensor x) -> Tensor')  # <-"),
        "relu",
    ),
    ("forbidden", "triton-op-attribute", in_forward("f = torch.library.triton_op.__wrapped__  # <-"), "relu"),
    ("forbidden", "aten-override", in_forward("", "lib = torch.library.Library('aten', 'IMPL')  # <-"), "relu"),
    (
        "forbidden",
        "threading-alias",
        in_forward("th.Thread(target=print).start()  # <-", "import threading as th"),
        "relu",
    ),
    ("forbidden", "ctypes-from", in_forward("lib = CDLL(None)  # <-", "from ctypes import CDLL"), "relu"),
    ("forbidden", "gc", in_forward("objs = gc.get_objects()  # <-", "import gc"), "relu"),
    ("forbidden", "mock-patch", in_forward("p = mock.patch('torch.relu')  # <-", "from unittest import mock"), "relu"),
    ("forbidden", "class-swap", in_forward("out_cls = x\nout_cls.__class__ = int  # <-"), "relu"),
    ("forbidden", "type-3-args", in_forward("C = type('C', (object,), {})  # <-"), "relu"),
    (
        "forbidden",
        "global-module-hook",
        in_forward(
            "register_module_forward_hook(print)  # <-",
            "from torch.nn.modules.module import register_module_forward_hook",
        ),
        "relu",
    ),
    (
        "forbidden",
        "pickle-hook",
        "class Evil:\n    def __reduce__(self):  # <-\n        return (print, ())\n",
        "relu",
    ),
    # a forbidden module reached as an attribute of an allowed package (`forbidden_reach`)
    ("forbidden", "torch-os", in_forward("torch.os.system('ls')  # <-"), "relu"),
    ("forbidden", "torch-sys-modules", in_forward("m = torch.sys.modules['os']  # <-"), "relu"),
    ("forbidden", "torch-os-path", in_forward("torch.os.path.exists('/')  # <-"), "relu"),
    ("forbidden", "torch-osp", in_forward("torch.utils._osp.exists('/')  # <-"), "relu"),
    ("forbidden", "triton-testing-subprocess", in_forward("triton.testing.subprocess.run(['ls'])  # <-"), "relu"),
    ("forbidden", "numpy-reaches-os", in_forward("np._pytesttester.os.getcwd()  # <-", "import numpy as np"), "relu"),
    ("forbidden", "stdlib-reaches-sys", in_forward("m = typing.sys.modules  # <-", "import typing"), "relu"),
    ("forbidden", "from-torch-import-os", in_forward("os.listdir('/')  # <-", "from torch import os"), "relu"),
    ("forbidden", "torch-os-aliased", in_forward("shell = torch.os  # <-\nshell.system('ls')"), "relu"),
    ("forbidden", "torch-builtins-open", in_forward("d = torch.builtins.open('/x/ref.py').read()  # <-"), "relu"),
    ("forbidden", "torch-ctypes", in_forward("lib = torch.ctypes.CDLL(None)  # <-"), "relu"),
    # the forward's callers read from warnings recorded at increasing stack levels, or from log records
    (
        "forbidden",
        "catch-warnings-record",
        in_forward(
            "with warnings.catch_warnings(record=True) as seen:  # <-\n    warnings.warn('x', stacklevel=3)",
            "import warnings",
        ),
        "relu",
    ),
    (
        "forbidden",
        "catch-warnings-record-positional",
        in_forward("with catch_warnings(True) as seen:  # <-\n    pass", "from warnings import catch_warnings"),
        "relu",
    ),
    ("forbidden", "logging-handler", in_forward("h = logging.Handler()  # <-", "import logging"), "relu"),
    (
        "forbidden",
        "logging-find-caller",
        in_forward("where = logging.getLogger().findCaller(stacklevel=3)  # <-", "import logging"),
        "relu",
    ),
    # code run from strings, which no check reads
    (
        "forbidden",
        "timeit",
        in_forward("t = timeit.timeit('x.relu_()', globals={'x': x})  # <-", "import timeit"),
        "relu",
    ),
    ("forbidden", "timeit-timer", in_forward("t = Timer('pass').repeat()  # <-", "from timeit import Timer"), "relu"),
    ("forbidden", "cprofile-run", in_forward("cProfile.run('print(1)')  # <-", "import cProfile"), "relu"),
    ("forbidden", "profile-runctx", in_forward("profile.runctx('y = 1', {}, {})  # <-", "import profile"), "relu"),
    ("forbidden", "doctest", in_forward("doctest.run_docstring_examples(f, {})  # <-", "import doctest"), "relu"),
    (
        "forbidden",
        "benchmark-timer",
        in_forward("t = torch.utils.benchmark.Timer(stmt='y = x * 2', globals={'x': x})  # <-"),
        "relu",
    ),
    (
        "forbidden",
        "benchmark-from",
        in_forward("t = Timer(stmt='pass').timeit(1)  # <-", "from torch.utils.benchmark import Timer"),
        "relu",
    ),
    ("forbidden", "pydoc-locate", in_forward("f = pydoc.locate('os.system')  # <-", "import pydoc"), "relu"),
    ("forbidden", "runpy", in_forward("runpy.run_path('/tmp/x.py')  # <-", "import runpy"), "relu"),
    (
        "forbidden",
        "code-interact",
        in_forward("code.InteractiveInterpreter().runsource('1')  # <-", "import code"),
        "relu",
    ),
    ("forbidden", "codeop", in_forward("c = codeop.compile_command('1')  # <-", "import codeop"), "relu"),
    # file readers
    ("forbidden", "linecache", in_forward("s = linecache.getline('/x/ref.py', 1)  # <-", "import linecache"), "relu"),
    (
        "forbidden",
        "linecache-lines",
        in_forward("s = getlines('/x/ref.py')  # <-", "from linecache import getlines"),
        "relu",
    ),
    ("forbidden", "pkgutil-data", in_forward("d = pkgutil.get_data('tritongym', 'x')  # <-", "import pkgutil"), "relu"),
    (
        "forbidden",
        "importlib-resources",
        in_forward("t = importlib.resources.files('tritongym')  # <-", "import importlib.resources"),
        "relu",
    ),
    ("forbidden", "tokenize-open", in_forward("f = tokenize.open('/x/ref.py')  # <-", "import tokenize"), "relu"),
    ("forbidden", "posixpath", in_forward("b = posixpath.exists('/x')  # <-", "import posixpath"), "relu"),
    # C compiled and loaded on the host, where no probe sees what it computes
    (
        "forbidden",
        "triton-build",
        in_forward("m = triton.runtime.build.compile_module_from_src('int f;', 'm')  # <-"),
        "relu",
    ),
    (
        "forbidden",
        "triton-build-from",
        in_forward("so = _build('m', 'm.c', '/tmp', [], [], [], [])  # <-", "from triton.runtime.build import _build"),
        "relu",
    ),
    (
        "forbidden",
        "triton-driver-build",
        in_forward("m = triton.backends.nvidia.driver.compile_module_from_file('m.c', 'm')  # <-"),
        "relu",
    ),
    (
        "forbidden",
        "load-binary",
        in_forward("k = triton.runtime.driver.active.utils.load_binary('k', b'', 0, 0)  # <-"),
        "relu",
    ),
    ("forbidden", "nvrtc", in_forward("k = torch.cuda._compile_kernel('src', 'k')  # <-"), "relu"),
    (
        "forbidden",
        "cpp-extension-load",
        in_forward("m = cpp.load('m', ['m.cpp'])  # <-", "import torch.utils.cpp_extension as cpp"),
        "relu",
    ),
    ("forbidden", "collect-env", in_forward("s = torch.utils.collect_env.get_pretty_env_info()  # <-"), "relu"),
    # --- monkeypatch ----------------------------------------------------------------------------------
    ("monkeypatch", "synchronize", in_forward("torch.cuda.synchronize = lambda: None  # <-"), "relu"),
    (
        "monkeypatch",
        "import-alias",
        in_forward("T.allclose = lambda *a, **k: True  # <-", "import torch as T"),
        "relu",
    ),
    ("monkeypatch", "tensor-dunder", in_forward("torch.Tensor.__eq__ = lambda a, b: True  # <-"), "relu"),
    ("monkeypatch", "do-bench", in_forward("triton.testing.do_bench = lambda f: 0.0  # <-"), "relu"),
    ("monkeypatch", "perf-counter", in_forward("time.perf_counter = lambda: 0.0  # <-", "import time"), "relu"),
    ("monkeypatch", "tf32-flag", in_forward("torch.backends.cuda.matmul.allow_tf32 = True  # <-"), "relu"),
    (
        "monkeypatch",
        "event-elapsed",
        in_forward("torch.cuda.Event.elapsed_time = lambda a, b: 1e-3  # <-"),
        "relu",
    ),
    (
        "monkeypatch",
        "from-import",
        in_forward("cuda.synchronize = print  # <-", "from torch import cuda"),
        "relu",
    ),
    (
        "monkeypatch",
        "functional-alias",
        in_forward("F.relu = abs  # <-", "import torch.nn.functional as F"),
        "relu",
    ),
    ("monkeypatch", "variable-alias", in_forward("c = torch.cuda\nc.synchronize = print  # <-"), "relu"),
    ("monkeypatch", "self-alias", in_forward("self.lib = torch\nself.lib.allclose = print  # <-"), "relu"),
    ("monkeypatch", "literal-getattr", in_forward("getattr(torch, 'cuda').synchronize = print  # <-"), "relu"),
    ("monkeypatch", "setattr", in_forward("setattr(torch.cuda, 'synchronize', print)  # <-"), "relu"),
    ("monkeypatch", "object-setattr", in_forward("object.__setattr__(torch, 'allclose', print)  # <-"), "relu"),
    (
        "monkeypatch",
        "module-dunder-setattr",
        in_forward("torch.cuda.__setattr__('synchronize', print)  # <-"),
        "relu",
    ),
    ("monkeypatch", "augmented", in_forward("torch.cuda.counter += 1  # <-"), "relu"),
    ("monkeypatch", "delete", in_forward("del torch.Tensor.__eq__  # <-"), "relu"),
    ("monkeypatch", "namespace-item", in_forward("torch.nn.functional.__dict__['relu'] = abs  # <-"), "relu"),
    ("monkeypatch", "type-of-tensor", in_forward("type(x).__add__ = print  # <-"), "relu"),
    ("monkeypatch", "tuple-target", in_forward("a, torch.allclose = 1, print  # <-"), "relu"),
    ("monkeypatch", "builtins-item", in_forward("__builtins__['len'] = print  # <-"), "relu"),
    ("monkeypatch", "module-level", in_forward("", "torch.manual_seed = print  # <-"), "relu"),
    (
        "monkeypatch",
        "helper-parameter",
        in_forward("", "def quiet(namespace):\n    namespace.synchronize = print  # <-\n\n\nquiet(torch.cuda)"),
        "relu",
    ),
    (
        "monkeypatch",
        "loop-over-modules",
        in_forward("for m in (torch.cuda, torch):\n    m.synchronize = print  # <-"),
        "relu",
    ),
    # --- inheritance ----------------------------------------------------------------------------------
    ("inheritance", "subclass-model", "import torch\n\n\nclass ModelNew(Model):  # <-\n    pass\n", "relu"),
    (
        "inheritance",
        "alias-of-model",
        "import torch\n\nBase = Model  # <-\n\n\nclass ModelNew(Base):\n    pass\n",
        "relu",
    ),
    ("inheritance", "rebind", "import torch\n\nModelNew = Model  # <-\n", "relu"),
    ("inheritance", "model-forward", in_forward("return Model.forward(self, x)  # <-"), "relu"),
    ("inheritance", "super-model", in_forward("return super(Model, self).forward(x)  # <-"), "relu"),
    ("inheritance", "instance", in_forward("return Model()(x)  # <-"), "relu"),
    (
        "inheritance",
        "own-model-as-base",
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n\n"
        "class Mid(Model):  # <-\n    pass\n\n\nclass ModelNew(Mid):\n    pass\n",
        "relu",
    ),
    ("inheritance", "not-a-module", "import torch\n\n\nclass ModelNew:  # <-\n    pass\n", "relu"),
    (
        "inheritance",
        "torch-layer-base",
        "import torch\n\n\nclass ModelNew(torch.nn.ReLU):  # <-\n    pass\n",
        "relu",
    ),
    (
        "inheritance",
        "factory-function",
        "import torch\n\n\ndef ModelNew():  # <-\n    return torch.nn.ReLU()\n",
        "relu",
    ),
    # --- tensor_subclass ------------------------------------------------------------------------------
    ("tensor_subclass", "tensor-base", in_forward("class Lazy(torch.Tensor):  # <-\n    pass"), "relu"),
    (
        "tensor_subclass",
        "from-import",
        in_forward("class Lazy(Tensor):  # <-\n    pass", "from torch import Tensor"),
        "relu",
    ),
    ("tensor_subclass", "parameter-base", in_forward("class P(torch.nn.Parameter):  # <-\n    pass"), "relu"),
    (
        "tensor_subclass",
        "through-own-class",
        in_forward("class A(torch.Tensor):  # <-\n    pass\nclass B(A):\n    pass"),
        "relu",
    ),
    ("tensor_subclass", "dynamic-base", in_forward("class Like(type(x)):  # <-\n    pass"), "relu"),
    (
        "tensor_subclass",
        "named-dynamic-base",
        in_forward("Base = type(x)\nclass Like(Base):  # <-\n    pass"),
        "relu",
    ),
    (
        "tensor_subclass",
        "torch-function",
        in_forward(
            "class Spy:\n    def __torch_function__(cls, func, types, args=(), kwargs=None):  # <-\n        return 0"
        ),
        "relu",
    ),
    ("tensor_subclass", "as-subclass", in_forward("y = x.as_subclass(torch.Tensor)  # <-"), "relu"),
    (
        "tensor_subclass",
        "make-subclass",
        in_forward("y = torch.Tensor._make_subclass(torch.Tensor, x)  # <-"),
        "relu",
    ),
    ("tensor_subclass", "overrides", in_forward("", "import torch.overrides  # <-"), "relu"),
    (
        "tensor_subclass",
        "dispatch-mode",
        in_forward("", "from torch.utils._python_dispatch import TorchDispatchMode  # <-"),
        "relu",
    ),
    # --- streams --------------------------------------------------------------------------------------
    ("streams", "stream", in_forward("side = torch.cuda.Stream()  # <-"), "relu"),
    (
        "streams",
        "stream-context",
        in_forward("with torch.cuda.stream(torch.cuda.Stream()):  # <-\n    pass"),
        "relu",
    ),
    ("streams", "from-import", in_forward("s = Stream()", "from torch.cuda import Stream  # <-"), "relu"),
    ("streams", "module-alias", in_forward("s = tc.Stream()  # <-", "import torch.cuda as tc"), "relu"),
    ("streams", "getattr-literal", in_forward("s = getattr(torch.cuda, 'Stream')()  # <-"), "relu"),
    ("streams", "event", in_forward("e = torch.cuda.Event(enable_timing=True)  # <-"), "relu"),
    ("streams", "graph", in_forward("g = torch.cuda.CUDAGraph()  # <-"), "relu"),
    (
        "streams",
        "graphed-callables",
        in_forward("f = torch.cuda.make_graphed_callables(print, (x,))  # <-"),
        "relu",
    ),
    ("streams", "sleep", in_forward("torch.cuda._sleep(1000)  # <-"), "relu"),
    ("streams", "generic-stream", in_forward("s = torch.Stream()  # <-"), "relu"),
    ("streams", "wait-stream", in_forward("torch.cuda.current_stream().wait_stream(s)  # <-"), "relu"),
    ("streams", "record-stream", in_forward("x.record_stream(s)  # <-"), "relu"),
    (
        "streams",
        "launch-stream-kwarg",
        RELU_KERNEL.replace("BLOCK=1024)", "BLOCK=1024, stream=0)  # <-"),
        "relu",
    ),
    # --- fallback -------------------------------------------------------------------------------------
    (
        "fallback",
        "except-exception",
        in_forward(
            "try:  # <-\n    "
            + LAUNCH.replace("\n", "\n    ")
            + "return out\nexcept Exception:\n    return torch.relu(x)"
        ),
        "relu",
    ),
    (
        "fallback",
        "bare-except-pass",
        in_forward("try:  # <-\n    " + LAUNCH.replace("\n", "\n    ") + "return out\nexcept:\n    pass"),
        "relu",
    ),
    (
        "fallback",
        "raise-then-return",
        in_forward(
            "try:  # <-\n    " + LAUNCH.replace("\n", "\n    ") + "return out\nexcept RuntimeError as e:\n"
            "    if x.numel() > 0:\n        return x\n    raise"
        ),
        "relu",
    ),
    (
        "fallback",
        "through-helpers",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n",
            "def _launch(x, out):\n    relu_kernel[(1,)](x, out, x.numel(), BLOCK=1024)\n\n\n"
            "def _run(x):\n    out = torch.empty_like(x)\n    _launch(x, out)\n    return out\n\n\n"
            "class ModelNew(torch.nn.Module):\n    def fast(self, x):\n        return _run(x)\n\n"
            "    def forward(self, x):\n        try:  # <-\n            return self.fast(x)\n"
            "        except (RuntimeError, ValueError):\n            return x.clamp(min=0)\n",
        ),
        "relu",
    ),
    (
        "fallback",
        "decorator",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n",
            "def safe(fn):\n    def wrapper(*args):\n        try:  # <-\n            return fn(*args)\n"
            "        except Exception:\n            return args[1]\n\n    return wrapper\n\n\n"
            "class ModelNew(torch.nn.Module):\n    @safe\n    def forward(self, x):\n",
        ),
        "relu",
    ),
    (
        "fallback",
        "retry-loop",
        in_forward(
            "out = torch.empty_like(x)\nfor block in (1024, 512):\n    try:  # <-\n"
            "        relu_kernel[(1,)](x, out, x.numel(), BLOCK=block)\n        break\n"
            "    except Exception:\n        continue"
        ),
        "relu",
    ),
    (
        "fallback",
        "finally-return",
        in_forward("try:  # <-\n    " + LAUNCH.replace("\n", "\n    ") + "pass\nfinally:\n    return x"),
        "relu",
    ),
    (
        "fallback",
        "suppress",
        in_forward(
            "out = x.clone()\nwith contextlib.suppress(Exception):  # <-\n"
            "    relu_kernel[(1,)](x, out, x.numel(), BLOCK=1024)",
            "import contextlib",
        ),
        "relu",
    ),
    (
        "fallback",
        "suppress-from-import",
        in_forward(
            "out = x.clone()\nwith quiet(RuntimeError):  # <-\n    relu_kernel[(1,)](x, out, x.numel(), BLOCK=1024)",
            "from contextlib import suppress as quiet",
        ),
        "relu",
    ),
    (
        "fallback",
        "own-context-manager",
        in_forward(
            "out = x.clone()\nwith Swallow():  # <-\n    relu_kernel[(1,)](x, out, x.numel(), BLOCK=1024)",
            "class Swallow:\n    def __enter__(self):\n        return self\n\n    def __exit__(self, *exc):\n"
            "        return True",
        ),
        "relu",
    ),
]

# (id, source, op): host_compute finds a use of `op` on the marked line (advice for torch_compute).
HOST_COMPUTE = [
    ("torch-relu", in_forward("return torch.relu(x)  # <-"), "relu"),
    ("functional-alias", in_forward("return G.relu(x)  # <-", "from torch.nn import functional as G"), "relu"),
    ("method-clamp", in_forward(LAUNCH + "return out + x.clamp(min=0) * 0  # <-"), "clamp"),
    ("inplace-method", in_forward("x.clamp_min_(0.0)  # <-"), "clamp_min"),
    ("where", in_forward("return torch.where(x > 0, x, 0.0)  # <-"), "where"),
    ("operators", in_forward("return x * (x > 0)  # <-"), "mul"),
    ("aten", in_forward("return torch.ops.aten.relu.default(x)  # <-"), "relu"),
    ("inline-layer", in_forward("return torch.nn.ReLU()(x)  # <-"), "relu"),
    ("function-as-value", in_forward("return list(map(torch.relu, [x]))[0]  # <-"), "relu"),
    ("literal-getattr", in_forward("return getattr(torch, 'relu')(x)  # <-"), "relu"),
    ("alias-of-op", in_forward("return act(x)  # <-", "act = torch.relu"), "relu"),
    (
        "class-attribute",
        in_forward("return self.act(x)  # <-").replace(
            "class ModelNew(torch.nn.Module):\n", "class ModelNew(torch.nn.Module):\n    act = torch.relu\n\n"
        ),
        "relu",
    ),
    ("function-table", in_forward("return OPS['act'](x)  # <-", "OPS = {'act': torch.relu}"), "relu"),
    (
        "higher-order-helper",
        in_forward("return apply(torch.relu, x)", "def apply(fn, t):\n    return fn(t)  # <-"),
        "relu",
    ),
    ("methodcaller", in_forward("return operator.methodcaller('relu')(x)  # <-", "import operator"), "relu"),
    ("mm-for-matmul", in_forward("return torch.mm(x, x)  # <-"), "mm"),
    ("at-operator", in_forward("return x @ x  # <-"), "matmul"),
    ("einsum-for-bmm", in_forward("return torch.einsum('bij,bjk->bik', x, x)  # <-"), "einsum"),
    ("broadcast-sum-matmul", in_forward("return (x[:, :, None] * x[None]).sum(1)  # <-"), "sum"),
    ("max-for-softmax", in_forward("m = x.max(dim=-1, keepdim=True).values  # <-\nreturn m"), "max"),
    ("exp-for-softmax", in_forward("e = (x - 1).exp()  # <-\nreturn e"), "exp"),
    ("norm-for-normalize", in_forward("return x / x.norm(dim=-1, keepdim=True)  # <-"), "norm"),
    ("var-for-layernorm", in_forward("v = x.var(-1, keepdim=True)  # <-\nreturn v"), "var"),
    ("arith-for-fma", in_forward("return x * 2.0  # <-"), "mul"),
    (
        "layer-built-in-init",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n",
            "class ModelNew(torch.nn.Module):\n    def __init__(self, in_features, out_features):\n"
            "        super().__init__()\n        self.linear = torch.nn.Linear(in_features, out_features)\n\n"
            "    def forward(self, x):\n        return self.linear(x)  # <-\n",
        ),
        "linear",
    ),
    (
        "sequential-layers",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n",
            "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n\n"
            "    def forward(self, x):\n        for layer in self.body:\n            x = layer(x)  # <-\n",
        ),
        "linear",
    ),
    (
        "helper-function",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n",
            "def _finish(t):\n    return t.clamp(min=0)  # <-\n\n\nclass ModelNew(torch.nn.Module):\n",
        ).replace("        return out\n", "        return _finish(out)\n"),
        "clamp",
    ),
    (
        "hook-registered-in-init",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n",
            "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
            "        def fix(module, args, output):\n            return torch.relu(args[0])  # <-\n\n"
            "        self.register_forward_hook(fix)\n\n",
        ),
        "relu",
    ),
    (
        "lambda-hook-in-init",
        RELU_KERNEL.replace(
            "class ModelNew(torch.nn.Module):\n",
            "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_forward_hook(lambda m, args, out: torch.relu(args[0]))  # <-\n\n",
        ),
        "relu",
    ),
]

# (id, source, problem): the precision scan's advice names the marked line.
PRECISION_ADVICE = [
    ("half-method", in_forward("x = x.half()  # <-"), "relu"),
    ("bfloat16-method", in_forward("x = x.bfloat16()  # <-"), "relu"),
    ("to-float16", in_forward("x = x.to(torch.float16)  # <-"), "relu"),
    ("dtype-kwarg", in_forward("buf = torch.empty_like(x, dtype=torch.bfloat16)  # <-"), "relu"),
    ("dtype-alias", in_forward("buf = torch.empty_like(x, dtype=low)", "from torch import half as low  # <-"), "relu"),
    ("autocast", in_forward("with torch.autocast('cuda'):  # <-\n    pass"), "relu"),
    (
        "jit-cast",
        with_kernel_body("v = tl.load(a_ptr + offs).to(tl.float16)  # <-\ntl.store(c_ptr + offs, v)"),
        "matmul",
    ),
    (
        "jit-fp8",
        with_kernel_body("v = tl.load(a_ptr + offs).to(tl.float8e5)  # <-\ntl.store(c_ptr + offs, v)"),
        "matmul_fp16",
    ),
    (
        "dot-tf32",
        with_kernel_body(
            "a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
            "tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, a, input_precision='tf32'))  # <-"
        ),
        "matmul",
    ),
    (
        "dot-default",
        with_kernel_body(
            "a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
            "tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, a))  # <-"
        ),
        "matmul",
    ),
    (
        "dot-allow-tf32",
        with_kernel_body(
            "a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
            "tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, a, allow_tf32=True))  # <-"
        ),
        "matmul",
    ),
    ("matmul-precision", in_forward("torch.set_float32_matmul_precision('high')  # <-"), "matmul"),
    ("tf32-switch-by-name", in_forward("setattr(torch.backends.cuda.matmul, 'allow_tf32', True)  # <-"), "matmul"),
    ("bit-reinterpret", in_forward("y = x.view(torch.float16)  # <-"), "relu"),
    ("legacy-type", in_forward("y = x.type(torch.HalfTensor)  # <-"), "relu"),
    ("tf32-switch-read", in_forward("flag = torch.backends.cudnn.allow_tf32  # <-"), "matmul"),
]


@pytest.mark.parametrize(
    ("check", "source", "problem"), [pytest.param(c, s, p, id=f"{c}-{i}") for c, i, s, p in HOSTILE]
)
def test_hostile_snippet_fails_its_check_on_the_marked_line(host, check, source, problem):
    verdict = verdicts(host, source, problem)[check]
    line = marked_line(source)
    assert not verdict.passed, f"{check} let this through:\n{textwrap.dedent(source)}"
    assert verdict.line == line, (verdict.line, line, verdict.reason)
    assert verdict.reason.startswith(f"line {line}: `"), verdict.reason
    assert " — " in verdict.reason and "; " in verdict.reason, "the reason names the evidence, the rule and a fix"


@pytest.mark.parametrize(("source", "op"), [pytest.param(s, op, id=i) for i, s, op in HOST_COMPUTE])
def test_host_compute_finds_torch_work_in_every_spelling_on_the_marked_line(source, op):
    """torch_compute quotes these lines beside its measure: an evasive spelling must not hide where torch works."""
    uses = host_uses(source)
    assert (marked_line(source), op) in uses, (marked_line(source), op, sorted(uses))


@pytest.mark.parametrize(("source", "problem"), [pytest.param(s, p, id=i) for i, s, p in PRECISION_ADVICE])
def test_precision_advice_names_the_marked_line(source, problem):
    """precision quotes these lines beside the measured class: each spelling of a downcast or TF32 is found."""
    found = source_findings(textwrap.dedent(source), load_problem(problem).source)
    line = marked_line(source)
    at_line = [f for f in found if f.line == line]
    assert at_line, (line, [f.text() for f in found])
    assert all(f.code and f.rule and f.fix for f in at_line), "advice names the code, the rule and a fix"


# --- honest code -----------------------------------------------------------------------------------------

AUTOTUNED = """
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4)],
    key=["n"],
)
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        flat = input.contiguous().view(-1)
        out = torch.empty_like(flat)
        n = flat.numel()
        relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](flat, out, n)
        return out.view_as(input)
"""

TWO_KERNELS = """
import torch
import triton
import triton.language as tl
from triton import cdiv, next_power_of_2


@triton.jit
def row_max_kernel(x_ptr, m_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
    tl.store(m_ptr + row, tl.max(x, axis=0))


@triton.jit
def normalise_kernel(x_ptr, m_ptr, out_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
    e = tl.exp(x - tl.load(m_ptr + row))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < N)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        row_max = torch.empty(rows, device=x.device, dtype=x.dtype)
        out = torch.empty_like(x)
        block = next_power_of_2(cols)
        row_max_kernel[(rows,)](x, row_max, cols, x.stride(0), BLOCK_N=block)
        normalise_kernel[(rows,)](x, row_max, out, cols, x.stride(0), BLOCK_N=block)
        assert cdiv(cols, block) == 1, "one block per row"
        return out
"""

HELPERS_AND_RERAISE = """
import math

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _scaled_add(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y + z, mask=mask)


def _launch(x, y, z):
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK),)
    _scaled_add[grid](x, y, z, out, n, BLOCK=BLOCK)
    return out


def _check_shapes(*tensors):
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"shapes differ: {shapes}")


class ModelNew(torch.nn.Module):
    def _run(self, x, y, z):
        return _launch(x.contiguous(), y.contiguous(), z.contiguous())

    def forward(self, x, y, z):
        _check_shapes(x, y, z)
        blocks = math.ceil(x.numel() / BLOCK)
        try:
            out = self._run(x, y, z)
        except RuntimeError as exc:
            raise RuntimeError(f"fma kernel failed on {blocks} blocks") from exc
        return out
"""

LINEAR_WITH_NN_ALIAS = """
import torch
import triton
import triton.language as tl
from torch import nn


@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def linear_relu_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swn, swk, som, son,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * sxm + ks[None, :] * sxk, mask=(rm[:, None] < M) & (ks[None, :] < K), other=0)
        b = tl.load(w_ptr + ks[:, None] * swk + rn[None, :] * swn, mask=(ks[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, tl.maximum(acc, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, bias = self.linear.weight, self.linear.bias
        m, k = x.shape
        n = w.shape[0]
        out = x.new_empty((m, n))
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
        with torch.cuda.device(x.device) if x.is_cuda else torch.no_grad():
            linear_relu_kernel[grid](
                x, w, bias, out, m, n, k, *x.stride(), *w.stride(), *out.stride(),
                BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
            )
        return out
"""

DTYPE_TABLE_AND_AUTOGRAD = """
import torch
import triton
import triton.language as tl

_TL_DTYPES = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, OUT_DTYPE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0).to(OUT_DTYPE), mask=mask)


class _Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        block = 512 if x.dtype in (torch.float16, torch.bfloat16) else 1024
        relu_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block, OUT_DTYPE=_TL_DTYPES[x.dtype])
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return _Relu.apply(x.contiguous())
"""

KERNEL_HOLDER_AND_REFERENCE_COPY = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """The reference, copied for local testing; ModelNew does not use it."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class _Launcher:
    def __init__(self, block):
        self.block = block
        self.kernel = relu_kernel

    def __call__(self, x):
        out = torch.empty_like(x)
        self.kernel[(triton.cdiv(x.numel(), self.block),)](x, out, x.numel(), BLOCK=self.block)
        return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.launch = _Launcher(1024)

    def forward(self, x):
        if x.numel() == 0:
            return x.clone()
        return self.launch(x.contiguous()).reshape(x.shape)


def get_inputs():
    return [torch.randn(16, 16)]


if __name__ == "__main__":
    x = get_inputs()[0]
    print(torch.allclose(ModelNew()(x), Model()(x)))
'''

FP16_MATMUL = """
import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    k = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        a = tl.load(a_ptr + r[:, None] * K + (k0 + k)[None, :])
        b = tl.load(b_ptr + (k0 + k)[:, None] * N + c[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + r[:, None] * N + c[None, :], acc.to(tl.float16))


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), device=a.device, dtype=torch.float16)
        mm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](a, b, c, m, n, k, BLOCK=16)
        return c
"""

TF32_DOT = """
import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    k = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        a = tl.load(a_ptr + r[:, None] * K + (k0 + k)[None, :])
        b = tl.load(b_ptr + (k0 + k)[:, None] * N + c[None, :])
        acc += tl.dot(a, b, input_precision="tf32")
    tl.store(c_ptr + r[:, None] * N + c[None, :], acc)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        c = a.new_empty((m, n))
        mm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](a, b, c, m, n, k, BLOCK=16)
        return c
"""

JIT_BY_CALL = RELU_KERNEL.replace("@triton.jit\n", "").replace(
    "\n\nclass ModelNew",
    "\n\nrelu_kernel = triton.jit(relu_kernel)  # unsloth's rope kernel is made so\n\n\nclass ModelNew",
)

HONEST = {
    "relu-kernel": (RELU_KERNEL, "relu"),
    "jit-by-call": (JIT_BY_CALL, "relu"),
    "autotuned": (AUTOTUNED, "relu"),
    "two-kernels": (TWO_KERNELS, "softmax"),
    "helpers-and-reraise": (HELPERS_AND_RERAISE, "fused_multiply_add"),
    "linear-nn-alias": (LINEAR_WITH_NN_ALIAS, "linear_bias_relu"),
    "dtype-table-autograd": (DTYPE_TABLE_AND_AUTOGRAD, "relu"),
    "launcher-and-reference-copy": (KERNEL_HOLDER_AND_REFERENCE_COPY, "relu"),
    "fp16-matmul": (FP16_MATMUL, "matmul_fp16"),
    "tf32-dot": (TF32_DOT, "matmul"),
}


HONEST_FORWARD_LINES = {
    "dtype-guard": "if x.dtype == torch.float16:\n    raise TypeError('float32 only')",
    "synchronize": "torch.cuda.synchronize()",
    "device-properties": "sms = torch.cuda.get_device_properties(0).multi_processor_count if x.is_cuda else 1",
    "shapes-and-strides": "rows, cols = x.shape\nstride = x.stride(0)\nblocks = (rows * cols + 1023) // 1024",
    "views": "y = x.contiguous().view(-1).unsqueeze(0).reshape(x.shape).permute(*range(x.dim()))",
    "allocation": "buf = torch.zeros(4, device=x.device, dtype=x.dtype)\nidx = torch.arange(4, device=x.device)",
    "reraise": "try:\n    n = x.numel()\nexcept AttributeError as e:\n    raise TypeError('need a tensor') from e",
    "local-shadows-builtin": "input = x\ncompile = input.numel()",
    # warnings silenced around a call, and a warning of its own: what production code does with `warnings`
    "warnings-silenced": "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n"
    "    n = x.numel()\nwith warnings.catch_warnings(record=False):\n    pass\n"
    "warnings.warn('copying x', stacklevel=2)",
    "logger": "import logging\nlogging.getLogger(__name__).debug('relu on %s', x.shape)",
    # Liger-Kernel's SwiGLU picks a path for sharded tensors so: a type test starts no process group
    "dtensor-type-test": "if isinstance(x, torch.distributed.tensor.DTensor) or torch.distributed.is_initialized():\n"
    "    x = torch.distributed.tensor.DTensor.from_local(\n"
    "        torch.distributed.tensor.distribute_tensor(x, x.device_mesh, x.placements), x.device_mesh\n"
    "    )",
}


@pytest.mark.parametrize("name", sorted(HONEST_FORWARD_LINES))
def test_honest_host_code_in_forward_passes(host, name):
    """Glue passes every static check, and neither advice scan points at it."""
    source = in_forward(HONEST_FORWARD_LINES[name])
    failed = {n: v.reason for n, v in verdicts(host, source).items() if not v.passed}
    assert not failed, failed
    assert not host_uses(source), "torch_compute's advice would point at glue"
    assert not precision_lines(source, "relu"), "precision's advice would point at glue"


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_snippets_pass_every_static_check(host, name):
    source, problem = HONEST[name]
    failed = {n: v.reason for n, v in verdicts(host, source, problem).items() if not v.passed}
    assert not failed, failed
    assert not host_uses(source), sorted(host_uses(source))
    findings = source_findings(textwrap.dedent(source), load_problem(problem).source)
    if name == "tf32-dot":  # honest under the default policy 'tf32': the advice explains the class it reaches
        assert findings and all("tf32" in f.code + f.rule for f in findings), [f.text() for f in findings]
    else:
        assert not findings, [f.text() for f in findings]


def test_every_bundled_solution_passes_every_static_check(host):
    """...with no reason given, and no advice from either source scan: a bundled solution is the honest model."""
    solved = sorted(p.stem for p in SOLUTIONS_DIR.glob("*.py"))
    assert len(solved) >= 25
    failed = {}
    for name in solved:
        problem = load_problem(name)
        for check, verdict in verdicts(host, problem.solution, name).items():
            if not verdict.passed or verdict.reason:
                failed[(name, check)] = verdict.reason
        if uses := host_uses(problem.solution):
            failed[(name, "host_compute")] = sorted(uses)
        if lines := precision_lines(problem.solution, name):
            failed[(name, "precision advice")] = sorted(lines)
    assert not failed, failed


def test_builtin_names_and_argument_shadowing_are_not_builtins(host):
    source = in_forward(
        "def local(input, open=None):\n    return input\ny = local(x)\ncompile = 3\nvalue = compile + 1"
    ).replace("def forward(self, x):", "def forward(self, x, input=None):")
    assert verdicts(host, source)["forbidden"].passed, verdicts(host, source)["forbidden"].reason
    shadowed_default = in_forward("def f(reader=open):  # <-\n    return reader")
    verdict = verdicts(host, shadowed_default)["forbidden"]
    assert not verdict.passed and verdict.line == marked_line(shadowed_default)


# --- options and configuration ---------------------------------------------------------------------------


UNUSED_IMPORTS = {
    # tutorial 06's header: a name bound and never read gives nothing
    "os": "import os",
    "os-alias-and-from": "import os as o\nfrom os import path, system",
    "stdlib-escapes": "import subprocess\nimport sys\nimport ctypes\nimport importlib\nimport pickle as pk",
    "deleted": "import gc\ndel gc",
    "torch-parts": "import torch.distributed as dist\nimport torch.utils.cpp_extension\nfrom torch.library import impl",
    "in-a-function": "def helper():\n    import threading\n    return 1",
}


@pytest.mark.parametrize("name", sorted(UNUSED_IMPORTS))
def test_unused_forbidden_imports_pass(host, name):
    """Only the use of a forbidden module is refused (its uses are the HOSTILE cases above)."""
    source = in_forward("", UNUSED_IMPORTS[name])
    failed = {n: v.reason for n, v in verdicts(host, source).items() if not v.passed}
    assert not failed, failed


READ_ONLY_LOOKUPS = {
    # tutorial 02's habit: a setting chosen under the interpreter
    "environ-get": ("import os", "interpret = os.environ.get('TRITON_INTERPRET', '0') == '1'"),
    "getenv": ("from os import getenv", "debug = getenv('TRITON_DEBUG', default='0')"),
    # Liger-Kernel's ops/utils.py: `compare_version` through importlib and packaging
    "import-module-literal": ("import importlib", "t = importlib.import_module('triton')\nv = t.__version__"),
    "import-module-from": ("from importlib import import_module", "m = import_module('triton.language')"),
    "compare-version": (
        "import importlib\nimport operator\nfrom packaging.version import Version\n\n\n"
        "def compare_version(package, op, target):\n"
        "    try:\n        pkg = importlib.import_module(package)\n    except ImportError:\n        return False\n"
        "    return op(Version(pkg.__version__), Version(target))\n\n\n"
        "NEW = compare_version('triton', operator.ge, '3.0.0')",
        "",
    ),
    "metadata-version": (
        "import importlib.metadata\nfrom importlib.metadata import PackageNotFoundError, version",
        "try:\n    v = importlib.metadata.version('triton') + version('torch')\n"
        "except PackageNotFoundError:\n    v = ''",
    ),
}


@pytest.mark.parametrize("name", sorted(READ_ONLY_LOOKUPS))
def test_read_only_lookups_pass(host, name):
    """The read-only uses of `os` and `importlib` that public files make (their other uses are HOSTILE above)."""
    before, code = READ_ONLY_LOOKUPS[name]
    source = in_forward(code, before)
    failed = {n: v.reason for n, v in verdicts(host, source).items() if not v.passed}
    assert not failed, failed


LIBRARY_SETTINGS = frozenset(
    "PATH LANG LC_ALL SYSTEMROOT HOME TMPDIR PYTHONPATH PYTHONDONTWRITEBYTECODE PYTHONHASHSEED PYTHONUNBUFFERED "
    "OMP_NUM_THREADS MKL_NUM_THREADS TRITON_CACHE_DIR TRITON_INTERPRET TRITON_PTXAS_PATH THP_MEM_ALLOC_ENABLE "
    "LD_LIBRARY_PATH CUDA_HOME CUDA_PATH NVIDIA_DRIVER_CAPABILITIES CC".split()
)


def test_a_workers_environment_is_library_settings_and_the_judges_own_names():
    """`os.environ.get("NAME")` is allowed for every name but the judge's own (`forbidden.JUDGE_ENVIRONMENT`): a
    variable the judge sets for itself and not named so would be read by candidates.  Name it `TRITONGYM_...`."""
    from tritongym.core import timeline
    from tritongym.core.sandbox.fork_server import gpu_env, worker_env
    from tritongym.core.worker import frames, lifeline, timing_flag
    from tritongym.plugins.checks.forbidden import JUDGE_ENVIRONMENT

    for env in (worker_env("/tmp/x", {}), gpu_env("/tmp/x", {})):
        assert {k for k in env if not k.startswith(JUDGE_ENVIRONMENT)} <= LIBRARY_SETTINGS, sorted(env)
    for name in (timing_flag.ENV, lifeline.ENV, frames.PROFILER_WARM_UP_ENV, timeline.ENV):
        assert name.startswith(JUDGE_ENVIRONMENT), name


def test_forbidden_allow_and_extra_modules(host):
    uses_os_and_json = in_forward("d = json.dumps([os.sep])", "import os\nimport json")
    assert not verdicts(host, uses_os_and_json)["forbidden"].passed
    allowed = verdicts(host, uses_os_and_json, options={"forbidden": {"allow_modules": ["os"]}})["forbidden"]
    assert allowed.passed, allowed.reason
    extra = verdicts(
        host, uses_os_and_json, options={"forbidden": {"allow_modules": ["os"], "extra_modules": ["json"]}}
    )
    assert not extra["forbidden"].passed and "`json.dumps`" in extra["forbidden"].reason
    # torch's op registry, by what it gives: the reference's own ops replaced, and the way out of it
    registry = verdicts(host, in_forward("lib = Library('aten', 'IMPL')", "from torch.library import Library"))
    registry = registry["forbidden"]
    assert not registry.passed and "op registry" in registry.reason and "kernel directly" in registry.reason
    # but for PyTorch's own wrapper of a Triton kernel as an operator (`TRITON_OPS`): its body is traced as any forward
    wrapper = in_forward("", "from torch.library import triton_op, wrap_triton, custom_op")
    assert verdicts(host, wrapper)["forbidden"].passed
    assert verdicts(host, in_forward("k = torch.library.wrap_triton(x)"))["forbidden"].passed
    # allowing a package does not allow a more specifically forbidden part of it
    cpp = in_forward("m = load_inline('m', 's')", "from torch.utils.cpp_extension import load_inline")
    still = verdicts(host, cpp, options={"forbidden": {"allow_modules": ["torch.utils"]}})["forbidden"]
    assert not still.passed


@pytest.mark.parametrize(
    "checks",
    [
        {"torch_compute": {"policy": "lenient"}},
        {"forbidden": {"allow_modules": ["not a module"]}},
        {"forbidden": {"forbid": ["os"]}},
        {"streams": {"strict": True}},
    ],
)
def test_bad_check_options_are_rejected_before_any_work(checks):
    with pytest.raises(ConfigError) as info:
        Evaluator(EvalConfig(backend="triton-cpu", checks=checks), host=PluginHost(load_entry_points=False))
    assert next(iter(checks)) in str(info.value)


@pytest.mark.parametrize(("folded", "into"), [("torch_ops", "torch_compute"), ("dot_precision", "precision")])
def test_a_folded_check_is_refused_naming_where_it_went(folded, into):
    """A config of an earlier release that still names a folded check learns which check took it over."""
    with pytest.raises(ConfigError) as info:
        Evaluator(EvalConfig(backend="triton-cpu", checks={folded: {}}), host=PluginHost(load_entry_points=False))
    assert folded in str(info.value) and f"'{into}'" in str(info.value)


# --- through the evaluator -------------------------------------------------------------------------------


def test_static_rejection_happens_before_any_worker(relu_problem):
    config = EvalConfig(backend="triton-cpu", checks={name: {} for name in STATIC})
    evaluator = Evaluator(config, host=PluginHost(load_entry_points=False))
    hostile = in_forward("with torch.cuda.stream(torch.cuda.Stream()):\n    pass")
    early, static = evaluator._before_worker(Candidate(source=hostile), relu_problem)
    assert early is not None and early.status == Status.rejected
    assert "rejected by check 'streams'" in early.message
    assert {v.name for v in static if not v.passed} == {"streams"}
    honest, static = evaluator._before_worker(Candidate(source=RELU_KERNEL), relu_problem)
    assert honest is None and all(v.passed for v in static)


def test_hostile_candidate_is_rejected_end_to_end_on_the_cpu_backend(relu_problem):
    evaluator = Evaluator(EvalConfig(backend="triton-cpu", trials=2), host=PluginHost(load_entry_points=False))
    hostile = in_forward("torch.allclose = lambda *a, **k: True  # <-")
    result = evaluator.evaluate(hostile, relu_problem)
    assert result.status == Status.rejected, result.message
    assert "monkeypatch" in result.message and f"(line {marked_line(hostile)})" in result.message
    assert result.trials == 0 and not result.correct and result.reward.total == 0
    assert {c.name for c in result.checks} >= set(STATIC)


def test_torch_work_in_the_forward_is_weighed_at_run_time_on_the_cpu_backend(relu_problem):
    """No pattern refuses torch in host code any more: a passthrough is caught by what it does (its kernels
    do not matter), lazy work passes under the default policy with its share and line named, and fails under
    `strict`; glue passes even `strict`."""
    host = PluginHost(load_entry_points=False)
    practical = Evaluator(EvalConfig(backend="triton-cpu", trials=2, shapes="off"), host=host)
    passthrough = practical.evaluate(in_forward("return torch.relu(x)"), relu_problem)
    failed = {c.name for c in passthrough.checks if not c.passed}
    assert passthrough.status == Status.hacked and "ghost" in failed, passthrough.message
    # a full elementwise torch pass over the input before the kernel: the reference's whole work, by measure
    lazy = in_forward("x = torch.clamp(x, min=-1.0e30)  # <-")
    result = practical.evaluate(lazy, relu_problem)
    weighed = next(c for c in result.checks if c.name == "torch_compute")
    assert result.status == Status.ok and weighed.passed, result.message
    assert weighed.reason.startswith("lazy:") and f"line {marked_line(lazy)} `clamp`" in weighed.reason, weighed.reason

    strict = Evaluator(
        EvalConfig(backend="triton-cpu", trials=2, shapes="off", enable_checks={"torch_compute": {"policy": "strict"}}),
        host=host,
    )
    result = strict.evaluate(lazy, relu_problem)
    assert result.status == Status.hacked, result.message
    assert {c.name for c in result.checks if not c.passed} == {"torch_compute"}, result.message
    glue = strict.evaluate(in_forward("scale = torch.exp(torch.zeros(1))"), relu_problem)
    weighed = next(c for c in glue.checks if c.name == "torch_compute")
    assert glue.status == Status.ok and weighed.reason.startswith("glue:") and "exp" in weighed.reason, glue.message


def test_every_static_check_is_registered_with_a_doc(host):
    registered = {r.name: r for r in host.all() if r.kind == "check"}
    assert {n for n, r in registered.items() if r.cls.stage == "static"} == set(STATIC)
    for name in STATIC:
        assert name in registered and registered[name].doc, name
        assert registered[name].cls.stage == "static"
    # what the source shows of torch work and precision is advice now: these judge what ran
    assert all(registered[name].cls.stage == "runtime" for name in ("torch_compute", "precision"))
    assert not {"torch_ops", "dot_precision"} & set(registered)


# --- the shared scanner ----------------------------------------------------------------------------------


def test_scan_resolves_aliases_and_finds_launching_functions():
    source = textwrap.dedent(
        """
        import torch as T
        import triton
        from torch.nn import functional as F
        from torch import cuda

        c = cuda
        k2 = triton.jit(lambda: None)


        @triton.autotune(configs=[], key=[])
        @triton.jit
        def kern(x):
            pass


        tuned = kern


        def helper(x):
            tuned[(1,)](x)


        def outer(x):
            return helper(x)


        class ModelNew(T.nn.Module):
            def forward(self, x):
                self.s = c.Stream
                return outer(x), self.s, getattr(T, "cuda").Event, F.relu
        """
    )
    facts = scan(ast.parse(source))
    ret = [n for n in ast.walk(facts.tree) if isinstance(n, ast.Return)][-1].value
    assert [facts.resolve(e) for e in ret.elts[1:]] == [
        "torch.cuda.Stream",
        "torch.cuda.Event",
        "torch.nn.functional.relu",
    ]
    assert {"kern", "tuned", "k2"} <= facts.jit_names
    assert [launch.kernel for launch in facts.launches] == ["tuned"]
    assert {getattr(f, "name", "") for f in facts.launching} == {"helper", "outer", "forward"}
