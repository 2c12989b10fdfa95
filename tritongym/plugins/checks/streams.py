"""`streams`: no CUDA streams, events or graphs in a candidate.

The judge times the forward on the current stream.  Work launched on a side stream, deferred behind an
event, or replayed from a captured CUDA graph can escape the timed window or race the judge's
comparison; `torch.cuda._sleep` distorts timing outright.  A Triton kernel needs none of this: it is
launched on the current stream by default.  So any use (a call, a reference, an import) of a stream, event
or graph API under `torch.cuda` / `torch.accelerator` / `torch.xpu` / `torch.mps`, of `torch.Stream` /
`torch.Event`, of triton's stream or CUDA-graph helpers, a `.wait_stream` / `.wait_event` /
`.record_event` / `.record_stream` call on anything, and a `stream=` keyword on a kernel launch are refused.
"""

from __future__ import annotations

import ast
import re

from tritongym import hookimpl
from tritongym.core.interfaces import StaticCheck
from tritongym.core.models import Candidate, CheckVerdict, Problem
from tritongym.core.scan.ast_scan import Finding, finding, scan, verdict

_DEVICE_NAMESPACES = ("torch.cuda.", "torch.accelerator.", "torch.xpu.", "torch.mps.", "torch.cpu.")
_STREAMY = re.compile(r"stream|graph|event|_sleep", re.IGNORECASE)
_TOP_LEVEL = frozenset({"torch.Stream", "torch.Event", "torch.StreamContext"})
_CURRENT = frozenset({"current_stream", "default_stream"})
"""Naming the current stream launches nothing elsewhere; waiting on or recording into it is caught below."""
_METHODS = frozenset({"wait_stream", "wait_event", "record_event", "record_stream"})
_RULE = "CUDA streams, events and graphs are not allowed in a candidate (work off the current stream escapes timing)"
_FIX = "launch every kernel on the current stream and let the judge synchronize"


def is_stream_api(path: str) -> bool:
    """`torch.cuda.Stream`, `torch.cuda.graphs.make_graphed_callables`, `triton.testing.do_bench_cudagraph`…"""
    if path in _TOP_LEVEL or any(path.startswith(t + ".") for t in _TOP_LEVEL):
        return True
    if path.startswith(_DEVICE_NAMESPACES):
        parts = path.split(".")[2:]
        return parts[-1] not in _CURRENT and any(_STREAMY.search(part) for part in parts)
    if path.startswith("triton."):
        return any(_STREAMY.search(part) for part in path.split(".")[1:])
    return False


class StreamsCheck(StaticCheck):
    """No CUDA streams, events, graphs or stream= launches."""

    name = "streams"
    priority = 30

    def check_source(self, tree: ast.Module, candidate: Candidate, problem: Problem) -> CheckVerdict:
        facts = scan(tree)
        found: list[Finding] = []
        for node in facts.nodes:
            if isinstance(node, ast.Name | ast.Attribute | ast.Call):
                parent = facts.parents.get(node)
                if isinstance(parent, ast.Attribute) and parent.value is node:
                    continue  # the outer chain is judged (and reported) instead
                path = facts.resolve(node)
                if path is not None and is_stream_api(path):
                    found.append(finding(node, f"`{path}`: {_RULE}", _FIX))
            if isinstance(node, ast.Import | ast.ImportFrom):
                module = node.module if isinstance(node, ast.ImportFrom) else None
                for alias in node.names:
                    path = f"{module}.{alias.name}" if module else alias.name
                    if is_stream_api(path):
                        found.append(finding(node, f"`{path}`: {_RULE}", _FIX))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS:
                found.append(finding(node, f"`.{node.func.attr}(...)`: {_RULE}", _FIX))
        for launch in facts.launches:
            if launch.call is not None and any(k.arg == "stream" for k in launch.call.keywords):
                found.append(finding(launch.call, f"a `stream=` launch argument: {_RULE}", _FIX))
        return verdict(self.name, found)


@hookimpl
def register_checks(register):
    register(StreamsCheck)
